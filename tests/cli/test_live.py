"""The live view's settled lines: into a pipe or a log they are written as plain text, exactly as rich prints them;
the first line of a long tool result is found in its head."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

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
    view = LiveView(console, SESSION)
    for event in events:
        view.on_event(event)
    view.flush_lines()
    return out.getvalue()


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5])
def test_plain_output_is_what_rich_prints(count: int) -> None:
    events = EVENTS[:count]
    out = io.StringIO()
    plain = _printed(Console(file=out, highlight=False, soft_wrap=True, width=200), out, events)
    # The same view on a recording console always goes through rich's render.
    recorded = io.StringIO()
    through_rich = _printed(
        Console(file=recorded, highlight=False, soft_wrap=True, width=200, record=True), recorded, events
    )
    assert plain == through_rich
    assert plain.count("✓ read") + plain.count("✗ read") == count
    assert "\x1b" not in plain and "\x07" not in plain  # control characters shown as escapes, never written


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
