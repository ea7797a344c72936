"""Codecs: decode model input and encode tool output, and derive JSON Schemas for providers.

A codec is built once, when a :class:`~tether.tools.Tool` is constructed; no service is needed to build one or to
derive its schema. Three sources are accepted:

- a pydantic model, or any type a :class:`pydantic.TypeAdapter` accepts (``TypedDict``, dataclass, ``list[int]``, ...);
- a ready :class:`pydantic.TypeAdapter`;
- a raw JSON Schema ``dict`` (MCP and manifest tools), validated with ``jsonschema-rs``; decoded values are the JSON
  value itself.

Decoding failures raise :class:`DecodeError` with one :class:`Issue` per bad field, so settle can tell the model
exactly what to fix.

A raw schema is outside input (an MCP server, a manifest): it is refused above :data:`MAX_SCHEMA_CHARS` of JSON, its
validator never retrieves anything (a ``$ref`` or ``$schema`` naming a URL or a file is an error, not a fetch: no
request to a private address, no local file read, no blocking I/O), and :func:`simplify_schema` stops inlining past
:data:`INLINE_BUDGET` nodes (a few chained ``$defs`` referenced twice each would otherwise expand exponentially), so
building a codec is bounded in time and memory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .._record import record
from ._schema_normalize import normalize_schema

__all__ = [
    "Codec",
    "DecodeError",
    "Issue",
    "JsonSchemaCodec",
    "PydanticCodec",
    "make_codec",
    "simplify_schema",
]

MAX_SCHEMA_CHARS = 256 * 1024
"""The largest raw JSON Schema accepted, in characters of compact JSON (real tools' schemas are a few KB)."""
INLINE_BUDGET = 20_000
"""The most JSON nodes :func:`simplify_schema` produces by inlining; past it the ``$defs`` are kept as they are."""


def _no_retrieval(uri: str) -> Any:
    """The validator's retriever: nothing outside the schema itself is ever fetched or read."""
    raise ValueError(f"{uri!r} is outside the schema: only local references (#/$defs/...) are followed")


def _raw_size(schema: Mapping[str, Any]) -> int:
    try:
        return len(json.dumps(schema, separators=(",", ":"), default=str))
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"invalid JSON Schema: not JSON ({type(exc).__name__})") from None


@record(kw_only=False)
class Issue:
    """One validation problem: where (a dotted path, ``""`` for the root) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '(root)'}: {self.message}"


class DecodeError(Exception):
    """A value does not match a codec's schema."""

    def __init__(self, issues: list[Issue]) -> None:
        super().__init__("; ".join(str(i) for i in issues))
        self.issues = issues


