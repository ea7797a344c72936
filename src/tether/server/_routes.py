"""The routes of ``tether serve``: one handler per operation, each a thin call into the runtime.

Each handler reads its body through a pydantic model (:mod:`._schemas`) and answers JSON; the errors map in one place
(:func:`_errors`): ``NotFoundError`` 404, a busy session 409, ``UsageError``/``ConfigError`` 400, an invalid body 422.
A session or pending request is reached only through ``ServerState.project`` (:class:`~._project.ServedProject`): another
project's reads as a missing one (404), and lists leave it out.
The table :data:`ROUTES` (rows of :class:`~._openapi.Route`) is what both the app and the OpenAPI document are built
from, so they cannot drift apart.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from typing import Any, TypeVar

import anyio.to_thread
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse

from .._export import export_document, messages_json
from .._wire import session_json
from ..errors import ConfigError, NotFoundError, UsageError
from ..session import SessionInfo, ToolPart
from ..storable import storable
from ._openapi import Handler, Route, openapi_document
from ._preview import EDIT_TOOLS, change_of
from ._schemas import AnswerBody, CreateSessionBody, PromptBody, ReplyBody
from ._state import Conflict, ServerState

__all__ = ["ROUTES"]

B = TypeVar("B", bound=BaseModel)

MAX_SEARCH = 200
"""The longest search text (``q``) in characters."""
_OUTPUT_NAME = re.compile(r"tool_[0-9A-Za-z]{1,64}")
_OUTPUT_HEADERS = {
    # a retained output is whatever a command printed: shown as text, never run or rendered as a page
    "content-security-policy": "default-src 'none'; sandbox",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
}


def _state(request: Request) -> ServerState:
    return request.app.state.tether


def _json(value: Any, status: int = 200) -> JSONResponse:
    # valid UTF-8 whatever the store holds: a lone surrogate (a session's exact directory, an older store's text)
    # is shown as a visible escape (``tether.storable``), never a failed encode and a 500
    return JSONResponse(storable(value), status_code=status)


def _error(status: int, error: str, detail: Any) -> JSONResponse:
    return JSONResponse(storable({"error": error, "detail": detail}), status_code=status)


async def _body(request: Request, model: type[B]) -> B:
    raw = await request.body()
    return model.model_validate_json(raw or b"{}")


def _errors(handler: Handler) -> Handler:
    async def guarded(request: Request) -> Response:
        try:
            return await handler(request)
        except ValidationError as exc:
            issues = [
                {"loc": [str(p) for p in e["loc"]], "msg": e["msg"], "type": e["type"]}
                for e in exc.errors(include_url=False, include_input=False)
            ]
            return _error(422, "invalid_body", issues)
        except NotFoundError as exc:
            return _error(404, "not_found", str(exc))
        except Conflict as exc:
            return _error(409, "conflict", str(exc))
        except (UsageError, ConfigError) as exc:
            return _error(400, "bad_request", str(exc))

    return guarded


def _whole(raw: str, most: int) -> int | None:
    """``raw`` as a whole number from 0 to ``most``, else ``None``: ASCII digits only (``str.isdigit`` also takes
    ``²``, which ``int`` refuses), checked by length before ``int`` reads it."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > len(str(most)) or int(raw) > most:
        return None
    return int(raw)


def _limit(request: Request, default: int = 100) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return default
    limit = _whole(raw, 1000)
    if not limit:
        raise UsageError("limit must be a whole number from 1 to 1000")
    return limit


# -- health -----------------------------------------------------------------------------------------------------------


async def health(request: Request) -> Response:
    state = _state(request)
    return _json(
        {
            "ok": True,
            "project": str(state.location.root),
            "directory": str(state.location.directory),
            "clients": state.hub.clients,
            "running": len(state.running),
        }
    )


# -- sessions ---------------------------------------------------------------------------------------------------------


async def list_sessions(request: Request) -> Response:
    state = _state(request)
    limit = _limit(request)
    words = " ".join(request.query_params.get("q", "").replace("\x00", " ").split())
    if not words:
        found = await state.rt.sessions.list(project=state.project.root, limit=limit)
        return _json({"sessions": [{**session_json(i), "busy": i.id in state.running} for i in found]})
    if len(words) > MAX_SEARCH:
        raise UsageError(f"q is at most {MAX_SEARCH} characters: search for a shorter part of the text")
    matches = await state.rt.store.search_sessions(words, project=state.project.root, limit=limit)
    return _json(
        {
            "sessions": [
                {
                    **session_json(m.info),
                    "busy": m.info.id in state.running,
                    "match": {"field": m.field, "text": m.text},
                }
                for m in matches
            ]
        }
    )


