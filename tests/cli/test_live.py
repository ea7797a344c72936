"""The live view's settled lines: into a pipe or a log they are written as their text (rich draws only on a
terminal); the first line of a long tool result is found in its head."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from tether.cli._console import Output  # pyright: ignore[reportPrivateUsage]
from tether.cli._format import first_line  # pyright: ignore[reportPrivateUsage]
from tether.cli._live import LiveView  # pyright: ignore[reportPrivateUsage]
from tether.session import PartUpdated, ToolPart
from tether.storable import printable

SESSION = "ses_live"


def _part(call: str, path: str, *, state: str = "completed", error: str | None = None) -> PartUpdated:
    return PartUpdated(
        ToolPart(
            id=f"prt_{call}",
            session_id=SESSION,
            message_id="msg_1",
            call_id=call,
            tool="read",
            state=state,  # type: ignore[arg-type]
            input={"path": path},
            content=(),
            error=error,
            error_kind="tool" if error else None,
            started=1_000,
            ended=1_003,
        )
    )


EVENTS = [
    _part("c1", "notes.txt"),
    _part("c2", "日本語/ファイル.txt"),
    _part("c3", "a\x1b[31mred\x07.txt", state="error", error="File not found: somewhere\nsecond line"),
    _part("c4", "x" * 300),
    _part("c5", "with\ttab.txt"),
]


def _printed(console: Console, out: io.StringIO, events: list[PartUpdated]) -> str:
    view = LiveView(Output(console=console), SESSION)
    for event in events:
        view.on_event(event)
    view.flush_lines()
    return out.getvalue()


LINES = [
    "✓ read notes.txt  3ms",
    "✓ read 日本語/ファイル.txt  3ms",
    "✗ read a\\x1b[31mred\\x07.txt  3ms  File not found: somewhere",  # control characters shown as escapes
    f"✓ read {'x' * 79}…  3ms",
    "✓ read with\ttab.txt  3ms",  # a pipe gets the characters: rich would expand the tab
]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_into_a_pipe_each_settled_line_is_written_as_its_text(count: int) -> None:
    out = io.StringIO()
    printed = _printed(Console(file=out, highlight=False, soft_wrap=True, width=200), out, EVENTS[:count])
    assert printed.splitlines() == LINES[:count]
    assert "\x1b" not in printed and "\x07" not in printed


def test_on_a_terminal_the_settled_lines_are_drawn_by_rich() -> None:
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, color_system="standard", width=200, highlight=False)
    printed = _printed(terminal, out, EVENTS)
    assert "\x1b[1;32m✓ \x1b[0m" in printed  # styled
    assert "\t" not in printed  # rich expands the tab to the next stop


def test_a_frame_is_one_write() -> None:
    class Writes(io.StringIO):
        calls = 0

        def write(self, s: str) -> int:
            Writes.calls += 1
            return super().write(s)

    out = Writes()
    printed = _printed(Console(file=out, highlight=False, soft_wrap=True, width=200), out, EVENTS[:4])
    assert Writes.calls == 1 and printed.count("\n") == 4


def _first_line_of_all(text: str, width: int = 100) -> str:
    """What ``first_line`` means: the first non-empty line of every line (it looks at a long text's head first)."""
    for line in text.splitlines():
        if line.strip():
            line = printable(line.strip())
            return line if len(line) <= width else line[: width - 1] + "…"
    return ""


@given(
    st.lists(
        st.sampled_from(["a", "b c", " ", "\n", "\r", "\r\n", "\x0b", "\u2028", "\t", "x" * 120, "\x1b"]),
        max_size=40,
    )
)
def test_first_line_of_a_long_text_is_the_first_line_of_all_of_it(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert first_line(text) == _first_line_of_all(text)
    assert first_line(text, 10) == _first_line_of_all(text, 10)
