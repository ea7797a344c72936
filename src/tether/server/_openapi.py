"""The OpenAPI document of ``tether serve``, built from the route table and the body models.

A row of the table is a :class:`Route`: what the app serves (method, path, handler) and what the document says about
it. The table itself (``_routes.ROUTES``) stands above this module, beside its handlers, and hands itself to
:func:`openapi_document`: so the route that serves the document needs no import back.

``docs/openapi.json`` is this document as committed; ``tests/server/test_openapi.py`` fails when they differ
(regenerate with ``python -m tether.server.openapi > docs/openapi.json``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from .._record import record
from ._schemas import ErrorBody

__all__ = ["Handler", "Route", "openapi_document"]

Handler = Callable[[Request], Awaitable[Response]]


@record(kw_only=False)
class Route:
    """One operation: method, path, handler, and what the OpenAPI document says about it."""

    method: str
    path: str
    handler: Handler
    operation: str
    summary: str
    body: type[BaseModel] | None = None
    response: str = "object"
    """The component schema of a success (``object``: any JSON object)."""
    status: int = 200
    errors: tuple[int, ...] = ()
    query: tuple[tuple[str, dict[str, Any], str], ...] = ()
    """(name, JSON Schema, description) of each query parameter."""


_STATUS_TEXT = {
    400: "The request cannot be served as asked (the detail says why and how to ask).",
    401: "Missing or wrong bearer token.",
    403: "A page of this Origin may not call the server.",
    404: "No such session, pending request or retained output.",
    409: "The session's state refuses it now (busy).",
    413: "The body is larger than the limit.",
    421: "The Host header is not one this server serves (DNS rebinding).",
    422: "The body does not match its schema (the detail lists each issue).",
}

_SESSION = {
    "type": "object",
    "required": ["id", "title", "project", "directory", "agent", "rules", "created", "updated"],
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "project": {"type": "string"},
        "directory": {"type": "string"},
        "agent": {"type": "string"},
        "parent_id": {"type": ["string", "null"]},
        "parent_call_id": {"type": ["string", "null"]},
        "rules": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
        "created": {"type": "integer"},
        "updated": {"type": "integer"},
        "busy": {"type": "boolean"},
        "match": {
            "type": "object",
            "description": "With q: where the session matched (title first, then a tool's name, then text).",
            "required": ["field", "text"],
            "properties": {"field": {"enum": ["title", "tool", "text"]}, "text": {"type": "string"}},
        },
    },
}

_COMPONENTS: dict[str, Any] = {
    "Session": _SESSION,
    "SessionList": {
        "type": "object",
        "required": ["sessions"],
        "properties": {"sessions": {"type": "array", "items": {"$ref": "#/components/schemas/Session"}}},
    },
    "Health": {
        "type": "object",
        "required": ["ok", "project", "directory", "clients", "running"],
        "properties": {
            "ok": {"type": "boolean"},
            "project": {"type": "string"},
            "directory": {"type": "string"},
            "clients": {"type": "integer"},
            "running": {"type": "integer"},
        },
    },
    "Accepted": {
        "type": "object",
        "required": ["session", "status"],
        "properties": {"session": {"type": "string"}, "status": {"const": "busy"}},
    },
    "Preview": {
        "type": "object",
        "required": ["request", "tool", "input", "patch", "reason"],
        "properties": {
            "request": {"type": "string"},
            "tool": {
                "type": ["string", "null"],
                "description": "the call's tool (null: not a tool call's request)",
            },
            "input": {"description": "the call's input, as stored"},
            "patch": {"type": ["string", "null"], "description": "the unified diff the call would write"},
            "reason": {"type": ["string", "null"], "description": "why there is no patch for an edit tool"},
        },
    },
    "EventStream": {"type": "string", "description": "text/event-stream: see docs/server.md"},
    "Text": {"type": "string", "description": "text/plain; charset=utf-8"},
    "object": {"type": "object"},
}


_MEDIA = {"EventStream": "text/event-stream", "Text": "text/plain"}


def _schema(model: type[Any]) -> dict[str, Any]:
    return model.model_json_schema(ref_template="#/components/schemas/{model}")


def openapi_document(routes: Sequence[Route]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes`` (``_routes.ROUTES``): paths, bodies, responses, the bearer scheme."""
    schemas: dict[str, Any] = {**_COMPONENTS, "Error": _schema(ErrorBody)}
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        parameters: list[dict[str, Any]] = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in ("session_id", "request_id", "output_id")
            if "{" + name + "}" in route.path
        ]
        parameters += [
            {"name": name, "in": "query", "required": False, "schema": schema, "description": text}
            for name, schema, text in route.query
        ]
        media = _MEDIA.get(route.response, "application/json")
        responses: dict[str, Any] = {
            str(route.status): {
                "description": route.summary,
                "content": {media: {"schema": {"$ref": f"#/components/schemas/{route.response}"}}},
            }
        }
        errors = {401, 403, 421, *route.errors}
        if route.body is not None:
            errors |= {413, 422}
        for status in sorted(errors):
            responses[str(status)] = {
                "description": _STATUS_TEXT[status],
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            }
        operation: dict[str, Any] = {
            "operationId": route.operation,
            "summary": route.summary,
            "responses": responses,
        }
        if parameters:
            operation["parameters"] = parameters
        if route.body is not None:
            name = route.body.__name__
            schemas[name] = _schema(route.body)
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
            }
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "tether serve",
            "version": "1",
            "description": "Sessions, permission requests, questions and live events of one project. Every route "
            "needs Authorization: Bearer <token> (see docs/server.md).",
        },
        "servers": [{"url": "http://127.0.0.1:4096"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