async def create_session(request: Request) -> Response:
    state = _state(request)
    body = await _body(request, CreateSessionBody)
    directory = await anyio.to_thread.run_sync(state.directory, body.directory)
    if body.agent is not None and body.agent not in state.rt.agents:
        raise UsageError(f"no agent {body.agent!r}; agents: {', '.join(sorted(state.rt.agents))}")
    location = await state.rt.location(directory, root=state.location.root)
    session = await state.rt.sessions.create(location, agent=body.agent, title=body.title)
    state.keep(session)
    return _json(session_json(session.info), 201)


async def _stored(request: Request) -> SessionInfo:
    return await _state(request).project.session(request.path_params["session_id"])


async def get_session(request: Request) -> Response:
    info = await _stored(request)
    return _json({**session_json(info), "busy": info.id in _state(request).running})


async def session_messages(request: Request) -> Response:
    info = await _stored(request)
    messages = await _state(request).rt.store.load_messages(info.id)
    return _json({"session": info.id, "messages": messages_json(messages)})


async def export_session(request: Request) -> Response:
    info = await _stored(request)
    return _json(await export_document(_state(request).rt.store, info))


async def session_output(request: Request) -> Response:
    state = _state(request)
    info = await _stored(request)
    name = request.path_params["output_id"]
    path = state.rt.output.session_directory(info.id) / name

    def regular() -> bool:
        try:
            return stat.S_ISREG(os.lstat(path).st_mode)  # a symlink planted there is not followed
        except OSError:
            return False

    if not _OUTPUT_NAME.fullmatch(name) or not await anyio.to_thread.run_sync(regular):
        raise NotFoundError(
            f"No retained output {name!r} of session {info.id}: name the last component of one of its calls' "
            "output_paths (a retained output is removed after the retention period)"
        )
    return FileResponse(path, media_type="text/plain; charset=utf-8", headers=_OUTPUT_HEADERS)


async def prompt_session(request: Request) -> Response:
    state = _state(request)
    body = await _body(request, PromptBody)
    info = await _stored(request)
    model = state.choose_model(body.model)
    try:
        # one session, one writer: a session another process runs (tether run) is refused, and this server keeps
        # the session from then on until it stops
        await state.rt.store.claim(info.id)
    except UsageError as exc:
        raise Conflict(str(exc)) from exc
    session = await state.rt.sessions.get(info.id)
    state.start_turn(session, body.text, model)
    state.keep(session)
    return _json({"session": info.id, "status": "busy"}, 202)


async def cancel_session(request: Request) -> Response:
    state = _state(request)
    info = await _stored(request)
    running = info.id in state.running
    if running:
        (await state.rt.sessions.get(info.id)).cancel()
    return _json({"session": info.id, "cancelled": running})


async def delete_session(request: Request) -> Response:
    state = _state(request)
    info = await _stored(request)
    if info.id in state.running:
        raise Conflict(f"session {info.id} is running a turn: cancel it first")
    state.running.add(info.id)  # no prompt starts while it is deleted
    try:
        await state.rt.store.release(info.id)  # this server's own claim (from a prompt) does not keep it
        deleted = await state.rt.store.delete_session(info.id)
        for gone in deleted.sessions:
            state.recent.pop(gone.id, None)
    finally:
        state.running.discard(info.id)
    if deleted.live:
        raise Conflict(deleted.live[0].message)
    directories = [state.rt.output.session_directory(i.id) for i in deleted.sessions]
    gone = [i.id for i in deleted.sessions]

    def remove() -> (
        None
    ):  # the sessions' full outputs and their sandbox temp directories (this server's claim)
        for directory in directories:
            shutil.rmtree(directory, ignore_errors=True)
        for session_id in gone:
            state.rt.sandbox.release(session_id)

    await anyio.to_thread.run_sync(remove)
    return _json({"deleted": [i.id for i in deleted.sessions]})


# -- permissions and questions ----------------------------------------------------------------------------------------


def _session_filter(request: Request) -> str | None:
    return request.query_params.get("session") or None


