"""Checking one config file against the models (``_models``), reported as one line a person can act on.

pydantic finds every problem; this module picks the first one in file order and words it for the person who wrote
the file: the key path (``provider.work.baseurl``), the line (the loader's ``fail`` looks it up), and for an unknown
key the closest known one (``did you mean "base_url"?``, by :mod:`difflib`) or the list of known keys. The other
unknown keys of the file follow in the same line, each with its path, line and guess (``also unknown: "shel" (line
3; did you mean "shell"?)``), the first :data:`MORE_UNKNOWN` of them in file order: a file with several misspellings
is fixed in one round, not one run per key.
"""

from __future__ import annotations

import difflib
import heapq
import json
import types
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union, cast, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .._regex import lazy
from ._json import SHOWN_KEY_CHARS, KeyPath, clip, format_path
from ._permission import Fail, kind_of

if TYPE_CHECKING:
    from ._models import TetherConfig

__all__ = ["MORE_UNKNOWN", "check_config", "known_keys"]

MORE_UNKNOWN = 10
"""Unknown keys named after the first error, in file order (the rest are counted)."""

_EXPECTED = {
    "bool_type": "true or false",
    "string_type": "a string",
    "int_type": "a whole number",
    "float_type": "a number",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "a list",
}


_quoted = lazy(r"'((?:[^'\\]|\\.)*)'")


def check_config(
    value: Mapping[str, Any], fail: Fail, line_of: Callable[[KeyPath], int | None] | None = None
) -> TetherConfig:
    """Validate one parsed config object against :class:`TetherConfig`.

    Args:
        value: the parsed file.
        fail: raises the error for a message and the key path it is about.
        line_of: the line of a key path in the file (for the other unknown keys; ``None``: lines unknown).

    Raises:
        ConfigError: (through ``fail``) the first problem in file order, with its key path, followed by the file's
            other unknown keys.
    """
    # The models load with the first file checked: a run with no config file never imports them (issue 38)
    from ._models import TetherConfig

    try:
        return TetherConfig.model_validate(value)
    except ValidationError as exc:
        # A hostile file may hold a million unknown keys: find the first few in file order in one pass (each
        # object's key order indexed once, a heap of the smallest), and word only those.
        indexes: dict[int, dict[Any, int]] = {}
        errors = exc.errors(include_url=False)
        first = min(errors, key=lambda e: _position(value, _path(e), indexes))
        message, path = _describe(first)
        unknown = (e for e in errors if e["type"] == "extra_forbidden" and e is not first)
        others = heapq.nsmallest(MORE_UNKNOWN + 1, unknown, key=lambda e: _position(value, _path(e), indexes))
        if others:
            message += " Also unknown: " if message.endswith("?") else "; also unknown: "
            message += _also(
                others,
                line_of,
                sum(e["type"] == "extra_forbidden" for e in errors) - (first["type"] == "extra_forbidden"),
            )
        fail(message, path)


def _also(errors: Sequence[ErrorDetails], line_of: Callable[[KeyPath], int | None] | None, total: int) -> str:
    """``"shel" (line 3; did you mean "shell"?), agent.build.stpes (line 7; ...)``: the other unknown keys."""
    shown: list[str] = []
    for error in errors[:MORE_UNKNOWN]:
        path = _path(error)
        wording = _unknown(str(path[-1]), known_keys(path[:-1])).partition("; ")[2]
        line = line_of(path) if line_of is not None else None
        where = "; ".join(part for part in (f"line {line}" if line is not None else "", wording) if part)
        name = json.dumps(clip(str(path[0]))) if len(path) == 1 else format_path(path, shown=True)
        shown.append(f"{name} ({where})" if where else name)
    more = total - len(shown)
    return ", ".join(shown) + (f", and {more} more" if more > 0 else "")


def known_keys(path: KeyPath) -> tuple[str, ...]:
    """The keys the section at ``path`` takes (``("provider", "x")`` -> ``api``, ``base_url``, ...); ``()`` for a
    free-form mapping (agent names, provider ids, headers) or a path the models do not describe."""
    section = _section(path)
    if section is None:
        return ()
    return tuple(field.alias or name for name, field in section.model_fields.items())


