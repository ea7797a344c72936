"""Small, pure formatting helpers shared by the live view and the timeline: a call's subject, its summary, times.

Every line these helpers return is :func:`~tether.storable.printable`: model and repository text cannot carry a
terminal escape through them. Text printed elsewhere goes through :func:`shown` (the same helper, for rich).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..storable import printable

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["decision_lines", "duration", "first_line", "shown", "subject"]

_HEAD = 256
"""Characters of a long text :func:`first_line` looks at before splitting all of it."""
_SUBJECT_KEYS = ("command", "filePath", "file_path", "path", "pattern", "url", "query", "description")


def shown(text: str, style: str = "", *, lines: bool = False) -> Text:
    """Outside text (the model's, a repository's) as a rich ``Text``: never read as markup, escapes made visible.

    Args:
        text: what to show.
        style: the rich style of the whole text.
        lines: keep newlines (a command, the model's text); else a newline is shown as ``\\x0a``.
    """
    from rich.text import Text  # the commands that draw with rich have loaded it (a pipe's turn never does)

    return Text(printable(text, lines=lines), style=style)


def first_line(text: str, width: int = 100) -> str:
    """The first non-empty line of ``text``, cut to ``width`` characters, control characters shown as escapes."""
    for line in _lines(text):
        if line.strip():
            line = printable(line.strip())
            return line if len(line) <= width else line[: width - 1] + "…"
    return ""


def _lines(text: str) -> Iterator[str]:
    # A whole file's content: its head holds the first line (splitting all of it cost ~10 µs a tool call).
    if len(text) > _HEAD:
        yield from text[:_HEAD].splitlines()[:-1]  # the head's last line may go on past it
    yield from text.splitlines()


def subject(tool: str, value: Any, width: int = 80) -> str:
    """What a call is about, in one short line: the command for bash, the path for file tools, else compact JSON."""
    if isinstance(value, Mapping):
        args = cast(Mapping[str, Any], value)
        for key in _SUBJECT_KEYS:
            item = args.get(key)
            if isinstance(item, str) and item:
                return first_line(item, width)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    text = printable(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def duration(start_ms: int | None, end_ms: int | None) -> str:
    """``0.42s`` / ``12ms`` for a span in milliseconds, or ``""`` when a bound is missing."""
    if start_ms is None or end_ms is None:
        return ""
    ms = max(0, end_ms - start_ms)
    return f"{ms}ms" if ms < 1000 else f"{ms / 1000:.2f}s"


def decision_lines(record: Mapping[str, Any]) -> list[str]:
    """Describe one recorded permission event or decision: the effect, who replied, the deciding rule per resource.

    Accepts a tool part's permission record (``{"event": "permission.asked", "decision": {...}}``,
    ``{"event": "permission.replied", "reply": "once"}``) or a bare decision (``Decision.to_json()``).
    """
    nested = record.get("decision")
    decision = cast(Mapping[str, Any], nested) if isinstance(nested, Mapping) else record
    event = str(record.get("event", "")).removeprefix("permission.")
    if nested is None and "verdicts" not in record:
        reply = record.get("reply", "?")
        message = record.get("message")
        head = f"permission {record.get('action', '')} {event or 'replied'}: {reply}".replace("  ", " ")
        return [printable(head + (f" ({message})" if message else ""))]
    action = str(decision.get("action", record.get("action", "?")))
    effect = str(decision.get("effect", "?"))
    reply = decision.get("reply") or record.get("reply")
    head = f"permission {action}: {effect}" + (f" ({event})" if event and event != "decided" else "")
    if reply:
        head += f", user replied {reply}"
    lines = [head]
    verdicts = cast(Sequence[Mapping[str, Any]], decision.get("verdicts") or ())
    for verdict in verdicts:
        rule = cast(Mapping[str, Any], verdict.get("rule") or {})
        source = verdict.get("source", "?")
        resource = verdict.get("resource", "?")
        if source == "default":
            lines.append(f"  {resource}: {verdict.get('effect')} (no rule matched; default ask)")
        else:
            lines.append(
                f'  {resource}: {verdict.get("effect")} by rule {rule.get("action")} "{rule.get("resource")}" '
                f"-> {rule.get('effect')} ({source})"
            )
    return [printable(line) for line in lines]
