"""The interactive session's live view: the run view, plus a spinner while the model works and markdown text.

:class:`ReplView` is :class:`~tether.cli._live.LiveView` (tool spinners, the bash tail, ✓/✗ lines, coalesced frames)
with two changes for a person reading along in a terminal:

* while no tool runs, the live region shows a spinner (``waiting for the model 2.1s``) and, once text streams, its
  last few lines: the screen never looks frozen while a step is in flight;
* the model's text is printed as markdown (rich) when its block ends, not line by line: markdown cannot be rendered
  from half a block; every heading left-aligned. Before a permission prompt or a tool's ✓ line, what has streamed
  so far is printed first, so the order on screen stays the order of events;
* what the person types meanwhile is not echoed into the live region: it is kept for the next prompt
  (:class:`~._typeahead.TypeAhead`, read every frame, paused while an approval prompt reads the terminal).

Model text is made :func:`~tether.storable.printable` before rich sees it (an ESC sequence in the model's text cannot
reach the terminal), and links are shown as text with their address (no terminal hyperlinks that hide where they go).
"""

from __future__ import annotations

import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import ClassVar

import anyio
from rich.console import Console, Group, JustifyMethod, RenderableType
from rich.markdown import Heading, Markdown, MarkdownElement
from rich.spinner import Spinner
from rich.text import Text

from ..records import TextPart, ToolPart
from ..storable import printable
from ._console import Output
from ._live import FRAME, LiveView
from ._toolview import TerminalSettings
from ._typeahead import TypeAhead

__all__ = ["ReplView", "markdown"]

_TAIL = 4
"""Lines of streaming text shown under the spinner."""


class _LeftHeading(Heading):
    """Every heading left-aligned: rich centres an H1, which in a scrollback of left-aligned lines reads as a
    banner cut from somewhere else."""

    LEVEL_ALIGN: ClassVar[dict[str, JustifyMethod]] = dict.fromkeys(
        ("h1", "h2", "h3", "h4", "h5", "h6"), "left"
    )


class _Markdown(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {**Markdown.elements, "heading_open": _LeftHeading}


def markdown(text: str) -> Markdown:
    """The model's ``text`` as rich markdown: control characters as visible escapes, links with their address,
    headings left-aligned."""
    return _Markdown(printable(text, lines=True), code_theme="ansi_dark", hyperlinks=False)


class ReplView(LiveView):
    """The live view of one turn in the interactive session (see the module docstring)."""

    def __init__(self, console: Console, session_id: str, settings: TerminalSettings | None = None) -> None:
        super().__init__(Output(console=console), session_id, settings)
        self.typed = TypeAhead()
        """What the person types while the turn runs: the next prompt's text (``_typeahead``)."""
        self._streams: dict[str, str] = {}  # text part id -> what has streamed (guarded by the lock)
        self._flushed: dict[str, int] = {}  # text part id -> characters already printed
        self._since = time.monotonic()

    def __enter__(self) -> ReplView:
        super().__enter__()
        if self._interactive:
            self.typed.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.typed.stop()
        super().__exit__(*exc)

    @contextmanager
    def paused(self) -> Generator[None]:
        """The live region stopped and the terminal in its normal mode while a prompt reads it."""
        with self.typed.paused(), super().paused():
            yield

    async def run(self) -> None:
        """Each frame: keep what was typed, print the settled lines (until cancelled)."""
        while True:
            await anyio.sleep(FRAME)
            self.typed.poll()
            self.flush_lines()

    def _delta(self, part_id: str, delta: str) -> None:
        with self._lock:
            self._streams[part_id] = self._streams.get(part_id, "") + delta

    def _text(self, part: TextPart) -> None:
        if part.ended is None or part.id in self._ended:
            return
        self._ended.add(part.id)
        with self._lock:
            streamed = self._streams.pop(part.id, "")
        text = part.text or streamed
        self._print_markdown(text[self._flushed.pop(part.id, 0) :])
        self._since = time.monotonic()

    def flush_text(self) -> None:
        """Print what has streamed of each open text block (before a prompt, a tool's line, or the turn's end)."""
        with self._lock:
            streams = list(self._streams.items())
        for part_id, text in streams:
            done = self._flushed.get(part_id, 0)
            if len(text) > done:
                self._flushed[part_id] = len(text)
                self._print_markdown(text[done:])

    def _print_markdown(self, text: str) -> None:
        if text.strip():
            self.flush_lines()
            self.console.rich.print(markdown(text))

    def _tool(self, part: ToolPart) -> None:
        super()._tool(part)
        if part.settled:
            self._since = time.monotonic()

    def _render(self) -> RenderableType:
        with self._lock:
            if self._running:
                busy = True
                tail: list[str] = []
            else:
                busy = False
                streaming = "".join(
                    text[self._flushed.get(part_id, 0) :] for part_id, text in self._streams.items()
                )
                tail = [line for line in streaming.splitlines() if line.strip()][-_TAIL:]
        if busy:
            return super()._render()
        width = max(20, self.console.rich.width - 4)
        rows: list[RenderableType] = [Text(printable(line)[:width], style="dim") for line in tail]
        label = "writing" if tail else "waiting for the model"
        rows.append(
            Spinner(
                "dots", Text(f"{label}  {time.monotonic() - self._since:.1f}s", style="dim"), style="cyan"
            )
        )
        return Group(*rows)