def _path(error: ErrorDetails) -> KeyPath:
    """The key path of an error; tether's own errors carry the part below the validated value in their context."""
    path: KeyPath = tuple(error["loc"])
    if error["type"] == "tether":
        return (*path, *cast(KeyPath, cast(Mapping[str, Any], error.get("ctx"))["path"]))
    return path


def _describe(error: ErrorDetails) -> tuple[str, KeyPath]:
    path = _path(error)
    kind = error["type"]
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    if kind == "tether":
        return str(ctx["message"]), path
    if kind == "extra_forbidden":
        return _unknown(str(path[-1]), known_keys(path[:-1])), path
    if kind in _EXPECTED:
        found = error["input"]
        return f"expected {_EXPECTED[kind]}, got {'null' if found is None else 'a ' + kind_of(found)}", path
    if kind == "literal_error":
        return "expected " + _quoted().sub(r'"\1"', str(ctx["expected"])), path
    if kind == "string_pattern_mismatch":
        return _pattern_mismatch(str(ctx["pattern"])), path
    if kind == "greater_than_equal":
        return f"expected a number of at least {ctx['ge']}", path
    if kind == "greater_than":
        return f"expected a number above {ctx['gt']}", path
    return error["msg"], path


def _unknown(key: str, known: Sequence[str]) -> str:
    shown = json.dumps(clip(key))
    if not known:
        return f"unknown key {shown}"
    if (
        len(key) > SHOWN_KEY_CHARS
    ):  # no known key is that long; difflib's time grows with the product of the lengths
        return f"unknown key {shown}; expected one of: {', '.join(known)}"
    typed = key.lower()
    lowered = {k.lower(): k for k in known}
    scores = {k: difflib.SequenceMatcher(None, typed, k).ratio() for k in lowered}
    # a transposition ("modle") is the likeliest typo: a key with the same letters comes first; a second guess is
    # shown only when it is about as close ("modle": "model" or "mode")
    close = sorted(
        (k for k in scores if scores[k] >= 0.6), key=lambda k: (sorted(k) != sorted(typed), -scores[k])
    )
    close = [k for k in close[:2] if scores[k] >= scores[close[0]] - 0.1]
    if close:
        return f"unknown key {shown}; did you mean {' or '.join(json.dumps(lowered[k]) for k in close)}?"
    return f"unknown key {shown}; expected one of: {', '.join(known)}"


def _pattern_mismatch(pattern: str) -> str:
    from ._models import MODEL_PATTERN, NON_BLANK

    known = {
        NON_BLANK: "expected a non-empty string",
        MODEL_PATTERN: "expected provider/model, for example openai/gpt-5",
    }
    return known.get(pattern, f"expected text matching {pattern}")


def _section(path: KeyPath) -> type[BaseModel] | None:
    from ._models import TetherConfig

    current: Any = TetherConfig
    for part in path:
        if _is_model(current):
            field = next(
                (
                    f
                    for name, f in cast(type[BaseModel], current).model_fields.items()
                    if (f.alias or name) == part
                ),
                None,
            )
            if field is None:
                return None
            current = _bare(field.annotation)
        elif get_origin(current) is dict:
            current = _bare(get_args(current)[1])
        elif get_origin(current) is list:
            current = _bare(get_args(current)[0])
        else:
            return None
    return cast(type[BaseModel], current) if _is_model(current) else None


def _is_model(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _bare(annotation: Any) -> Any:
    """``X | None`` -> ``X`` (the optional wrapper of the models' fields); anything else unchanged."""
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return members[0]
    return annotation


def _position(value: Any, path: KeyPath, indexes: dict[int, dict[Any, int]]) -> tuple[int, ...]:
    """Where ``path`` lies in document order (JSON objects keep the file's key order); ``indexes`` caches each
    object's key positions by its id."""
    order: list[int] = []
    for part in path:
        if isinstance(value, Mapping) and part in value:
            mapping = cast(Mapping[Any, Any], value)
            index = indexes.get(id(mapping))
            if index is None:
                index = indexes[id(mapping)] = {key: n for n, key in enumerate(mapping)}
            order.append(index[part])
            value = mapping[part]
        elif isinstance(value, list) and isinstance(part, int) and part < len(cast(list[Any], value)):
            order.append(part)
            value = cast(list[Any], value)[part]
        else:
            order.append(-1)  # a model-level error (a missing or renamed key) before the keys inside it
            break
    return tuple(order)
