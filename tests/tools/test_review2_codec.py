"""Attack (review 2, hole 2): a hostile raw JSON Schema (an MCP server's, a manifest's) must not make tether fetch a
URL, read a local file, or expand without bound while its codec is built."""

from __future__ import annotations

import json
import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tether.tools._codec import INLINE_BUDGET, MAX_SCHEMA_CHARS, DecodeError, JsonSchemaCodec, simplify_schema


class _Listener(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving() -> Generator[tuple[str, list[str]]]:
    """A real HTTP server on 127.0.0.1 that serves a valid schema and records every request."""
    hits: list[str] = []
    handler = type("Handler", (_Listener,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    with serving() as served:
        yield served


def chain(depth: int) -> dict[str, Any]:
    """``depth`` acyclic definitions, each referencing the next twice: 2**depth nodes once inlined."""
    defs: dict[str, Any] = {
        f"D{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/D{i + 1}"}, "b": {"$ref": f"#/$defs/D{i + 1}"}},
        }
        for i in range(depth)
    }
    defs[f"D{depth}"] = {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs}


def test_a_remote_ref_is_refused_and_never_fetched(listener: tuple[str, list[str]]) -> None:
    url, hits = listener
    with pytest.raises(ValueError, match="only local references"):
        JsonSchemaCodec({"type": "object", "properties": {"a": {"$ref": f"{url}/from-a-schema"}}})
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        JsonSchemaCodec({"$schema": f"{url}/meta", "type": "object"})
    assert hits == []


def test_a_file_ref_is_refused_and_never_read(tmp_path: Path) -> None:
    target = tmp_path / "secret.json"
    target.write_text('{"type": "string"}')  # valid: a reading validator would accept the schema
    with pytest.raises(ValueError, match="only local references"):
        JsonSchemaCodec({"type": "object", "properties": {"a": {"$ref": target.as_uri()}}})


def test_local_refs_still_validate() -> None:
    codec = JsonSchemaCodec(
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "integer"}}}
    )
    assert codec.decode({"a": 1}) == {"a": 1}
    with pytest.raises(DecodeError, match="a: "):
        codec.decode({"a": "one"})


def test_fanned_out_refs_stop_inlining_and_keep_their_defs() -> None:
    schema = chain(24)  # 2.5 KB of JSON, 2**24 nodes if inlined
    assert simplify_schema(schema) is schema
    codec = JsonSchemaCodec(schema)
    assert "$defs" in codec.schema and len(json.dumps(codec.schema)) < 10_000
    deep: Any = "leaf"
    for _ in range(24):
        deep = {"a": deep, "b": deep}
    assert codec.decode({"x": deep}) == {"x": deep}
    with pytest.raises(DecodeError, match=r"x\.a\.a: 1 is not of type"):
        codec.decode({"x": {"a": {"a": 1}}})


def test_inlining_within_the_budget_still_inlines() -> None:
    small = chain(4)  # 2**4 copies of a small body: well within the budget
    assert INLINE_BUDGET > 1000
    assert "$defs" not in simplify_schema(small)


def test_an_oversized_schema_is_refused_with_its_size() -> None:
    schema = {"type": "object", "description": "x" * MAX_SCHEMA_CHARS}
    with pytest.raises(ValueError, match="JSON Schema too large"):
        JsonSchemaCodec(schema)


def test_a_nesting_bomb_is_an_invalid_schema_not_a_crash() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(3000):
        schema = {"type": "array", "items": schema}
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        JsonSchemaCodec(schema)
