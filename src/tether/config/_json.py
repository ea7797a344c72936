"""Reading a JSON config file, and finding the line of a key path for error messages.

``json.loads`` parses; it does not say where a key was. When a value is rejected we re-scan the (already valid) text
once with a small position-tracking walk so that the error can name the line. The walk only runs on the error path.

A config file comes from anywhere (a cloned repository), so its text is hostile until checked: :func:`parse_json`
turns every pathological input (nesting deep enough to exhaust the recursion limit, a number with more digits than
Python converts, ``NaN``/``Infinity``, a lone surrogate that no file or database can store, an oversized file) into
a one-line :class:`~tether.errors.ConfigError`, never a ``RecursionError`` or a traceback.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, cast

from .._regex import lazy
from ..errors import ConfigError
from ._jsonc import strip_jsonc

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "SHOWN_KEY_CHARS",
    "KeyPath",
    "clip",
    "format_path",
    "key_lines",
    "leaves",
    "parse_json",
    "read_json",
]

KeyPath = tuple[str | int, ...]

MAX_DEPTH = 64
"""The deepest nesting a config may have (real ones use 4 or 5 levels; the walkers after parsing recurse)."""
MAX_BYTES = 4 * 1024 * 1024
"""The largest config file read (real ones are a few KiB)."""


_ws = lazy(r"[ \t\n\r]*")


_ident = lazy(r"[A-Za-z_][A-Za-z0-9_\-]*")


_DECODER = json.JSONDecoder()
# json.decoder.scanstring exists at runtime but is missing from the stubs.
scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # pyright: ignore[reportAttributeAccessIssue]


SHOWN_KEY_CHARS = 80
"""The most characters of one key an error or a warning line shows."""


def clip(text: str, limit: int = SHOWN_KEY_CHARS) -> str:
    """``text``, or its first ``limit`` characters and an ellipsis: a hostile file's 3 MB key stays a short line."""
    return text if len(text) <= limit else text[:limit] + "..."


def format_path(path: KeyPath, *, shown: bool = False) -> str:
    """``("permission", "bash", "rm *")`` -> ``permission.bash["rm *"]``.

    ``shown``: for a message (an error, a warning line): each key is clipped to :data:`SHOWN_KEY_CHARS`.
    """
    out = ""
    for part in path:
        if shown and isinstance(part, str):
            part = clip(part)
        if isinstance(part, int):
            out += f"[{part}]"
        elif _ident().fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


