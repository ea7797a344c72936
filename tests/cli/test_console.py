"""The CLI's output streams (``_console``): a terminal is a TTY, by one rule that rich is told too; anywhere else a
turn's lines are written as their text."""

from __future__ import annotations

import io
import sys

import pytest

from tether.cli._console import Output, is_terminal  # pyright: ignore[reportPrivateUsage]


def test_a_stream_that_is_not_a_tty_or_is_closed_is_not_a_terminal() -> None:
    stream = io.StringIO()
    assert not is_terminal(stream)
    stream.close()
    assert not is_terminal(stream)  # isatty() raises on a closed stream


def test_into_a_pipe_a_line_is_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TTY_COMPATIBLE", "")
    output = Output()
    output.line(("✓ ", "green bold"), ("read", "bold"), (" notes.txt", ""))
    assert out.getvalue() == "✓ read notes.txt\n"
    # what only rich prints (a table, a rule) is not drawn for a terminal either: rich is told it is a pipe, even
    # with FORCE_COLOR set after the verdict (rich alone would read it)
    monkeypatch.setenv("FORCE_COLOR", "1")
    console = output.rich
    assert not console.is_terminal and console.color_system is None
    console.print("[bold]plain[/bold]")
    assert out.getvalue().endswith("plain\n")


@pytest.mark.parametrize(
    ("force_color", "compatible", "drawn"),
    [("1", None, True), ("", None, False), (None, "1", True), ("1", "0", False), (None, None, False)],
)
def test_force_color_and_tty_compatible_decide_for_a_stream_that_is_not_a_tty(
    monkeypatch: pytest.MonkeyPatch, force_color: str | None, compatible: str | None, drawn: bool
) -> None:
    # the conventions a CI log that renders colours relies on (https://force-color.org; rich's TTY_COMPATIBLE):
    # FORCE_COLOR=1 tether run | cat keeps its colours, as it did when rich decided alone
    for name, value in (("FORCE_COLOR", force_color), ("TTY_COMPATIBLE", compatible)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    output = Output()
    assert is_terminal(out) is drawn and output.is_terminal is drawn
    output.line(("ok", "green bold"))
    assert ("\x1b[" in out.getvalue()) is drawn
    assert out.getvalue().endswith("ok\n") if not drawn else "ok" in out.getvalue()
