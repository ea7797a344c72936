"""Head + tail previews of large text that fit a line and byte budget, cut on character boundaries.

Pure functions over ``str``; they never encode more than a budget-sized slice of the input, so previewing a huge
string costs O(budget), not O(text), beyond one ``count("\\n")``.
"""

from __future__ import annotations

__all__ = ["bounded_preview", "utf8_len"]

_ENC = "utf-8"
_ERR = "surrogatepass"
_CHUNK = 1 << 20


def utf8_len(text: str) -> int:
    """UTF-8 byte length of ``text`` without encoding all of it at once."""
    if text.isascii():
        return len(text)
    total = 0
    for start in range(0, len(text), _CHUNK):
        total += len(text[start : start + _CHUNK].encode(_ENC, _ERR))
    return total


def _prefix_within(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits ``budget`` bytes."""
    if budget <= 0:
        return ""
    raw = text[:budget].encode(_ENC, _ERR)
    if len(raw) <= budget:
        return text[:budget]
    return raw[:budget].decode(_ENC, "ignore")


def _suffix_within(text: str, budget: int) -> str:
    """The longest suffix of ``text`` whose UTF-8 encoding fits ``budget`` bytes."""
    if budget <= 0:
        return ""
    raw = text[-budget:].encode(_ENC, _ERR)
    if len(raw) <= budget:
        return text[-budget:]
    return raw[-budget:].decode(_ENC, "ignore")


def _first_lines(text: str, n: int) -> str:
    pos = -1
    for _ in range(n):
        pos = text.find("\n", pos + 1)
        if pos < 0:
            return text
    return text[:pos]


def _last_lines(text: str, n: int) -> str:
    pos = len(text)
    for _ in range(n):
        pos = text.rfind("\n", 0, pos)
        if pos < 0:
            return text
    return text[pos + 1 :]


def _cut_lines(text: str, max_lines: int) -> str:
    return _first_lines(text, max_lines) if max_lines > 0 else ""


def bounded_preview(
    text: str, marker: str, max_lines: int, max_bytes: int, *, lines: int | None = None
) -> str:
    """``head + "\\n\\n" + marker + "\\n\\n" + tail`` within ``max_lines`` lines and ``max_bytes`` UTF-8 bytes.

    The head and tail each take half of the remaining budget; when the text has more lines than the budget the halves
    are whole lines, then both are cut to the byte budget on character boundaries. ``lines`` is the text's line
    count when the caller already has it (it saves a scan of a large text).
    """
    marker_bytes = utf8_len(marker)
    if max_lines <= 4 or max_bytes <= marker_bytes + 4:
        return _prefix_within(_cut_lines(marker, max_lines), max_bytes)
    line_budget = max_lines - 4
    byte_budget = max_bytes - marker_bytes - 4
    head_bytes = (byte_budget + 1) // 2
    tail_bytes = byte_budget // 2
    if lines is None:
        lines = text.count("\n") + 1
    if lines > line_budget:
        head = _first_lines(text, (line_budget + 1) // 2)
        tail = _last_lines(text, line_budget // 2) if line_budget // 2 > 0 else ""
        if utf8_len(head) + utf8_len(tail) + (1 if tail else 0) > byte_budget:
            head = _prefix_within(head, head_bytes)
            tail = _suffix_within(tail, tail_bytes)
    elif utf8_len(text) > byte_budget:
        head = _prefix_within(text, head_bytes)
        tail = _suffix_within(text, tail_bytes)
    else:
        head, tail = text, ""
    if tail:
        return f"{head}\n\n{marker}\n\n{tail}"
    return f"{head}\n\n{marker}"