def leaves(value: Any, path: KeyPath = ()) -> list[tuple[KeyPath, Any]]:
    """Every leaf of a JSON value with its key path: objects are walked (an empty one is a leaf), lists are leaves."""
    found: list[tuple[KeyPath, Any]] = []
    stack: list[tuple[KeyPath, Any]] = [(path, value)]
    while stack:
        at, item = stack.pop()
        if isinstance(item, dict) and item:
            children = cast(dict[str, Any], item).items()
            stack.extend(((*at, key), child) for key, child in reversed(children))
        else:
            found.append((at, item))
    return found


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map every key path (and array item) of the valid JSON ``text`` to the 1-based line where it starts."""
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    lines: dict[KeyPath, int] = {}

    def line_of(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + 1

    def skip(pos: int) -> int:
        m = _ws().match(text, pos)
        return m.end() if m else pos

    def value(pos: int, path: KeyPath) -> int:
        pos = skip(pos)
        ch = text[pos]
        if ch == "{":
            pos = skip(pos + 1)
            if text[pos] == "}":
                return pos + 1
            while True:
                start = skip(pos)
                key, pos = scanstring(text, start + 1)
                lines[(*path, key)] = line_of(start)
                pos = skip(pos) + 1  # the ':'
                pos = skip(value(pos, (*path, key)))
                if text[pos] == "}":
                    return pos + 1
                pos += 1  # the ','
        if ch == "[":
            pos = skip(pos + 1)
            if text[pos] == "]":
                return pos + 1
            n = 0
            while True:
                start = skip(pos)
                lines[(*path, n)] = line_of(start)
                pos = skip(value(start, (*path, n)))
                if text[pos] == "]":
                    return pos + 1
                pos += 1
                n += 1
        if ch == '"':
            return scanstring(text, pos + 1)[1]
        return _DECODER.raw_decode(text, pos)[1]

    try:
        value(0, ())
    except (IndexError, ValueError):  # not valid JSON after all: keep what was found
        pass
    return lines


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _too_deep(text: str) -> bool:
    """Whether brackets outside strings nest deeper than :data:`MAX_DEPTH` (checked before ``json.loads`` recurses)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def _check_values(value: Any, where: str) -> None:
    """Reject what ``json.loads`` accepts but nothing downstream can use: lone surrogates and non-finite numbers."""
    stack: list[tuple[Any, KeyPath]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, child in cast(dict[str, Any], item).items():
                _check_text(key, (*path, key), where)
                stack.append((child, (*path, key)))
        elif isinstance(item, list):
            stack.extend((child, (*path, n)) for n, child in enumerate(cast(list[Any], item)))
        elif isinstance(item, str):
            _check_text(item, path, where)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ConfigError(
                "a number too large to represent", file=where, key=format_path(path, shown=True) or None
            )


def _check_text(text: str, path: KeyPath, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        shown = ascii(text[exc.start : exc.end])
        # format_path quotes non-identifier keys with json.dumps, which escapes the surrogate: the message is storable.
        raise ConfigError(
            f"a lone surrogate {shown} (not valid Unicode text)",
            file=where,
            key=format_path(path, shown=True) or None,
        ) from None


def parse_json(text: str, where: str) -> Any:
    """Parse config ``text`` (named ``where`` in errors), JSONC (comments, trailing commas), refusing pathological
    JSON.

    Raises:
        ConfigError: invalid JSON (with its line), an unclosed ``/*`` comment, nesting deeper than :data:`MAX_DEPTH`, ``NaN``/``Infinity`` or a
            number out of range, or a lone surrogate.
    """
    return _parse(strip_jsonc(text, where), where)


def _parse(text: str, where: str) -> Any:
    if _too_deep(text):
        raise ConfigError(f"nested deeper than {MAX_DEPTH} levels", file=where)
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", file=where, line=exc.lineno
        ) from exc
    except (ValueError, RecursionError) as exc:
        # ValueError: Python's int digit limit, NaN/Infinity. RecursionError: a last guard behind _too_deep.
        reason = "a number with too many digits" if "digits" in str(exc) else str(exc) or "nested too deeply"
        raise ConfigError(f"invalid JSON: {reason}", file=where) from None
    _check_values(value, where)
    return value


def read_json(path: Path) -> tuple[Any, str] | None:
    """Return ``(value, text)`` of the JSON (JSONC) file at ``path``, or ``None`` when it does not exist.

    ``text`` has its comments and trailing commas blanked out (positions kept), ready for :func:`key_lines`.

    Raises:
        ConfigError: the file cannot be read, is larger than :data:`MAX_BYTES`, is not UTF-8, or is not valid (or is
            pathological) JSON, as :func:`parse_json`.
    """
    try:
        fd = os.open(
            path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
        )  # a FIFO planted as the config must not block
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror or exc}", file=str(path)) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # before fdopen, which refuses a directory with its own error
        os.close(fd)
        raise ConfigError("not a regular file", file=str(path))
    with os.fdopen(fd, "rb") as handle:
        try:
            raw = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"cannot read the file: {exc.strerror or exc}", file=str(path)) from exc
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"the file is larger than {MAX_BYTES // (1024 * 1024)} MiB", file=str(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the file is not UTF-8 text ({exc.reason})", file=str(path)) from exc
    text = strip_jsonc(text, str(path))
    return _parse(text, str(path)), text
