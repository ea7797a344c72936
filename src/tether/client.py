"""``tether.client``: a small Python client for ``tether serve`` (docs/server.md).

```text
from tether.client import Client

with Client("http://127.0.0.1:4096", token) as api:
    session = api.create_session()
    api.prompt(session["id"], "fix the failing test")      # returns at once
    for event in api.events(session=session["id"]):       # server-sent events, resumable
        if event.type == "permission_asked":
            api.reply(event.data["request"], "once")
        elif event.type == "status" and event.data["status"] == "idle":
            break
```

Every method raises :class:`ApiError` (status, ``error``, ``detail``) for a refused request.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from types import TracebackType
from typing import Any, Literal

import httpx2

from ._record import record

__all__ = ["ApiError", "Client", "Event", "EventStream"]


class ApiError(Exception):
    """The server refused a request: its HTTP ``status``, the ``error`` code and the ``detail``."""

    def __init__(self, status: int, error: str, detail: Any) -> None:
        super().__init__(f"{status} {error}: {detail}")
        self.status = status
        self.error = error
        self.detail = detail


@record(kw_only=False)
class Event:
    """One server-sent event: its ``type``, its JSON ``data`` and, for a durable event, its ``id`` (the store's seq)."""

    type: str
    data: dict[str, Any]
    id: int | None = None


def _check(response: httpx2.Response) -> None:
    """Raise :class:`ApiError` for an error status (with the server's ``error`` and ``detail``)."""
    if response.status_code < 400:
        return
    try:
        found = response.json()
    except ValueError:
        found = {"error": "http_error", "detail": response.text}
    raise ApiError(response.status_code, found.get("error", "http_error"), found.get("detail"))


class Client:
    """A synchronous client of one ``tether serve``.

    Args:
        base_url: ``http://127.0.0.1:PORT``.
        token: the server's bearer token (printed by ``tether serve``, stored in ``<data dir>/server.token``).
        timeout: seconds per request (the event stream reads without a timeout).
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0) -> None:
        self._http = httpx2.Client(
            base_url=base_url.rstrip("/"),
            headers={"authorization": f"Bearer {token}"},
            timeout=timeout,
        )
        self.last_event_id: int | None = None
        """The id of the last durable event :meth:`events` yielded (resume from it)."""

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """One API call; the JSON answer.

        Raises:
            ApiError: the server answered with an error status.
        """
        query = {k: v for k, v in params.items() if v is not None}
        if isinstance(body, bytes):  # raw bytes, sent as they are (tests send malformed bodies)
            response = self._http.request(method, path, content=body, params=query or None)
        else:
            response = self._http.request(method, path, json=body, params=query or None)
        _check(response)
        return response.json()

    # -- sessions ----------------------------------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/api/health")

    def sessions(self, *, limit: int | None = None, q: str | None = None) -> list[dict[str, Any]]:
        """The project's sessions, newest first; with ``q``, those whose title, text or a called tool's name holds
        it (each with its ``match``: ``field`` and ``text``)."""
        return self.request("GET", "/api/sessions", limit=limit, q=q)["sessions"]

    def create_session(
        self, *, directory: str | None = None, agent: str | None = None, title: str = ""
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"title": title}
        if directory is not None:
            body["directory"] = directory
        if agent is not None:
            body["agent"] = agent
        return self.request("POST", "/api/sessions", body)

    def session(self, session_id: str) -> dict[str, Any]:
        return self.request("GET", f"/api/sessions/{session_id}")

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        return self.request("GET", f"/api/sessions/{session_id}/messages")["messages"]

    def export(self, session_id: str) -> dict[str, Any]:
        return self.request("GET", f"/api/sessions/{session_id}/export")

    def output(self, session_id: str, output_id: str) -> str:
        """A call's retained full output: ``output_id`` is the last component of one of its ``output_paths``.

        Raises:
            ApiError: no such session or retained output (404).
        """
        response = self._http.get(f"/api/sessions/{session_id}/outputs/{output_id}")
        _check(response)
        return response.text

    def prompt(self, session_id: str, text: str, *, model: str | None = None) -> dict[str, Any]:
        """Start a turn (returns at once; follow it on :meth:`events`)."""
        body: dict[str, Any] = {"text": text}
        if model is not None:
            body["model"] = model
        return self.request("POST", f"/api/sessions/{session_id}/prompt", body)

    def cancel(self, session_id: str) -> bool:
        return self.request("POST", f"/api/sessions/{session_id}/cancel")["cancelled"]

    def delete(self, session_id: str) -> list[str]:
        return self.request("DELETE", f"/api/sessions/{session_id}")["deleted"]

    # -- asks --------------------------------------------------------------------------------------------------------

    def permissions(self, *, session: str | None = None) -> list[dict[str, Any]]:
        return self.request("GET", "/api/permissions", session=session)["requests"]

    def reply(
        self, request_id: str, reply: Literal["once", "always", "reject"], message: str | None = None
    ) -> dict[str, Any]:
        """Answer a permission request (``reject`` with ``message``: feedback the model reads)."""
        body: dict[str, Any] = {"reply": reply}
        if message is not None:
            body["message"] = message
        return self.request("POST", f"/api/permissions/{request_id}/reply", body)

    def preview(self, request_id: str) -> dict[str, Any]:
        """What a pending permission request would do: ``tool``, ``input`` and, for an edit, the ``patch`` (or the
        ``reason`` there is none)."""
        return self.request("GET", f"/api/permissions/{request_id}/preview")

    def questions(self, *, session: str | None = None) -> list[dict[str, Any]]:
        return self.request("GET", "/api/questions", session=session)["questions"]

    def answer(self, request_id: str, answers: Sequence[Sequence[str]]) -> dict[str, Any]:
        return self.request(
            "POST", f"/api/questions/{request_id}/reply", {"answers": [list(a) for a in answers]}
        )

    def dismiss(self, request_id: str) -> dict[str, Any]:
        return self.request("POST", f"/api/questions/{request_id}/reject")

    # -- project -----------------------------------------------------------------------------------------------------

    def catalog(self, *, agent: str | None = None) -> dict[str, Any]:
        return self.request("GET", "/api/catalog", agent=agent)

    def approvals(self) -> list[dict[str, Any]]:
        return self.request("GET", "/api/approvals")["approvals"]

    def mcp(self) -> list[dict[str, Any]]:
        return self.request("GET", "/api/mcp")["servers"]

    # -- events ------------------------------------------------------------------------------------------------------

    def events(
        self,
        *,
        session: str | None = None,
        last_event_id: int | None = None,
        read_timeout: float | None = None,
    ) -> EventStream:
        """Connect to the event stream (before this returns: what happens afterwards is sent to it); iterate the
        result, close it when done. Resumes after ``last_event_id`` (default: :attr:`last_event_id`, when set) from
        the server's durable log. ``read_timeout``: seconds without a byte (heartbeats count) before
        ``httpx2.ReadTimeout``; default none.

        Raises:
            ApiError: the server refused the stream.
        """
        headers: dict[str, str] = {}
        resume = last_event_id if last_event_id is not None else self.last_event_id
        if resume is not None:
            headers["last-event-id"] = str(resume)
        params = {"session": session} if session is not None else None
        timeout = httpx2.Timeout(10.0, read=read_timeout)
        request = self._http.build_request(
            "GET", "/api/events", params=params, headers=headers, timeout=timeout
        )
        response = self._http.send(request, stream=True)
        if response.status_code >= 400:
            response.read()
            response.close()
            _check(response)
        return EventStream(self, response)


class EventStream:
    """An open event stream: iterate it for :class:`Event` values; close it (or use ``with``) when done."""

    def __init__(self, client: Client, response: httpx2.Response) -> None:
        self._client = client
        self._response = response
        self._events: Generator[Event] = self._read()

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> Event:
        return next(self._events)

    def __enter__(self) -> EventStream:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._events.close()
        self._response.close()

    def _read(self) -> Generator[Event]:
        kind, data, seq = "message", "", None
        for line in self._response.iter_lines():
            if line == "":
                if data:
                    event = Event(kind, json.loads(data), seq)
                    if seq is not None:
                        self._client.last_event_id = seq
                    yield event
                kind, data, seq = "message", "", None
            elif line.startswith(":"):
                continue
            else:
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "event":
                    kind = value
                elif name == "data":
                    data = f"{data}\n{value}" if data else value
                elif name == "id" and value.isdigit():
                    seq = int(value)
