"""Making outside text storable and showable: lone surrogates become visible escapes (law 12).

Python represents what is not valid Unicode text with lone surrogates: ``os.fsdecode`` turns each undecodable byte
of a file name into ``U+DC80``–``U+DCFF`` (``surrogateescape``), and JSON may carry a lone ``\\ud800``. Such a
string cannot be encoded as UTF-8: not by SQLite, not into a provider request, not onto a terminal. At the
boundaries where outside text enters (tool content, model text, the CLI's prompt) it is made visible instead:
an undecodable byte is shown as ``\\xff``, any other lone surrogate as ``\\ud800``. Valid text is returned as is
(ASCII in O(1)).

A tool given a shown name back (``bad\\xffname.txt``) finds the real file through :func:`raw_name`; a file literally
named with a backslash and the same letters is a different name, and the tools refuse the ambiguity when both exist.

:func:`storable` applies :func:`visible` to every string of a JSON value (dict keys included), nested at any depth,
and returns the very same object when there is nothing to show: the session's part writer and every renderer of
stored records (``session show --json``, ``session export``, the server's API) pass values through it.

:func:`column_text` is the other mapping, for a plain text column that must give back exactly what was stored (a
project directory, a saved approval's resource): any text, as text every store can hold (valid UTF-8, no NUL), and
:func:`column_value` reverses it.

A terminal is a stricter boundary: :func:`printable` also shows ESC and the other C0/C1 control characters and the
bidi override/isolate marks as escapes (``\\x1b``, ``\\u202e``), so model or repository text the CLI prints cannot
move the cursor, erase a line or reorder what a person reads (a spoofed approval prompt).

This module owns the mapping only; where each boundary applies it is documented there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from ._regex import lazy

__all__ = ["column_text", "column_value", "has_surrogates", "printable", "raw_name", "storable", "visible"]

T = TypeVar("T")


_surrogate = lazy("[\ud800-\udfff]")


_escape = lazy(r"\\x([89a-fA-F][0-9a-fA-F])|\\u(d[89a-fA-F][0-9a-fA-F]{2})")


def has_surrogates(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (cannot be encoded as UTF-8)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _show(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with each lone surrogate shown as an escape: ``\\xNN`` for an undecodable byte, else ``\\uXXXX``."""
    if not has_surrogates(text):
        return text
    return _surrogate().sub(_show, text)


_SCALARS = frozenset({int, float, bool, type(None)})


def _clean(value: Any) -> bool:
    """Whether a JSON value holds no lone surrogate, in a string or a key (exact types first: the common case).

    Strings and scalars inside a container are checked in its loop, not by a call each: a tool part's permission
    records and metadata are mostly short strings.
    """
    kind = type(value)
    if kind is str:
        return value.isascii() or not has_surrogates(value)
    if kind in _SCALARS:
        return True
    if kind is dict or isinstance(value, Mapping):
        for key, item in value.items():  # a loop, not all(): every tool part's input and metadata pass here
            if type(key) is str:
                if not key.isascii() and has_surrogates(key):
                    return False
            elif not _clean(key):
                return False
            leaf = type(item)
            if leaf is str:
                if not item.isascii() and has_surrogates(item):
                    return False
            elif leaf not in _SCALARS and not _clean(item):
                return False
        return True
    if kind is list or kind is tuple or isinstance(value, list | tuple):
        for item in value:
            leaf = type(item)
            if leaf is str:
                if not item.isascii() and has_surrogates(item):
                    return False
            elif leaf not in _SCALARS and not _clean(item):
                return False
        return True
    return not isinstance(value, str) or not has_surrogates(value)  # a str subclass; any other object: as is


def _shown(value: Any) -> Any:
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, Mapping):
        return {_shown(k): _shown(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, tuple):
        return tuple(_shown(v) for v in value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, list):
        return [_shown(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def storable(value: T) -> T:
    """``value`` (text, or JSON data: mappings, lists, tuples, scalars, nested at any depth) with every lone surrogate
    shown as :func:`visible` shows it, in values and keys alike.

    The same object is returned when it holds none (the common case, checked without copying; ASCII strings in
    O(1)); otherwise a copy (a mapping becomes a ``dict``, lists and tuples keep their kind). Objects that are not
    JSON data are left as they are. A value nested deeper than the interpreter can walk (or a cycle) is returned as
    it is: the store's encoder has its own last resort for it.
    """
    try:
        if _clean(value):
            return value
        return _shown(value)
    except RecursionError:
        return value


# C0 controls except tab and newline, DEL, C1 controls, the bidi marks, overrides and isolates, lone surrogates
_UNPRINTABLE_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _show_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x80:
        return f"\\x{code:02x}"
    return _show(match)


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` safe to print on a terminal: control and bidi characters and lone surrogates shown as escapes.

    ESC (``\\x1b``), the other C0 controls, DEL, C1 controls (``\\u009b``), the bidi marks, overrides and isolates
    (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069) and lone surrogates (as :func:`visible` shows them) become
    visible escapes. Tab is kept; newline is kept only with ``lines=True`` (text printed as lines: a command, a
    diff, the model's text), else shown as ``\\x0a`` (a one-line subject or title).
    """
    pattern = _UNPRINTABLE_LINES if lines else _UNPRINTABLE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_show_control, text)


def _raw(match: re.Match[str]) -> str:
    byte, code = match.groups()
    return chr(0xDC00 + int(byte, 16)) if byte is not None else chr(int(code, 16))


def raw_name(shown: str) -> str | None:
    """The name :func:`visible` showed as ``shown`` (with its lone surrogates), or ``None`` when it has no escape."""
    if "\\" not in shown:
        return None
    raw = _escape().sub(_raw, shown)
    return None if raw == shown else raw


_MARK = "\x01"


def column_text(value: str) -> str:
    """``value`` as text any store's text column holds (valid UTF-8 without NUL), exactly and reversibly.

    Text a column holds as it is stays as it is; any other (a NUL, a lone surrogate, or a leading ``\\x01``) becomes
    ``\\x01`` followed by its ASCII JSON string. The mapping is injective, so a lookup maps its argument the same way
    and finds what was stored; :func:`column_value` gives the text back.
    """
    if "\x00" not in value and not value.startswith(_MARK) and (value.isascii() or not has_surrogates(value)):
        return value
    return _MARK + json.dumps(value, ensure_ascii=True)


def column_value(value: str) -> str:
    """The text :func:`column_text` stored as ``value``."""
    if value.startswith(_MARK):
        try:
            decoded = json.loads(value[1:])
        except ValueError:  # not written by column_text (a row from before it): as it is
            return value
        if isinstance(decoded, str):
            return decoded
    return value