async def list_permissions(request: Request) -> Response:
    pending, _ = _state(request).project.pending(_session_filter(request))
    return _json({"requests": [p.to_json() for p in pending]})


async def reply_permission(request: Request) -> Response:
    body = await _body(request, ReplyBody)
    if body.message is not None and body.reply != "reject":
        raise UsageError("a message goes with reply reject only (it is the feedback the model reads)")
    request_id = request.path_params["request_id"]
    _state(request).project.permission(request_id)
    await _state(request).rt.permissions.reply(request_id, body.reply, body.message)
    return _json({"request": request_id, "reply": body.reply})


async def preview_permission(request: Request) -> Response:
    state = _state(request)
    request_id = request.path_params["request_id"]
    pending = state.project.permission(request_id)
    source = pending.request.source
    out: dict[str, Any] = {"request": request_id, "tool": None, "input": None, "patch": None, "reason": None}
    if source is None:
        return _json(out)
    # the call's input as stored: one message read by key, whatever the session's length (law 10)
    message = await state.rt.store.load_message(pending.session_id, source.message_id)
    parts = message.parts if message is not None else ()
    part = next((p for p in parts if isinstance(p, ToolPart) and p.call_id == source.call_id), None)
    if part is None:
        return _json(out)
    out.update(tool=part.tool, input=part.input)
    if part.tool in EDIT_TOOLS:
        info = await state.project.session(pending.session_id)
        location = await state.rt.location(info.directory, root=state.location.root)
        change = await change_of(location.location, part.tool, part.input)
        out.update(patch=change.patch, reason=change.reason)
    return _json(out)


async def list_questions(request: Request) -> Response:
    _, pending = _state(request).project.pending(_session_filter(request))
    return _json({"questions": [p.to_json() for p in pending]})


async def answer_question(request: Request) -> Response:
    body = await _body(request, AnswerBody)
    request_id = request.path_params["request_id"]
    _state(request).project.question(request_id)
    await _state(request).rt.questions.reply(request_id, body.answers)
    return _json({"request": request_id, "answered": True})


async def reject_question(request: Request) -> Response:
    request_id = request.path_params["request_id"]
    _state(request).project.question(request_id)
    await _state(request).rt.questions.reject(request_id)
    return _json({"request": request_id, "answered": False})


# -- the catalog, saved approvals, MCP -------------------------------------------------------------------------------


async def catalog(request: Request) -> Response:
    state = _state(request)
    name = request.query_params.get("agent") or state.rt.config.get("default_agent") or "build"
    agent = state.rt.agents.get(name)
    if agent is None:
        raise NotFoundError(f"no agent {name!r}; agents: {', '.join(sorted(state.rt.agents))}")
    step = state.location.tools.materialize(agent.rules)
    tools = [
        {"name": d.name, "description": d.description, "input_schema": dict(d.input_schema)}
        for d in step.definitions
    ]
    return _json({"agent": agent.name, "tools": tools})


async def approvals(request: Request) -> Response:
    state = _state(request)
    found = await state.rt.saved.list(str(state.location.root))
    return _json(
        {
            "approvals": [
                {"id": a.id, "project": a.project, "action": a.action, "resource": a.resource} for a in found
            ]
        }
    )


async def mcp_status(request: Request) -> Response:
    servers = _state(request).location.mcp
    statuses = servers.statuses() if servers is not None else ()
    return _json(
        {
            "servers": [
                {
                    "name": s.name,
                    "state": s.state,
                    "transport": s.transport,
                    "tools": [name for name, _ in s.tools],
                    "error": s.error,
                    "server": s.server,
                }
                for s in statuses
            ]
        }
    )


async def openapi(request: Request) -> Response:
    return _json(openapi_document(ROUTES))


# -- events -----------------------------------------------------------------------------------------------------------


async def events(request: Request) -> Response:
    state = _state(request)
    session_id = _session_filter(request)
    raw = request.headers.get("last-event-id")
    last: int | None = None
    if raw is not None:
        # an event id is a store's 64-bit sequence number: a larger one is no id (and no SQLite integer)
        last = _whole(raw, 2**63 - 1)
        if last is None:
            raise UsageError("Last-Event-ID must be the id of an event this server sent (a whole number)")
    client = await state.hub.connect(session_id, last)
    return StreamingResponse(
        state.hub.stream(client, replay=last is not None, heartbeat=state.heartbeat),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


_SESSION = "/api/sessions/{session_id}"
_SESSION_Q: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("session", {"type": "string"}, "only the events/requests of this session"),
)
_LIMIT = (
    "limit",
    {"type": "integer", "minimum": 1, "maximum": 1000},
    "at most this many (1-1000, default 100)",
)