class Codec:
    """Decode raw JSON values into typed values and encode typed values back into JSON values."""

    schema: dict[str, Any]

    def decode(self, raw: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def encode(self, value: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError


def _loc(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc)


class PydanticCodec(Codec):
    """A codec over a :class:`pydantic.TypeAdapter`."""

    __slots__ = ("_adapter", "schema")

    def __init__(self, adapter: TypeAdapter[Any]) -> None:
        self._adapter = adapter
        self.schema = simplify_schema(adapter.json_schema())

    def decode(self, raw: Any) -> Any:
        try:
            return self._adapter.validate_python(raw)
        except ValidationError as exc:
            raise DecodeError([Issue(_loc(e["loc"]), e["msg"]) for e in exc.errors()]) from exc

    def encode(self, value: Any) -> Any:
        try:
            validated = self._adapter.validate_python(value)
            return self._adapter.dump_python(validated, mode="json")
        except ValidationError as exc:
            raise DecodeError([Issue(_loc(e["loc"]), e["msg"]) for e in exc.errors()]) from exc


class JsonSchemaCodec(Codec):
    """A codec over a raw JSON Schema. Decoded values are plain JSON values."""

    __slots__ = ("_validator", "schema")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        # Real-world catalogs (MCP, manifests) carry non-standard types and flags: normalize before validating, so
        # the model is validated against exactly the schema it is shown.
        size = _raw_size(schema)
        if size > MAX_SCHEMA_CHARS:
            raise ValueError(f"JSON Schema too large ({size} characters of JSON, at most {MAX_SCHEMA_CHARS})")
        self.schema = simplify_schema(normalize_schema(schema))
        import jsonschema_rs  # only raw schemas (MCP, manifests) need it: a run of built-ins never loads it

        try:
            self._validator = jsonschema_rs.validator_for(self.schema, retriever=_no_retrieval)
        except (ValueError, jsonschema_rs.ValidationError) as exc:
            raise ValueError(
                f"invalid JSON Schema: {str(exc).splitlines()[0] if str(exc) else exc!r}"
            ) from exc

    def _check(self, value: Any) -> None:
        issues = [
            Issue(_loc(tuple(err.instance_path)), err.message) for err in self._validator.iter_errors(value)
        ]
        if issues:
            raise DecodeError(issues)

    def decode(self, raw: Any) -> Any:
        self._check(raw)
        return raw

    def encode(self, value: Any) -> Any:
        try:
            json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise DecodeError([Issue("", f"not a JSON value: {exc}")]) from exc
        self._check(value)
        return value


def make_codec(source: Any) -> Codec:
    """Build the codec for a tool's ``input`` or ``output`` declaration.

    Raises:
        TypeError: ``source`` is neither a JSON Schema dict nor something a ``TypeAdapter`` accepts, or its schema is
            not JSON (a ``NaN``/infinite default, a default of a type JSON has no form for): every request that
            showed it to a model would fail, so the tool is refused where it is built.
    """
    if isinstance(source, Codec):
        codec = source
    elif isinstance(source, Mapping):
        codec = JsonSchemaCodec(source)  # type: ignore[arg-type]
    elif isinstance(source, TypeAdapter):
        codec = PydanticCodec(source)  # type: ignore[arg-type]
    else:
        try:
            codec = PydanticCodec(TypeAdapter(source))
        except Exception as exc:
            raise TypeError(f"cannot build a schema for {source!r}: {exc}") from exc
    try:
        json.dumps(codec.schema, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"the schema of {source!r} is not JSON ({exc}): a default of NaN or infinity, or of a type JSON has "
            "no form for, cannot be shown to a model"
        ) from None
    return codec


def _refs_in(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            found.add(ref[len("#/$defs/") :])
        for value in node.values():
            _refs_in(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs_in(value, found)


class _OverBudget(Exception):
    """Inlining would produce more than :data:`INLINE_BUDGET` nodes."""


def simplify_schema(schema: dict[str, Any], budget: int = INLINE_BUDGET) -> dict[str, Any]:
    """Inline acyclic local ``$ref``s and keep ``$defs`` only for what is still referenced (recursive types).

    When inlining would produce more than ``budget`` nodes (references that fan out: each definition referencing the
    next twice doubles the size), ``schema`` is returned unchanged, with its ``$defs``: the validator follows local
    references itself."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict) or not defs:
        return schema
    defs = dict(defs)  # type: ignore[arg-type]
    # A definition is cyclic when it can reach itself through references.
    graph: dict[str, set[str]] = {}
    for name, body in defs.items():
        found: set[str] = set()
        _refs_in(body, found)
        graph[name] = found

    def reaches(start: str, target: str) -> bool:
        seen: set[str] = set()
        stack = list(graph.get(start, ()))
        while stack:
            cur = stack.pop()
            if cur == target:
                return True
            if cur not in seen:
                seen.add(cur)
                stack.extend(graph.get(cur, ()))
        return False

    cyclic = {name for name in defs if reaches(name, name)}
    left = [budget]

    def inline(node: Any) -> Any:
        left[0] -= 1
        if left[0] < 0:
            raise _OverBudget
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref[len("#/$defs/") :]
                if name in defs and name not in cyclic:
                    extra = {k: inline(v) for k, v in node.items() if k != "$ref"}
                    body = inline(defs[name])
                    if extra:
                        return {**body, **extra} if isinstance(body, dict) else body
                    return body
            return {k: inline(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    try:
        out = inline(schema)
        kept = {name: inline(defs[name]) for name in sorted(cyclic)}
    except _OverBudget:
        return schema
    remaining: set[str] = set()
    _refs_in(out, remaining)
    for body in kept.values():
        _refs_in(body, remaining)
    kept = {k: v for k, v in kept.items() if k in remaining}
    if kept:
        out["$defs"] = kept
    return out
