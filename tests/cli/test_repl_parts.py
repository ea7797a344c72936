"""The interactive session's parts in process: the view (spinner, markdown, order), the history file, the turn line,
the session's cost from stored steps."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any

from rich.console import Console

from tether.cli._repl import _shown_error
from tether.cli._repl_input import HistoryFile
from tether.cli._repl_session import session_cost, turn_line
from tether.cli._repl_view import ReplView
from tether.cli._turn import TurnOutcome
from tether.config import Config
from tether.errors import StoreError, UsageError
from tether.llm import Usage
from tether.records._events import PartDelta, PartUpdated
from tether.records._model import TextPart, ToolPart
from tether.session import AssistantInfo

SESSION = "ses_1"


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100, color_system=None, highlight=False), out


def _rendered(console: Console, view: ReplView) -> str:
    with console.capture() as capture:
        console.print(view._render())  # pyright: ignore[reportPrivateUsage] (what the live region shows)
    return capture.get()


def _delta(part_id: str, text: str) -> PartDelta:
    return PartDelta(session_id=SESSION, message_id="msg_1", part_id=part_id, field="text", delta=text)


def _text(part_id: str, text: str, ended: int | None = 1) -> PartUpdated:
    return PartUpdated(
        part=TextPart(id=part_id, session_id=SESSION, message_id="msg_1", text=text, started=0, ended=ended)
    )


def _tool(state: Any, **extra: Any) -> PartUpdated:
    part = ToolPart(
        id="prt_t",
        session_id=SESSION,
        message_id="msg_1",
        call_id="call_1",
        tool="read",
        state=state,
        input={"path": "notes.txt"},
        started=0,
        **extra,
    )
    return PartUpdated(part=part)


def test_the_spinner_waits_for_the_model_then_shows_the_streaming_tail() -> None:
    console, _ = _console()
    view = ReplView(console, SESSION)
    assert "waiting for the model" in _rendered(console, view)
    view.on_event(_delta("prt_a", "line one\nline two\nline three\nline four\nline five\npartial"))
    shown = _rendered(console, view)
    assert "writing" in shown and "partial" in shown and "line five" in shown
    assert "line one" not in shown  # only the last lines
    view.on_event(_tool("running"))
    shown = _rendered(console, view)
    assert "read notes.txt" in shown and "writing" not in shown  # a running tool has its own spinner


def test_text_is_printed_as_markdown_when_its_block_ends() -> None:
    console, out = _console()
    view = ReplView(console, SESSION)
    view.on_event(_delta("prt_a", "# Title\n\n* **bold** item\n"))
    assert out.getvalue() == ""  # nothing before the block ends: half a block is not markdown yet
    view.on_event(_text("prt_a", "# Title\n\n* **bold** item\n"))
    printed = out.getvalue()
    assert "Title" in printed and "# Title" not in printed
    assert "bold item" in printed and "**" not in printed
    view.on_event(_text("prt_a", "# Title\n\n* **bold** item\n"))  # the same end again prints nothing more
    assert out.getvalue() == printed


def test_streamed_text_is_printed_before_a_tool_line_and_not_again_at_its_end() -> None:
    console, out = _console()
    view = ReplView(console, SESSION)
    view.on_event(_delta("prt_a", "Looking at the notes."))
    view.on_event(_tool("completed", ended=5))
    view.flush_lines()
    printed = out.getvalue()
    assert printed.index("Looking at the notes.") < printed.index("read notes.txt")
    view.on_event(_text("prt_a", "Looking at the notes. Done."))
    assert out.getvalue().count("Looking at the notes.") == 1
    assert "Done." in out.getvalue()


def test_whole_text_without_deltas_and_escapes_are_shown_not_obeyed() -> None:
    console, out = _console()
    view = ReplView(console, SESSION)
    view.on_event(_text("prt_b", "see [the docs](https://example.com) \x1b]0;pwned\x07 \u202eevil"))
    printed = out.getvalue()
    assert "\x1b]0;pwned" not in printed and "\\x1b]0;pwned" in printed
    assert "\u202e" not in printed
    assert "https://example.com" in printed  # the address is shown, not hidden behind a hyperlink
    view.on_event(_text("prt_c", "  \n"))  # blank text prints nothing
    assert out.getvalue() == printed


def test_other_sessions_and_unfinished_blocks_are_not_printed() -> None:
    console, out = _console()
    view = ReplView(console, SESSION)
    view.on_event(
        PartDelta(session_id="ses_other", message_id="m", part_id="p", field="text", delta="other\n")
    )
    view.on_event(_text("prt_a", "not yet", ended=None))
    assert out.getvalue() == ""
    view.flush_text()
    assert out.getvalue() == ""


def test_history_round_trip_is_private_and_multi_line(tmp_path: Path) -> None:
    path = tmp_path / "repl-history"
    history = HistoryFile(path)
    history.store_string("first")
    history.store_string("two\nlines")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(HistoryFile(path).load_history_strings()) == ["two\nlines", "first"]
    path.chmod(0o644)
    history.store_string("third")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # a loose mode is tightened at the next write


def test_history_never_follows_a_symlink_nor_reads_a_fifo(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    canary.write_text("+secret\n")
    link = tmp_path / "link"
    link.symlink_to(canary)
    history = HistoryFile(link)
    assert list(history.load_history_strings()) == []
    assert history.broken is not None and "cannot read" in history.broken
    history.store_string("typed")
    assert canary.read_text() == "+secret\n"
    writer = HistoryFile(link)
    writer.store_string("typed")
    assert writer.broken is not None and "cannot write" in writer.broken
    assert canary.read_text() == "+secret\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = HistoryFile(fifo)
    assert list(reader.load_history_strings()) == []  # returns at once: a planted FIFO cannot block the start
    assert reader.broken == f"{fifo} is not a regular file"
    fifo_writer = HistoryFile(tmp_path / "dir")
    (tmp_path / "dir").mkdir()
    fifo_writer.store_string("x")
    assert fifo_writer.broken is not None


def _outcome(**changes: Any) -> TurnOutcome:
    base: dict[str, Any] = {
        "code": 0,
        "stop": "done",
        "steps": 2,
        "calls": 1,
        "failed_calls": 0,
        "input_tokens": 1234,
        "output_tokens": 56,
        "seconds": 3.14,
    }
    return TurnOutcome(**{**base, **changes})


def test_the_turn_line_has_tokens_cost_and_session_total() -> None:
    line = turn_line(
        _outcome(cost=0.0123, usage=Usage(input_tokens=1234, cache_read_tokens=1000)), 0.0456
    ).plain
    assert (
        line
        == "── done · 2 steps · 1 tool call · 1,234 in (1,000 cached) / 56 out · $0.0123 (session $0.0456) · 3.1s"
    )
    unknown = turn_line(_outcome(steps=1, calls=2, failed_calls=1, stop="cancelled"), None).plain
    assert (
        unknown
        == "── cancelled (the session goes on) · 1 step · 2 tool calls (1 failed) · 1,234 in / 56 out · 3.1s"
    )
    assert turn_line(_outcome(error="provider down"), None).plain == "── failed: provider down"


def _step(model: str, usage: Usage | None) -> Any:
    class Stored:
        info = AssistantInfo(
            id="msg",
            session_id=SESSION,
            parent_id="msg_u",
            agent="build",
            model=model,
            created=0,
            usage=usage,
        )
        parts = ()

    return Stored()


def test_a_sessions_cost_prices_each_step_by_its_own_model() -> None:
    config = Config(data={"provider": {"work": {"models": {"big": {"cost": {"input": 10, "output": 10}}}}}})
    steps = [
        _step("anthropic/claude-sonnet-4-5", Usage(input_tokens=1_000_000)),
        _step("work/big", Usage(input_tokens=100_000, output_tokens=100_000)),
        _step("work/big", None),
    ]
    assert session_cost(steps, config) == 3.0 + 2.0
    assert session_cost([*steps, _step("ollama/qwen3:8b", Usage(input_tokens=5))], config) is None
    assert session_cost([], config) == 0.0


def test_history_reads_a_last_entry_without_a_newline_and_refuses_a_device(tmp_path: Path) -> None:
    path = tmp_path / "repl-history"
    path.write_text("\n# then\n+one\n+two")
    assert list(HistoryFile(path).load_history_strings()) == ["one\ntwo"]
    device = HistoryFile(Path("/dev/null"))
    device.store_string("typed")
    assert device.broken == "/dev/null is not a regular file"


def test_only_user_fixable_errors_are_shown_and_a_task_groups_wrapping_is_seen_through() -> None:
    wrapped = BaseExceptionGroup(
        "turn", [BaseExceptionGroup("inner", [UsageError("agent nobody does not exist")])]
    )
    shown = _shown_error(wrapped)
    assert isinstance(shown, UsageError) and shown.message == "agent nobody does not exist"
    assert _shown_error(StoreError("disk full")) is None  # nothing runs unrecorded: the session ends
    assert _shown_error(BaseExceptionGroup("two", [UsageError("a"), UsageError("b")])) is None
