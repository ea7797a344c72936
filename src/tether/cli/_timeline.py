"""A session as a timeline: what a person reads with ``tether session show`` and what ``--json`` / export emit.

The timeline is built from the durable records only (the store), never from live events, so it shows exactly what
was persisted: user input, each step (model, finish reason, usage, duration), its text, and each tool call with its
input, state, permission decisions and the rule that decided them, content or error, timings and output paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from io import StringIO

from rich.console import Console
from rich.text import Text

from .._export import EXPORT_FORMAT, SubSession, export_document, timeline_json
from .._wire import session_json
from ..content import text_of
from ..records import (
    AssistantInfo,
    FilePart,
    ReasoningPart,
    SessionInfo,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
    UserInfo,
)
from ..storable import printable
from ..store import StoredMessage
from ._format import decision_lines, duration, first_line, shown, subject

__all__ = [
    "EXPORT_FORMAT",
    "SubSession",
    "export_document",
    "print_timeline",
    "session_json",
    "timeline_json",
]

# The JSON forms live below the CLI and the server, which emit the same documents (``tether._export``).

_PREVIEW_LINES = 8


def _print_tool(console: Console, part: ToolPart) -> None:
    head = Text("  ")
    head.append("✓ " if part.state == "completed" else ("✗ " if part.state == "error" else "… "))
    head.stylize("green bold" if part.state == "completed" else "red bold", 2, 4)
    head.append(printable(part.tool), style="bold")
    head.append(printable(f"  {part.call_id}"), style="dim")
    took = duration(part.started, part.ended)
    head.append(f"  {part.state}" + (f" in {took}" if took else ""), style="dim")
    if part.interrupted:
        head.append("  interrupted", style="red")
    console.print(head)
    console.print(Text(f"    input: {subject(part.tool, part.input, 200)}"))
    for decision in part.permissions:
        for line in decision_lines(decision):
            console.print(Text(f"    {line}", style="yellow"))
    if part.state == "error":
        console.print(shown(f"    error: {part.error or ''}", "red", lines=True))
    body = text_of(part.content, "\n")
    if body:
        lines = body.splitlines()
        label = "output" if part.state == "completed" else "partial"
        more = f" ({len(lines)} lines)" if len(lines) > _PREVIEW_LINES else ""
        console.print(Text(f"    {label}{more}:", style="dim"))
        for line in lines[:_PREVIEW_LINES]:
            console.print(shown(f"      {line[:200]}", "dim"))
        if len(lines) > _PREVIEW_LINES:
            console.print(Text("      …", style="dim"))
    for path in part.output_paths:
        console.print(shown(f"    full output: {path}"))


def _print_nested(console: Console, child: SubSession) -> None:
    """A child session's timeline, indented under the ``task`` call that ran it."""
    inner = Console(
        file=StringIO(),
        width=max(40, console.width - 6),
        color_system=console.color_system,  # type: ignore[arg-type]
        force_terminal=console.is_terminal,
        highlight=False,
    )
    print_timeline(inner, child.info, child.messages, child.children)
    rendered = inner.file.getvalue()  # type: ignore[attr-defined]
    for line in str(rendered).splitlines():
        console.print(Text("      ") + Text.from_ansi(line))


def print_timeline(
    console: Console,
    info: SessionInfo,
    messages: Sequence[StoredMessage],
    children: Mapping[str, Sequence[SubSession]] | None = None,
) -> None:
    """Render the timeline for a person; ``children`` (by the parent's call id) are nested under their call."""
    from ._shortid import short_id

    console.print(shown(f"session {info.id}", "bold") + shown(f"  (short id {short_id(info.id)})", "dim"))
    console.print(shown(f"  title: {info.title}", "dim"))
    console.print(shown(f"  directory: {info.directory}", "dim"))
    console.print(shown(f"  agent: {info.agent}", "dim"))
    step = 0
    for message in messages:
        msg = message.info
        if isinstance(msg, UserInfo):
            text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
            console.print()
            console.print(Text("user › ", style="cyan bold") + shown(text, lines=True))
            for part in message.parts:
                if isinstance(part, FilePart):
                    console.print(shown(f"  (file attached: {part.content.type})", "dim"))
            continue
        assert isinstance(msg, AssistantInfo)
        step += 1
        usage = msg.usage
        tokens = f"{usage.input_tokens} in / {usage.output_tokens} out" if usage is not None else "no usage"
        took = duration(msg.created, msg.completed)
        head = Text(f"step {step}", style="magenta bold")
        head.append(
            printable(
                f"  {msg.model}  {msg.finish or 'unfinished'}  {tokens}" + (f"  {took}" if took else "")
            ),
            style="dim",
        )
        console.print(head)
        if msg.error is not None:
            console.print(shown(f"  error ({msg.error.kind}): {msg.error.message}", "red", lines=True))
        for part in message.parts:
            if isinstance(part, TextPart) and part.text.strip():
                for line in part.text.strip().splitlines():
                    console.print(shown(f"  {line}"))
            elif isinstance(part, ReasoningPart) and part.text.strip():
                console.print(Text(f"  (reasoning) {first_line(part.text)}", style="dim italic"))
            elif isinstance(part, ToolPart):
                _print_tool(console, part)
                for child in (children or {}).get(part.call_id, ()):
                    _print_nested(console, child)
            elif isinstance(part, StepStartPart | StepFinishPart | FilePart):
                continue


def summarize_steps(messages: Sequence[StoredMessage]) -> Mapping[str, int]:
    """Counts over a session: steps, tool calls, failed calls."""
    steps = calls = failed = 0
    for message in messages:
        if isinstance(message.info, AssistantInfo):
            steps += 1
            for part in message.parts:
                if isinstance(part, ToolPart):
                    calls += 1
                    failed += part.state == "error"
    return {"steps": steps, "calls": calls, "failed": failed}
