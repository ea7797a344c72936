"""What the terminal shows of one settled tool call: its one-line summary and the lines under it.

* edit, write and apply_patch: a coloured unified diff of what was written, from the call's metadata (``files``:
  each file's patch, computed by the tool from the file before and after the write, never from the model's strings),
  cut to ``diff_lines`` lines with a count of the hidden ones;
* bash: the last ``bash_tail`` lines of the output the model read, and the exit status in the summary;
* read, grep, glob, list: a one-line summary in the tool's own words (``lines 1-40 of 212``, ``12 matches``,
  ``34 files``), never a bare line count that reads like "lines changed".

The settings come from the config's ``terminal`` section (:class:`TerminalSettings`). Every line is
:func:`~tether.storable.printable` (a diff or an output holds the repository's text). The live view prints these lines;
nothing here decides anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from .._record import record
from ..content import text_of
from ..records import ToolPart
from ..storable import printable
from ._format import first_line

__all__ = [
    "EDIT_TOOLS",
    "Line",
    "TerminalSettings",
    "body_lines",
    "diff_lines",
    "output_tail",
    "patch_lines",
    "summary_of",
]

Line = tuple[tuple[str, str], ...]
"""A line as its segments: (printable text, rich style)."""

EDIT_TOOLS = frozenset({"edit", "write", "apply_patch", "multiedit", "patch"})
"""The tools whose calls show a diff (their metadata's ``files`` holds each file's patch)."""

_INDENT = "    "
_WIDTH = 400
"""Characters of one diff or output line shown (the rest cut with ``…``)."""
_CAP_MARKER = re.compile(r"^\.\.\. \(diff truncated: (\d+) more lines\)$")
_BASH_TRAILER = (
    "Command exited with code ",
    "Command timed out after ",
    "[The sandbox (",
    "[Output capture truncated",
)


@record
class TerminalSettings:
    """The config's ``terminal`` section: how much the terminal shows (``0``: none)."""

    bash_tail: int = 5
    diff_lines: int = 40
    resume_turns: int = 3

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> TerminalSettings:
        """The settings of a merged config's plain data (already validated: the values are in range)."""
        section = data.get("terminal")
        if not isinstance(section, Mapping):
            return cls()
        values = cast(Mapping[str, Any], section)
        defaults = cls()

        def number(key: str, default: int) -> int:
            value = values.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default

        return cls(
            bash_tail=number("bash_tail", defaults.bash_tail),
            diff_lines=number("diff_lines", defaults.diff_lines),
            resume_turns=number("resume_turns", defaults.resume_turns),
        )


def _cut(text: str) -> str:
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


