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


def test_into_a_pipe_a_line_is_its_text_even_with_force_color(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    output = Output()
    output.line(("✓ ", "green bold"), ("read", "bold"), (" notes.txt", ""))
    assert out.getvalue() == "✓ read notes.txt\n"
    # what only rich prints (a table, a rule) is not drawn for a terminal either: rich is told it is a pipe
    console = output.rich
    assert not console.is_terminal and console.color_system is None
    console.print("[bold]plain[/bold]")
    assert out.getvalue().endswith("plain\n")
