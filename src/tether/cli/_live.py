"""The live view of a turn: text as it arrives, a spinner line per running tool call, a live bash tail, ✓/✗ lines,
and under a settled call what it did (an edit's diff, the tail of a command's output: ``_toolview``).

It subscribes to the bus (``message.part.delta``, ``message.part.updated``, ``tool.progress``, ``session.status``)
and renders with rich. On a terminal, running calls sit in a ``Live`` region (spinner, elapsed time, the last lines
of a command's output); everywhere else only settled lines are printed, so logs stay readable. Text is printed line
by line: a partial line cannot be printed above a live region without tearing it.

Settled lines are coalesced to a frame rate: they wait in order and are printed together by :meth:`run` every
``FRAME`` seconds, or at once before anything else is printed (text, a retry note, a permission prompt), so the order
on screen is the order of events. One print per frame instead of one per call: printing costs a rich render (and,
above a live region, a redraw of every running call). A settled line waits as its styled segments (text, rich
style), already made printable. Where the output is not a terminal (``tether run`` into a pipe or a log: the CLI's
rule, ``_console.Output``), the view never uses rich: the model's text and the frame's lines are written as their
text, a frame in one write (a rich ``Text`` per line and rich's per-span render cost ~0.3 ms per line: a 1,000-call
step spent more time printing its ✓ lines than running them; importing rich is ~8 % of a scripted run).

The view only renders: it never decides anything and never replies to a permission request (``_approve`` does).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from ..llm import Usage
from ..records import StepFinishPart, TextPart, ToolPart
from ..storable import printable
from ._format import duration, first_line, shown, subject
from ._toolview import Line, TerminalSettings, body_lines, summary_of

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.live import Live

    from ..bus import Bus, Subscription
    from ._console import Output

__all__ = ["FRAME", "Line", "LiveView", "TurnStats"]

FRAME = 0.05
"""Seconds between two prints of settled lines (20 frames a second)."""


@dataclass(kw_only=True, slots=True)
class TurnStats:
    """What the final summary reports."""

    steps: int = 0
    calls: int = 0
    failed_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.monotonic)


@dataclass(kw_only=True, slots=True)
class _Running:
    part: ToolPart
    since: float
    tail: list[str] = field(default_factory=list[str])


def _progress_text(update: Mapping[str, Any]) -> str | None:
    for key in ("output", "tail", "stdout", "text", "chunk"):
        value = update.get(key)
        if isinstance(value, str):
            return value
    return None


class LiveView:
    """Renders one session's live events on ``console``.

    Args:
        console: where to render (a terminal gets the live region; elsewhere the lines are written as text).
        session_id: events of other sessions are ignored.
        settings: how much to show under a settled call (the config's ``terminal`` section).
    """

    def __init__(self, console: Output, session_id: str, settings: TerminalSettings | None = None) -> None:
        self.console = console
        self.session_id = session_id
        self.settings = settings or TerminalSettings()
        self.stats = TurnStats()
        self.parts: dict[str, ToolPart] = {}
        self._lock = threading.Lock()
        self._running: dict[str, _Running] = {}
        self._settled: set[str] = set()
        self._lines: dict[str, str] = {}
        self._printed: dict[str, int] = {}
        self._ended: set[str] = set()
        self._pending: list[Line] = []
        self._live: Live | None = None
        self._interactive = console.is_terminal

    # -- lifecycle ---------------------------------------------------------------------------------------------------

    def __enter__(self) -> LiveView:
        if self._interactive:
            from rich.live import Live  # a terminal only: a pipe or a log never loads the live region

            self._live = Live(
                get_renderable=self._render,
                console=self.console.rich,
                refresh_per_second=10,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush_text()
        self.flush_lines()
        if self._live is not None:
            self._live.stop()
            self._live = None

    @contextmanager
    def paused(self) -> Generator[None]:
        """Stop the live region while a prompt owns the terminal, then resume it."""
        self.flush_text()
        self.flush_lines()
        live = self._live
        if live is not None:
            live.stop()
        try:
            yield
        finally:
            if live is not None and self._live is live:
                live.start()

    async def run(self) -> None:
        """Print the settled lines every ``FRAME`` seconds until cancelled (run it beside the turn)."""
        while True:
            await anyio.sleep(FRAME)
            self.flush_lines()

    def flush_lines(self) -> None:
        """Print the settled lines waiting for the next frame, in one print."""
        pending = self._pending
        if pending:
            self._pending = []
            if not self._interactive:
                self.console.write("".join(["".join([t for t, _ in line]) + "\n" for line in pending]))
            else:
                from rich.text import Text

                self.console.rich.print(Text("\n").join([Text.assemble(*line) for line in pending]))

    # -- events ------------------------------------------------------------------------------------------------------

    EVENTS = (
        "message.part.delta",
        "message.part.updated",
        "permission.asked",
        "tool.progress",
        "session.status",
    )
    """The event types :meth:`on_event` routes: what the view subscribes to (not ``"*"``: a permission decision, two
    per call, is then built and published for no one)."""

    def subscribe(self, bus: Bus) -> list[Subscription]:
        """Subscribe :meth:`on_event` to the :data:`EVENTS` of ``bus``."""
        return [bus.subscribe(kind, self.on_event) for kind in self.EVENTS]

    def on_event(self, event: Any) -> None:
        """The bus subscriber (:data:`EVENTS`): route the events of this session."""
        kind = getattr(event, "type", "")
        if kind == "message.part.delta":
            if event.session_id == self.session_id:
                self._delta(event.part_id, event.delta)
        elif kind == "message.part.updated":
            part = event.part
            if part.session_id != self.session_id:
                return
            if isinstance(part, ToolPart):
                self._tool(part)
            elif isinstance(part, TextPart):
                self._text(part)
            elif isinstance(part, StepFinishPart):
                self.stats.steps += 1
                if part.usage is not None:
                    self.stats.usage = self.stats.usage + part.usage
        elif kind == "permission.asked":
            self.flush_lines()  # the approver prints about it next
        elif kind == "tool.progress":
            if event.session_id == self.session_id:
                self._progress(event.call_id, event.update)
        elif kind == "session.status":
            if event.session_id == self.session_id and event.status == "retry":
                self.flush_lines()
                wait = f" in {event.retry_in:.1f}s" if event.retry_in else ""
                self.console.line(
                    (f"↻ provider error, retrying{wait}: ", "yellow"), (printable(event.message or ""), "")
                )

    def _delta(self, part_id: str, delta: str) -> None:
        buffer = self._lines.get(part_id, "") + delta
        if "\n" in buffer:
            done, _, rest = buffer.rpartition("\n")
            self._emit_text(done)
            buffer = rest
        self._lines[part_id] = buffer
        self._printed[part_id] = self._printed.get(part_id, 0) + len(delta)

    def _text(self, part: TextPart) -> None:
        if part.ended is None or part.id in self._ended:
            return
        self._ended.add(part.id)
        printed = self._printed.pop(part.id, None)
        pending = self._lines.pop(part.id, "")
        if printed is None:  # no deltas were seen (a provider that sends whole text): print it all
            if part.text.strip():
                self._emit_text(part.text.rstrip("\n"))
        elif pending:
            self._emit_text(pending)

    def flush_text(self) -> None:
        """Print every buffered partial line."""
        for part_id, pending in list(self._lines.items()):
            if pending:
                self._emit_text(pending)
            self._lines[part_id] = ""

    def _emit_text(self, text: str) -> None:
        self.flush_lines()
        self.console.line((printable(text, lines=True), ""), soft_wrap=True)

    def _tool(self, part: ToolPart) -> None:
        self.parts[part.call_id] = part
        if part.settled:
            if part.call_id in self._settled:
                return
            self._settled.add(part.call_id)
            if self._interactive:
                with self._lock:
                    self._running.pop(part.call_id, None)
            self.stats.calls += 1
            if part.state == "error":
                self.stats.failed_calls += 1
            self.flush_text()
            self._pending.append(self.settled_line(part))
            self._pending.extend(body_lines(part, self.settings))
            for path in part.output_paths:
                self._pending.append(((printable(f"    full output: {path}"), "dim"),))
            return
        if not self._interactive:  # the running calls are drawn in the live region only (a terminal's)
            return
        with self._lock:
            running = self._running.get(part.call_id)
            if running is None:
                self._running[part.call_id] = _Running(part=part, since=time.monotonic())
            else:
                running.part = part

    def _progress(self, call_id: str, update: Mapping[str, Any]) -> None:
        text = _progress_text(update)
        if text is None:
            return
        with self._lock:
            running = self._running.get(call_id)
            if running is None:
                return
            lines = [*running.tail, *text.splitlines()]
            running.tail = lines[-self.settings.bash_tail :] if self.settings.bash_tail else []

    # -- rendering ---------------------------------------------------------------------------------------------------

    @staticmethod
    def settled_line(part: ToolPart) -> Line:
        """``✓ read pricing/cart.py  12ms  lines 1-40 of 212`` or ``✗ edit ...  error``, as styled segments."""
        completed = part.state == "completed"
        line = [
            ("✓ ", "green bold") if completed else ("✗ ", "red bold"),
            (printable(part.tool), "bold"),
            (f" {subject(part.tool, part.input)}", ""),
        ]
        took = duration(part.started, part.ended)
        if took:
            line.append((f"  {took}", "dim"))
        if completed:
            text = summary_of(part)
            if text:
                line.append((f"  {text}", "dim"))
        else:
            reason = "interrupted" if part.interrupted else first_line(part.error or "failed")
            line.append((f"  {reason}", "red"))
        return tuple(line)

    def _render(self) -> RenderableType:
        with self._lock:
            running = list(self._running.values())
        from rich.console import Group
        from rich.spinner import Spinner
        from rich.table import Table
        from rich.text import Text

        if not running:
            return Text("")

        now = time.monotonic()
        rows: list[RenderableType] = []
        for item in running:
            grid = Table.grid(padding=(0, 1))
            grid.add_column()
            grid.add_column()
            label = Text()
            label.append(printable(item.part.tool), style="bold")
            label.append(f" {subject(item.part.tool, item.part.input)}")
            label.append(f"  {now - item.since:.1f}s", style="dim")
            grid.add_row(Spinner("dots", style="cyan"), label)
            rows.append(grid)
            for tail in item.tail:
                rows.append(shown(f"    │ {tail[:160]}", "dim"))
        return Group(*rows)