def _files(metadata: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    files = (metadata or {}).get("files")
    if not isinstance(files, list):
        return []
    return [cast(Mapping[str, Any], f) for f in cast(list[Any], files) if isinstance(f, Mapping)]


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _style(line: str) -> str:
    if line.startswith("@@"):
        return "cyan"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("\\"):
        return "dim italic"
    return "dim"


def patch_lines(patch: str, *, with_header: bool = False) -> tuple[list[str], int]:
    """The lines of a unified diff to show (without its ``---``/``+++`` header unless ``with_header``), and how many
    more lines a cap in the metadata already hid (its ``... (diff truncated: N more lines)`` marker)."""
    lines: list[str] = []
    hidden = 0
    for line in patch.splitlines():
        if not with_header and (line.startswith("--- ") or line.startswith("+++ ")) and not lines:
            continue
        marker = _CAP_MARKER.match(line)
        if marker is not None:
            hidden += int(marker.group(1))
            continue
        lines.append(line)
    return lines, hidden


def diff_lines(lines: Sequence[str], limit: int, *, hidden: int = 0, indent: str = _INDENT) -> list[Line]:
    """Diff ``lines`` as coloured lines, the first ``limit`` of them, then one line counting the rest (and
    ``hidden``, lines already cut before)."""
    shown: list[Line] = [((printable(f"{indent}{_cut(line)}"), _style(line)),) for line in lines[:limit]]
    more = max(0, len(lines) - limit) + hidden
    if more:
        shown.append(((f"{indent}… {_plural(more, 'more diff line', 'more diff lines')}", "dim"),))
    return shown


def _edit_body(part: ToolPart, limit: int) -> list[Line]:
    """Each file's diff (a header line per file when there are several), ``limit`` diff lines in all, then the count
    of the hidden ones."""
    files = _files(part.metadata)
    out: list[Line] = []
    left, hidden = limit, 0
    for file in files:
        patch = file.get("patch")
        if not isinstance(patch, str):
            continue
        lines, cut = patch_lines(patch)
        if left > 0 and len(files) > 1:
            counts = f"  +{_count(file.get('additions'))} -{_count(file.get('deletions'))}"
            out.append(((printable(f"{_INDENT}{file.get('file', '?')}"), "bold"), (counts, "dim")))
        shown = max(0, min(left, len(lines)))
        out.extend(((printable(f"{_INDENT}{_cut(line)}"), _style(line)),) for line in lines[:shown])
        left -= shown
        hidden += len(lines) - shown + cut
    if hidden:
        out.append(((f"{_INDENT}… {_plural(hidden, 'more diff line', 'more diff lines')}", "dim"),))
    return out


def output_tail(text: str) -> list[str]:
    """The output lines of a bash call's content: its text without the trailer bash adds (exit code, timeout,
    sandbox and capture notes); empty for ``(no output)``."""
    lines = text.splitlines()
    while lines and (not lines[-1].strip() or lines[-1].startswith(_BASH_TRAILER)):
        lines.pop()
    if lines == ["(no output)"]:
        return []
    return lines


def _bash_body(part: ToolPart, limit: int) -> list[Line]:
    lines = output_tail(text_of(part.content, "\n"))
    if not lines:
        return []
    out: list[Line] = []
    if len(lines) > limit:
        earlier = len(lines) - limit
        out.append(((f"{_INDENT}│ … {_plural(earlier, 'earlier line', 'earlier lines')}", "dim"),))
    out.extend(((printable(f"{_INDENT}│ {_cut(line)}"), "dim"),) for line in lines[-limit:])
    return out


def body_lines(part: ToolPart, settings: TerminalSettings) -> list[Line]:
    """The lines shown under a settled call's line: the diff of an edit, the tail of a bash call, else none."""
    if part.tool in EDIT_TOOLS:
        return _edit_body(part, settings.diff_lines) if settings.diff_lines > 0 else []
    if part.tool == "bash" and part.state == "completed" and settings.bash_tail > 0:
        return _bash_body(part, settings.bash_tail)
    return []


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def summary_of(part: ToolPart) -> str:
    """The one-line summary after a completed call's subject (``exit 0``, ``+3 -1``, ``lines 1-40 of 212``, ...)."""
    metadata = part.metadata or {}
    tool = part.tool
    if tool in EDIT_TOOLS:
        files = _files(metadata)
        if files:
            added = sum(_count(f.get("additions")) for f in files)
            removed = sum(_count(f.get("deletions")) for f in files)
            where = f" in {len(files)} files" if len(files) > 1 else ""
            created = " (new file)" if len(files) == 1 and files[0].get("status") == "added" else ""
            return f"+{added} -{removed}{where}{created}"
    elif tool == "bash":
        if metadata.get("timedOut") is True:
            status = "timed out"
        else:
            code = metadata.get("exit")
            status = f"exit {code}" if isinstance(code, int) else ""
        description = metadata.get("description")
        if isinstance(description, str) and description.strip():
            return f"{status} · {first_line(description, 70)}" if status else first_line(description, 70)
        return status
    elif tool == "read":
        return _read_summary(part, metadata)
    elif tool == "grep":
        matches = metadata.get("matches")
        if isinstance(matches, int):
            more = "+" if metadata.get("truncated") is True else ""
            return "no matches" if matches == 0 else _plural(matches, "match", "matches") + more
    elif tool in ("glob", "list"):
        count = metadata.get("count")
        if isinstance(count, int):
            more = "+" if metadata.get("truncated") is True else ""
            return (
                _plural(count, "file", "files") if tool == "glob" else _plural(count, "entry", "entries")
            ) + more
    if part.title:
        return printable(part.title)
    return first_line(text_of(part.content, "\n"), 70)


def _read_summary(part: ToolPart, metadata: Mapping[str, Any]) -> str:
    mime = metadata.get("mime")
    if isinstance(mime, str):
        return printable(mime)
    title = part.title or ""
    _, _, span = title.rpartition(", ")  # "Read file a.py, lines 1-40" / "Read directory d, entries 1-5"
    total = metadata.get("total")
    if span.startswith(("lines ", "entries ")):
        of = f" of {total}" if isinstance(total, int) else ""
        more = (
            " (more: offset " + str(metadata["next"]) + ")" if isinstance(metadata.get("next"), int) else ""
        )
        return printable(f"{span}{of}{more}")
    if span in ("0 lines", "0 entries"):
        return span
    return printable(title) if title else first_line(text_of(part.content, "\n"), 70)
