"""The catalog as Code Mode shows it: a summary within a budget (in ``execute``'s description) and ``search``.

A tool is one line: ``name(required, optional?) - first description line`` (cut at 120 characters). Pinned tools are
always listed; the others in catalog order until the inline budget is spent, then by namespace with counts (the part
of a name before its first ``_``: an MCP server's tools share its prefix; the largest first, the line itself within
its share of the budget), which ``search(query)`` inside the sandbox opens up with full input schemas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..tools import ToolDefinition

__all__ = ["DESCRIPTION_CHARS", "NAMESPACE_CHARS", "python_names", "search", "signature", "summary"]

DESCRIPTION_CHARS = 120
NAMESPACE_CHARS = 240
"""The least room the namespace line of a catalog past its budget gets (a fifth of the budget when larger)."""
_SEARCH_LIMIT = 10
_WORD = re.compile(r"[a-z0-9]+")


def python_names(names: Iterable[str]) -> dict[str, str]:
    """``tools.<attribute>`` → catalog name: ``-`` (legal in a tool name, not in Python) becomes ``_``; on a clash
    the first name keeps the attribute."""
    found: dict[str, str] = {}
    for name in names:
        found.setdefault(name.replace("-", "_"), name)
    return found


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= DESCRIPTION_CHARS else line[: DESCRIPTION_CHARS - 1] + "…"


def signature(definition: ToolDefinition) -> str:
    """``name(required, optional?)`` from the input schema's properties."""
    schema: Mapping[str, Any] = definition.input_schema
    properties: Any = schema.get("properties")
    required: Any = schema.get("required")
    needed = set(required) if isinstance(required, list) else set[Any]()  # pyright: ignore[reportUnknownArgumentType]
    args: list[str] = []
    if isinstance(properties, dict):
        for key in properties:  # pyright: ignore[reportUnknownVariableType]
            args.append(str(key) if key in needed else f"{key}?")  # pyright: ignore[reportUnknownArgumentType]
    return f"{definition.name.replace('-', '_')}({', '.join(args)})"


def _line(definition: ToolDefinition) -> str:
    return f"- {signature(definition)}: {_first_line(definition.description)}"


def _namespace(name: str) -> str:
    head, sep, _ = name.partition("_")
    return head if sep and head else name


def summary(definitions: Sequence[ToolDefinition], *, budget: int, pinned: Iterable[str] = ()) -> str:
    """The tool list of ``execute``'s description, at most about ``budget`` characters (pinned lines excepted).

    When the whole catalog does not fit, the tools are listed until the budget less the namespace share
    (``NAMESPACE_CHARS`` or a fifth of the budget, the larger) is spent; the namespace line then names the largest
    prefixes first within that share and counts the rest, so a catalog of thousands of tools with distinct prefixes
    still fits."""
    pinned_names = set(pinned)
    lines = [_line(d) for d in definitions if d.name in pinned_names]
    rest = [(d, _line(d)) for d in definitions if d.name not in pinned_names]
    if sum(len(line) + 1 for _, line in rest) <= budget:
        return "\n".join([*lines, *(line for _, line in rest)])
    share = max(NAMESPACE_CHARS, budget // 5)
    spent = 0
    shown = 0
    for _, line in rest:
        if spent + len(line) + 1 > budget - share:
            break
        lines.append(line)
        spent += len(line) + 1
        shown += 1
    lines.append(_namespaces([d for d, _ in rest[shown:]], share))
    return "\n".join(lines)


def _namespaces(hidden: Sequence[ToolDefinition], share: int) -> str:
    """The line counting ``hidden`` by prefix, the largest first, within about ``share`` characters."""
    counts: dict[str, int] = {}
    single: dict[str, str] = {}  # a prefix of one tool is shown as that tool's name (tools.<it> exists)
    for definition in hidden:
        key = _namespace(definition.name)
        counts[key] = counts.get(key, 0) + 1
        single[key] = definition.name.replace("-", "_")
    head = f"- and {len(hidden)} more, by name prefix: "
    tail = ". Find them with search('words')."
    groups: list[str] = []
    size = len(head) + len(tail)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    for index, (key, n) in enumerate(ranked):
        group = f"{key}_* ({n})" if n > 1 else single[key]
        left = ranked[index + 1 :]
        # what is left is counted at the end, so its count must still fit
        rest = f", {len(left)} other prefixes ({len(hidden)} tools)" if left else ""
        if size + len(group) + 2 + len(rest) > share:
            left = ranked[index:]
            groups.append(f"{len(left)} other prefixes ({sum(n for _, n in left)} tools)")
            break
        groups.append(group)
        size += len(group) + 2
    return head + ", ".join(groups) + tail


def search(definitions: Sequence[ToolDefinition], query: str) -> list[dict[str, Any]]:
    """The tools best matching ``query`` (words in the name score more than in the description), at most 10, each
    with its call signature, full description and input schema."""
    words = set(_WORD.findall(query.lower()))
    scored: list[tuple[int, str, ToolDefinition]] = []
    for definition in definitions:
        name_words = set(_WORD.findall(definition.name.lower()))
        text_words = set(_WORD.findall(definition.description.lower()))
        score = 3 * len(words & name_words) + len(words & text_words)
        if not words or score:
            scored.append((-score, definition.name, definition))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [
        {
            "name": d.name,
            "call": f"await tools.{signature(d)}",
            "description": d.description,
            "input_schema": dict(d.input_schema),
        }
        for _, _, d in scored[:_SEARCH_LIMIT]
    ]