ROUTES: tuple[Route, ...] = (
    Route("GET", "/api/health", health, "health", "The server is up; its project and load.", response="Health"),
    Route("GET", "/api/sessions", list_sessions, "listSessions",
          "The served project's sessions, newest first; with q, those whose title, text or a called tool's name "
          "holds q (each with its match).", response="SessionList",
          query=(_LIMIT, ("q", {"type": "string", "maxLength": MAX_SEARCH}, "search: words to find (substring, "
                          "ASCII case-insensitive) in the title, the user's and model's text, or a tool's name")),
          errors=(400,)),
    Route("POST", "/api/sessions", create_session, "createSession", "Create a session.", body=CreateSessionBody,
          response="Session", status=201, errors=(400, 422)),
    Route("GET", _SESSION, get_session, "getSession", "One session.", response="Session", errors=(404,)),
    Route("DELETE", _SESSION, delete_session, "deleteSession",
          "Delete a session, its children, their rows and retained outputs.", errors=(404, 409)),
    Route("GET", f"{_SESSION}/messages", session_messages, "sessionMessages",
          "Every message of a session with its parts, as stored.", errors=(404,)),
    Route("GET", f"{_SESSION}/export", export_session, "exportSession",
          "The session as `tether session export` writes it.", errors=(404,)),
    Route("GET", f"{_SESSION}/outputs/{{output_id}}", session_output, "sessionOutput",
          "A call's retained full output (text/plain): output_id is the last component of one of its output_paths.",
          response="Text", errors=(404,)),
    Route("POST", f"{_SESSION}/prompt", prompt_session, "promptSession",
          "Start a turn; returns at once (202), progress is on the event stream.", body=PromptBody,
          response="Accepted", status=202, errors=(400, 404, 409, 422)),
    Route("POST", f"{_SESSION}/cancel", cancel_session, "cancelSession", "Cancel the running turn, if any.",
          errors=(404,)),
    Route("GET", "/api/permissions", list_permissions, "listPermissions", "Pending permission requests.",
          query=_SESSION_Q),
    Route("POST", "/api/permissions/{request_id}/reply", reply_permission, "replyPermission",
          "Answer a pending permission request: once, always, or reject (with feedback).", body=ReplyBody,
          errors=(400, 404, 422)),
    Route("GET", "/api/permissions/{request_id}/preview", preview_permission, "previewPermission",
          "What a pending request would do: its call's tool and input and, for edit/write/apply_patch, the unified "
          "diff computed from the file as it is now (patch), or why not (reason).", response="Preview",
          errors=(404,)),
    Route("GET", "/api/questions", list_questions, "listQuestions", "Pending questions.", query=_SESSION_Q),
    Route("POST", "/api/questions/{request_id}/reply", answer_question, "answerQuestion",
          "Answer pending questions: one list of labels (or own text) per question.", body=AnswerBody,
          errors=(400, 404, 422)),
    Route("POST", "/api/questions/{request_id}/reject", reject_question, "rejectQuestion",
          "Dismiss pending questions (the turn stops, as after a permission reject).", errors=(404,)),
    Route("GET", "/api/catalog", catalog, "catalog", "The tools an agent's model is offered in the served project.",
          query=(("agent", {"type": "string"}, "the agent (default: the config's, else build)"),), errors=(404,)),
    Route("GET", "/api/approvals", approvals, "approvals", "Saved approvals (\"always\") of the served project."),
    Route("GET", "/api/mcp", mcp_status, "mcpStatus", "The configured MCP servers and their state."),
    Route("GET", "/api/openapi.json", openapi, "openapi", "This document."),
    Route("GET", "/api/events", events, "events",
          "Server-sent events (text/event-stream); resume with Last-Event-ID.", response="EventStream",
          query=_SESSION_Q, errors=(400,)),
)  # fmt: skip


def handlers() -> list[tuple[str, str, Handler]]:
    """(method, path, handler with error mapping) of every route."""
    return [(r.method, r.path, _errors(r.handler)) for r in ROUTES]
