"""The event stream of ``tether serve``: the bus and the durable event log, as server-sent events.

Two kinds of frame, one JSON shape per concept (the keys of ``tether run --format json``'s events, docs/cli.md, where
the concept is the same: ``text``, ``reasoning``, ``permission_asked``, ``permission_decided``, ``question_asked``,
``question_answered``, ``step``, ``error``):

* **durable** frames come from the store's ``events`` log and carry its sequence number as the SSE ``id``:
  ``part_updated`` (``part``: the stored part, as ``GET .../messages`` returns it), ``message_updated``
  (``message``) and ``session_updated`` (``info``). A client that reconnects with ``Last-Event-ID`` gets every
  durable event after it from the store (an indexed range, law 10): nothing durable is lost across a reconnect.
* **live** frames come from the bus and have no ``id``: text and reasoning deltas, ``status`` (busy, retry, idle),
  permission and question asks and their answers, ``step`` (a step finished), a background turn's ``error``.
  What is still pending when a client connects (permission requests, questions) is sent to it first, so a
  reconnect loses no open ask either.

Only the served project's events go out (:class:`~._project.ServedProject`), though the store is shared with every
project of the data directory: the log is read joined to each event's session (the store's
``project_events_after``, indexed by key), and a live frame goes out only when its session runs in this process for
the served project. A ``session`` filter naming another project's session streams nothing, as for a missing one.

One task (:meth:`EventHub.run`) tails the log, woken by the bus's durable events, and encodes each frame once for
every client. Each client has a bounded queue: a publisher never waits for a client; a client whose queue is full
(it reads slower than events come) is dropped with a last ``dropped`` frame, and reconnects with its
``Last-Event-ID``. Heartbeats (an SSE comment) keep idle connections and proxies alive.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal

import anyio

from .._record import record
from .._wire import decided_json, permission_asked_json, question_asked_json, usage_json
from ..permissions import PermissionAsked, PermissionDecided, PermissionReplied
from ..session import (
    MessageUpdated,
    PartDelta,
    PartUpdated,
    QuestionAsked,
    QuestionReplied,
    ReasoningPart,
    SessionStatus,
    SessionUpdated,
    StepFinishPart,
)

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream, ObjectSendStream

    from ..store import PostgresStore, SQLiteStore
    from ._project import ServedProject

__all__ = ["DURABLE_TYPES", "Client", "EventHub", "Frame", "encode"]

DURABLE_TYPES = {
    "message.part.updated": ("part_updated", "part"),
    "message.updated": ("message_updated", "message"),
    "session.updated": ("session_updated", "info"),
}
"""The store's event type -> the frame's ``type`` and the key that holds the stored JSON."""
_PAGE = 500


@record(kw_only=False)
class Frame:
    """One encoded event: its ``seq`` (durable) or ``None`` (live), its session, and the SSE bytes."""

    seq: int | None
    session_id: str
    data: bytes


def _dumps(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from outside text: a \\u escape, never lost
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=repr)
    return text


def encode(kind: str, body: str, seq: int | None = None) -> bytes:
    """The SSE bytes of one event (``body`` is one line of JSON)."""
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}event: {kind}\ndata: {body}\n\n".encode()


def _live(payload: dict[str, Any]) -> Frame:
    return Frame(None, payload["session"], encode(payload["type"], _dumps(payload)))


def durable_frame(
    seq: int, session_id: str, store_type: str, data: str, message_id: str | None
) -> Frame | None:
    """The frame of one row of the event log (``None``: a type the stream does not carry)."""
    found = DURABLE_TYPES.get(store_type)
    if found is None:
        return None
    kind, key = found
    head: dict[str, Any] = {"v": 1, "type": kind, "session": session_id, "seq": seq}
    if kind == "part_updated":
        head["message_id"] = message_id
    elif kind == "session_updated":
        info = json.loads(data)
        if isinstance(
            info.get("rules"), str
        ):  # the row's column (JSON text) in the log: the API's shape is a list
            info["rules"] = json.loads(info["rules"])
        data = _dumps(info)
    text = _dumps(head)
    return Frame(seq, session_id, encode(kind, f"{text[:-1]},{json.dumps(key)}:{data}}}", seq))


class Client:
    """One connected stream: its session filter, its bounded queue, and the last durable ``seq`` it was sent."""

    __slots__ = ("_receive", "_send", "dropped", "sent_seq", "session_id")

    def __init__(self, session_id: str | None, size: int) -> None:
        self.session_id = session_id
        self.sent_seq = 0
        self.dropped = False
        send: ObjectSendStream[Frame]
        receive: ObjectReceiveStream[Frame]
        send, receive = anyio.create_memory_object_stream[Frame](size)
        self._send, self._receive = send, receive

    def offer(self, frame: Frame) -> None:
        """Queue ``frame`` without waiting; a full queue drops this client (never the publisher's problem)."""
        if self.dropped or (self.session_id is not None and frame.session_id != self.session_id):
            return
        try:
            self._send.send_nowait(frame)
        except anyio.WouldBlock:
            self.dropped = True
            self._send.close()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.dropped = True

    async def next(self, wait: float) -> Frame | Literal[False] | None:
        """The next frame; ``None`` after ``wait`` seconds without one; ``False`` once the client is dropped."""
        with anyio.move_on_after(wait):
            try:
                return await self._receive.receive()
            except anyio.EndOfStream:
                return False
        return None

    def close(self) -> None:
        self._send.close()
        self._receive.close()


class EventHub:
    """Fans the bus and the event log out to the connected clients (see the module docstring).

    Args:
        store: the runtime's store (its ``events`` log).
        project: what is shown: the served project's events and pending asks (what a new client is sent first).
        queue_size: the most frames a client may have waiting before it is dropped.
    """

    def __init__(
        self,
        store: SQLiteStore | PostgresStore,
        project: ServedProject,
        *,
        queue_size: int = 1024,
    ) -> None:
        self._store = store
        self._project = project
        self._queue_size = queue_size
        self._clients: set[Client] = set()
        self._wake = anyio.Event()
        self._seq = 0
        self._behind = False  # events were left unread while no client was connected
        self._dirty = False  # a durable event was published that the tail has not read yet
        self._reading = False
        self._deferred: list[Frame] = []  # live frames waiting for the durable events published before them
        self._asked: dict[str, dict[str, Any]] = {}
        self._reasoning: set[str] = set()
        self._steps: dict[str, int] = {}

    @property
    def clients(self) -> int:
        """The connected clients that are not dropped."""
        return sum(not c.dropped for c in self._clients)

    def _fanout(self, frame: Frame) -> None:
        for client in self._clients:
            client.offer(frame)

    def publish(self, payload: dict[str, Any]) -> None:
        """Send a live frame (a server-made event such as a background turn's ``error``) to every client, if its
        session is one of the served project's (every live frame passes here).

        In order: while durable events published before it are not yet read from the log, the frame waits for them
        (a client sees a call's completed part before the ``idle`` status that follows it).
        """
        if not self._clients or not self._project.owns(payload["session"]):
            return
        frame = _live(payload)
        if self._dirty or self._reading or self._deferred:
            self._deferred.append(frame)
        else:
            self._fanout(frame)

    def _durable(self) -> None:
        self._dirty = True
        self._wake.set()

    # -- the bus -----------------------------------------------------------------------------------------------------

    def on_event(self, event: Any) -> None:
        """The bus subscriber (``"*"``): quick, never blocks, never awaits."""
        if isinstance(event, PartDelta):
            if self._clients:
                kind = "reasoning" if event.part_id in self._reasoning else "text"
                self.publish(
                    {
                        "v": 1,
                        "type": kind,
                        "session": event.session_id,
                        "part": event.part_id,
                        "delta": event.delta,
                    }
                )
        elif isinstance(event, PartUpdated):
            self._durable()
            part = event.part
            if isinstance(part, ReasoningPart):
                if part.ended is None:
                    self._reasoning.add(part.id)
                else:
                    self._reasoning.discard(part.id)
            elif isinstance(part, StepFinishPart):
                index = self._steps[part.session_id] = self._steps.get(part.session_id, 0) + 1
                self.publish(
                    {
                        "v": 1,
                        "type": "step",
                        "session": part.session_id,
                        "index": index,
                        "finish": part.reason,
                        "usage": usage_json(part.usage),
                    }
                )
        elif isinstance(event, SessionStatus):
            if event.status == "busy":
                self._steps[event.session_id] = 0
            elif event.status == "idle":
                self._steps.pop(event.session_id, None)
                # a cancelled turn's asks are withdrawn without an event: none of this session's is pending now
                for request_id in [r for r, a in self._asked.items() if a["session"] == event.session_id]:
                    del self._asked[request_id]
            self.publish(
                {
                    "v": 1,
                    "type": "status",
                    "session": event.session_id,
                    "status": event.status,
                    "attempt": event.attempt,
                    "message": event.message,
                }
            )
        elif isinstance(event, PermissionAsked):
            asked = permission_asked_json(event.request)
            self._asked[event.request.id] = asked
            self.publish(asked)
        elif isinstance(event, PermissionReplied):
            asked = self._asked.pop(event.request_id, None)
            if asked is not None:
                self.publish(
                    {
                        **asked,
                        "type": "permission_decided",
                        "decision": "deny" if event.reply == "reject" else "allow",
                        "by": "user",
                        "reply": event.reply,
                        "rule": None,
                        "rule_source": None,
                    }
                )
        elif isinstance(event, PermissionDecided):
            if self._clients:
                self.publish(decided_json(event.request, event.decision))
        elif isinstance(event, QuestionReplied):
            self.publish(
                {
                    "v": 1,
                    "type": "question_answered",
                    "session": event.session_id,
                    "request": event.request_id,
                    "answers": None if event.answers is None else [list(a) for a in event.answers],
                }
            )
        elif isinstance(event, MessageUpdated | SessionUpdated):
            self._durable()

    def on_question(self, event: QuestionAsked) -> None:
        """The bus subscriber of :class:`QuestionAsked` by its class: it tells the question service that questions
        are answered here (through the API), so the ``question`` tool asks instead of failing."""
        self.publish(question_asked_json(event.request))

    # -- the log -----------------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Tail the event log until cancelled: each durable event is read once and offered to every client."""
        self._seq = await self._store.last_seq()
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            self._dirty = False
            if not self._clients:
                # nobody to tell: no read at all (the store's thread serves the runtime); the next client to
                # connect moves the tail to the end of the log first
                self._deferred.clear()
                self._behind = True
                continue
            before, self._deferred = self._deferred, []
            self._reading = True
            try:
                while True:
                    # the read is queued behind every append made so far: it sees each durable event published;
                    # the tail moves past the events it covered, other projects' included, never reading them again
                    rows, self._seq = await self._store.project_events_after(
                        self._seq, project=self._project.root, limit=_PAGE
                    )
                    for seq, session_id, kind, data, message_id in rows:
                        frame = durable_frame(seq, session_id, kind, data, message_id)
                        if frame is not None:
                            self._fanout(frame)
                    if len(rows) < _PAGE:
                        break
            finally:
                self._reading = False
            for frame in before:
                self._fanout(frame)
            if not self._dirty:  # nothing durable came meanwhile: what waited during the read goes out now
                during, self._deferred = self._deferred, []
                for frame in during:
                    self._fanout(frame)

    async def connect(self, session_id: str | None, last_event_id: int | None) -> Client:
        """Register a client (before its response starts: what happens from now on is queued for it)."""
        if self._behind and not self._clients:
            self._behind = False
            self._seq = await self._store.last_seq()
        client = Client(session_id, self._queue_size)
        client.sent_seq = self._seq if last_event_id is None else last_event_id
        self._clients.add(client)
        return client

    async def stream(self, client: Client, *, replay: bool, heartbeat: float) -> AsyncIterator[bytes]:
        """The SSE bytes for ``client`` until it disconnects or is dropped (``replay``: the log after its
        ``Last-Event-ID`` first)."""
        try:
            yield b"retry: 1000\n\n"
            while replay:
                rows, covered = await self._store.project_events_after(
                    client.sent_seq, project=self._project.root, session_id=client.session_id, limit=_PAGE
                )
                for seq, sid, kind, data, message_id in rows:
                    frame = durable_frame(seq, sid, kind, data, message_id)
                    if frame is not None:
                        yield frame.data
                client.sent_seq = covered
                replay = len(rows) == _PAGE
            requests, questions = self._project.pending(client.session_id)
            for request in requests:
                yield _live(permission_asked_json(request)).data
            for question in questions:
                yield _live(question_asked_json(question)).data
            while True:
                frame = await client.next(heartbeat)
                if frame is False:
                    yield encode("dropped", _dumps({"v": 1, "type": "dropped", "reason": "slow client"}))
                    return
                if frame is None:
                    yield b": ping\n\n"
                elif frame.seq is None or frame.seq > client.sent_seq:
                    if frame.seq is not None:
                        client.sent_seq = frame.seq
                    yield frame.data
        finally:
            self._clients.discard(client)
            client.close()
