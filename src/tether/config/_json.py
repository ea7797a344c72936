"""Reading a JSON config file, and finding the line of a key path for error messages.

``json.loads`` parses; it does not say where a key was. When a value is rejected we re-scan the (already valid) text
once with a small position-tracking walk so that the error can name the line. The walk only runs on the error path.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = ["KeyPath", "format_path", "key_lines", "read_json"]

KeyPath = tuple[str | int, ...]

_WS = re.compile(r"[ \t\n\r]*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_DECODER = json.JSONDecoder()
# json.decoder.scanstring exists at runtime but is missing from the stubs.
scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # pyright: ignore[reportAttributeAccessIssue]


def format_path(path: KeyPath) -> str:
    """``("permission", "bash", "rm *")`` -> ``permission.bash["rm *"]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map every key path (and array item) of the valid JSON ``text`` to the 1-based line where it starts."""
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    lines: dict[KeyPath, int] = {}

    def line_of(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + 1

    def skip(pos: int) -> int:
        m = _WS.match(text, pos)
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


def read_json(path: Path) -> tuple[Any, str] | None:
    """Return ``(value, text)`` of the JSON file at ``path``, or ``None`` when it does not exist.

    Raises:
        ConfigError: the file cannot be read, is not UTF-8, or is not valid JSON (with its line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the file is not UTF-8 text ({exc.reason})", file=str(path)) from exc
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror or exc}", file=str(path)) from exc
    try:
        return json.loads(text), text
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", file=str(path), line=exc.lineno
        ) from exc
