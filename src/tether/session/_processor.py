"""The processor: turns one step's normalized stream into durable parts, and owns the tool-part state machine.

Every state change is emitted at once (store + bus, law 7): a tool part is ``pending`` on ``tool-input-start``,
``running`` on the complete ``tool-call``, then ``completed`` or ``error`` when its settle returns. Text and reasoning
deltas go to the bus as they arrive and to the store coalesced (on block end, or every ``COALESCE_SECONDS``), so the
runner never writes per token. Transitions only move forward: a settled part ignores later events.

The processor does not run tools (``_dispatch`` does) and does not decide the loop (``_runner`` does).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from typing import Any, TypeVar

from .. import ids
from ..bus import Bus
from ..errors import ProviderError
from ..llm import (
    Event,
    ProviderErrorEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallEvent,
    ToolErrorEvent,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    ToolResultEvent,
    Usage,
)
from ..records import DurableEvent, Part, PartDelta, PartUpdated, ReasoningPart, TextPart, ToolPart
from ..records.internal import ToolErrorKind, now_ms, storable_event, storable_part
from ..storable import storable, visible
from ..store import SessionStore
from ..tools import Completed, Outcome, Text
from ..tools.internal import PermissionRecord, PermissionRecorder

__all__ = ["COALESCE_SECONDS", "Emitter", "StepProcessor"]

P = TypeVar("P", bound=Part)

_RECORDS_KEPT = 256
"""Permission records whose storable JSON a step keeps (all forgotten at once when full)."""

COALESCE_SECONDS = 0.2
"""Longest time streamed text stays only in memory before a coalesced store write."""


class Emitter:
    """Sends durable events to the store and the bus, and live events to the bus only."""

    __slots__ = ("_append", "_publish")

    def __init__(self, store: SessionStore, bus: Bus) -> None:
        self._append = store.append
        self._publish = bus.publish

    def durable(self, event: DurableEvent) -> None:
        """Store and publish ``event``, its outside text made storable first (law 12).

        A tool part is passed as it is: tool parts are written by a step's processor only, whose :meth:`StepProcessor.put`
        made it storable already (checking only what changed since the part's previous version).
        """
        if not (type(event) is PartUpdated and type(event.part) is ToolPart):
            event = storable_event(event)
        self._append(event)
        self._publish(event)

    def stored(self, event: PartUpdated) -> None:
        """Store and publish a part that its writer made storable already (:meth:`StepProcessor.put`, which walks
        only what changed): :meth:`durable` without walking it again (a step's start and finish parts)."""
        self._append(event)
        self._publish(event)

    def live(self, event: Any) -> None:
        self._publish(event)


class _Block:
    __slots__ = ("chunks", "flushed_at", "part_id")

    def __init__(self, part_id: str) -> None:
        self.part_id = part_id
        self.chunks: list[str] = []
        self.flushed_at = time.monotonic()


class StepProcessor:
    """The parts of one assistant message (one step), in creation order."""

    __slots__ = (
        "_blocks",
        "_emit",
        "_progress",
        "_records",
        "_tools",
        "emitter",
        "finish_reason",
        "message_id",
        "parts",
        "session_id",
        "usage",
    )

    def __init__(self, emitter: Emitter, *, session_id: str, message_id: str) -> None:
        self.emitter = emitter
        self._emit = emitter.stored  # every part written here is made storable here first
        self.session_id = session_id
        self.message_id = message_id
        self.parts: dict[str, Part] = {}
        self._tools: dict[str, str] = {}
        self._blocks: dict[str, _Block] = {}
        self._progress: dict[str, Mapping[str, Any]] = {}
        self._records: dict[int, tuple[PermissionRecord, dict[str, Any]]] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    # -- writing -----------------------------------------------------------------------------------------------------

    def put(self, part: P) -> P:
        """Emit a new or changed part, then record it (a write the store refuses leaves the part as it was).

        This is where a step's parts are written: every outside text in ``part`` is made storable here first
        (:func:`storable_part`, walking only the fields changed since the part's previous version), so the store,
        the bus and the step's history hold the same part. Returns the part as written.

        Raises:
            StoreError: the store refused the write.
        """
        part = storable_part(part, self.parts.get(part.id))
        self._emit(PartUpdated(part))
        self.parts[part.id] = part
        return part

    def tool(self, call_id: str) -> ToolPart | None:
        part_id = self._tools.get(call_id)
        if part_id is None:
            return None
        part = self.parts[part_id]
        assert isinstance(part, ToolPart)
        return part

    def tool_parts(self) -> list[ToolPart]:
        return [p for p in self.parts.values() if isinstance(p, ToolPart)]

    # -- stream events -----------------------------------------------------------------------------------------------

    def handle(self, event: Event) -> ToolCallEvent | None:
        """Apply one stream event; return the call to dispatch when a local tool call is complete.

        Raises:
            ProviderError: the event is a provider error.
        """
        # One dict lookup by the event's class (a step's four to six events walked a chain of up to 14 isinstance
        # checks each); a subclass of an event class is found through its bases, an unknown event is ignored.
        on = _ON.get(type(event))
        if on is None:
            on = next((_ON[base] for base in type(event).__mro__ if base in _ON), _ignore)
        return on(self, event)

    def _on_input(self, event: ToolInputStart | ToolInputDelta | ToolInputEnd) -> None:
        if event.id not in self._tools:
            self._pending(event.id, event.name)

    def _on_text_delta(self, event: TextDelta) -> None:
        self._delta(event.id, event.text, reasoning=False)

    def _on_reasoning_delta(self, event: ReasoningDelta) -> None:
        self._delta(event.id, event.text, reasoning=True)

    def _on_text_start(self, event: TextStart) -> None:
        self._start(event.id, reasoning=False, metadata=event.provider_metadata)

    def _on_reasoning_start(self, event: ReasoningStart) -> None:
        self._start(event.id, reasoning=True, metadata=event.provider_metadata)

    def _on_end(self, event: TextEnd | ReasoningEnd) -> None:
        self._end(event.id, event.provider_metadata)

    def _on_finish(self, event: StepFinish) -> None:
        self.finish_reason = event.reason
        self.usage = event.usage if self.usage is None or event.usage is None else self.usage + event.usage

    def _on_provider_error(self, event: ProviderErrorEvent) -> None:
        if isinstance(event.error, ProviderError):
            raise event.error
        raise ProviderError(event.message)

    def _start(self, block_id: str, *, reasoning: bool, metadata: Mapping[str, Any] | None) -> _Block:
        block = self._blocks.get(block_id)
        if block is not None:
            return block
        part_id = ids.ascending("prt")
        kind = ReasoningPart if reasoning else TextPart
        self.put(
            kind(
                id=part_id,
                session_id=self.session_id,
                message_id=self.message_id,
                text="",
                started=now_ms(),
                provider_metadata=metadata,
            )
        )
        block = self._blocks[block_id] = _Block(part_id)
        return block

    def _delta(self, block_id: str, text: str, *, reasoning: bool) -> None:
        text = visible(text)  # model text is made storable where it enters the session (law 12)
        block = self._blocks.get(block_id)
        if block is None:
            block = self._start(block_id, reasoning=reasoning, metadata=None)
        block.chunks.append(text)
        self.emitter.live(
            PartDelta(
                session_id=self.session_id,
                message_id=self.message_id,
                part_id=block.part_id,
                field="text",
                delta=text,
            )
        )
        now = time.monotonic()
        if now - block.flushed_at >= COALESCE_SECONDS:
            block.flushed_at = now
            self._flush(block)

    def _flush(self, block: _Block, **changes: Any) -> None:
        part = self.parts[block.part_id]
        assert isinstance(part, TextPart | ReasoningPart)
        text = part.text + "".join(block.chunks)
        block.chunks.clear()
        self.put(replace(part, text=text, **changes))

    def _end(self, block_id: str, metadata: Mapping[str, Any] | None) -> None:
        block = self._blocks.pop(block_id, None)
        if block is None:
            return
        changes: dict[str, Any] = {"ended": now_ms()}
        if metadata is not None:
            changes["provider_metadata"] = metadata
        self._flush(block, **changes)

    def close_blocks(self) -> None:
        """End every open text or reasoning block (at step end, also after errors and cancellation)."""
        for block_id in list(self._blocks):
            self._end(block_id, None)

    # -- tool parts --------------------------------------------------------------------------------------------------

    def _pending(self, call_id: str, name: str) -> ToolPart:
        part = ToolPart(
            id=ids.ascending("prt"),
            session_id=self.session_id,
            message_id=self.message_id,
            call_id=call_id,
            tool=name,
            state="pending",
        )
        self.put(part)
        self._tools[call_id] = part.id
        return part

    def _call(self, event: ToolCallEvent) -> ToolCallEvent | None:
        part = self.tool(event.id)
        if part is not None and part.settled:
            return None
        raw = event.input if event.invalid is not None and isinstance(event.input, str) else None
        fields: dict[str, Any] = {
            "tool": event.name,
            "state": "running",
            "input": None if raw is not None else event.input,
            "raw": raw,
            "started": now_ms(),
            "provider_executed": event.provider_executed,
            "provider_metadata": event.provider_metadata,
        }
        if part is None:
            part = ToolPart(
                id=ids.ascending("prt"),
                session_id=self.session_id,
                message_id=self.message_id,
                call_id=event.id,
                **fields,
            )
            self.put(part)
            self._tools[event.id] = part.id
        else:
            if part.state == "running":
                fields.pop("started")
            self.put(_evolve(part, **fields))
        return None if event.provider_executed else event

    def settle(self, call_id: str, outcome: Outcome) -> ToolPart | None:
        """Write the outcome of a call (only if its part is still unsettled)."""
        part = self.tool(call_id)
        if part is None or part.settled:
            return None
        if isinstance(outcome, Completed):
            settled = _evolve(
                part,
                state="completed",
                content=outcome.content,
                metadata=outcome.metadata,
                title=outcome.title,
                output_paths=outcome.output_paths,
                ended=now_ms(),
            )
        else:
            settled = _evolve(
                part,
                state="error",
                error=outcome.error,
                error_kind=outcome.kind,
                content=outcome.partial,
                metadata=outcome.metadata if outcome.metadata is not None else part.metadata,
                output_paths=outcome.output_paths,
                started=part.started if part.started is not None else now_ms(),
                ended=now_ms(),
            )
        return self.put(settled)

    def note_progress(self, call_id: str, update: Mapping[str, Any]) -> None:
        """Remember a running call's last progress update that carries ``output`` (the tail of what it printed).

        An aborted call keeps that output on its part (bounded, see :func:`_partial_output`), as OpenCode keeps a
        cancelled shell's output: cancellation is not a result (law 3), but what the call showed so far is a fact.
        """
        if isinstance(update.get("output"), str):
            self._progress[call_id] = update

    def fail_unsettled(self, error: str, *, kind: ToolErrorKind, interrupted: bool) -> int:
        """Turn every unsettled tool part into ``error`` (cancellation, a failed stream). Returns how many.

        An interrupted part keeps the output its call last reported through progress, as partial content.

        The step is ending, so every part is failed in memory even when the store refuses a write; the first refused
        write is raised after all of them.

        Raises:
            StoreError: the store refused a write.
        """
        count = 0
        now = now_ms()
        refused: Exception | None = None
        for part in self.tool_parts():
            if part.settled:
                continue
            count += 1
            update = self._progress.get(part.call_id) if interrupted else None
            failed = self.parts[part.id] = storable_part(
                _evolve(
                    part,
                    state="error",
                    error=error,
                    error_kind=kind,
                    interrupted=interrupted,
                    content=part.content if update is None else _partial_output(update),
                    started=part.started if part.started is not None else now,
                    ended=now,
                ),
                part,
            )
            try:
                self._emit(PartUpdated(failed))
            except Exception as exc:
                refused = refused or exc
        if refused is not None:
            raise refused
        return count

    def recorder(self, call_id: str) -> PermissionRecorder:
        """The permission recorder of one call of this step (``ToolContext.record_permission``)."""

        def record(record: PermissionRecord) -> None:
            self.record_permission(call_id, record)

        return record

    def record_permission(self, call_id: str, record: PermissionRecord) -> None:
        """Write a permission decision (a request, a decision, a reply) on the call's part, at once (law 7).

        A settled part ignores it (forward only).

        Raises:
            StoreError: the store refused the write (the call then fails before it acts: law 12).
        """
        part = self.tool(call_id)
        if part is None or part.settled:
            return
        stored = self._records.get(id(record))
        if stored is None or stored[0] is not record:
            # A record the permission service hands again (a remembered decision: the doom-loop check of 1,000
            # identical calls) is encoded and made storable once; its JSON is never changed once made.
            stored = (record, storable(record.to_json()))
            if len(self._records) >= _RECORDS_KEPT:
                self._records.clear()
            self._records[id(record)] = stored  # the record kept alive: its id is not reused meanwhile
        # Only the permissions changed, by one storable record appended: what ``put`` would check is checked.
        updated = _evolve(part, permissions=(*part.permissions, stored[1]))
        self._emit(PartUpdated(updated))
        self.parts[updated.id] = updated

    def _hosted_result(self, event: ToolResultEvent) -> None:
        part = self.tool(event.id)
        if part is None or part.settled:
            return
        result = event.result
        text = result if isinstance(result, str) else _json(result)
        self.put(_evolve(part, state="completed", content=(Text(text),), ended=now_ms()))

    def _hosted_error(self, event: ToolErrorEvent) -> None:
        part = self.tool(event.id)
        if part is None or part.settled:
            return
        self.put(_evolve(part, state="error", error=event.message, error_kind="provider", ended=now_ms()))


def _ignore(processor: StepProcessor, event: Any) -> None:
    """A stream event the processor has nothing to do with (``StepStart``, or a kind it does not know)."""


_ON: dict[type[Any], Callable[[StepProcessor, Any], ToolCallEvent | None]] = {
    ToolInputStart: StepProcessor._on_input,
    ToolInputDelta: StepProcessor._on_input,
    ToolInputEnd: StepProcessor._on_input,
    ToolCallEvent: StepProcessor._call,
    TextDelta: StepProcessor._on_text_delta,
    ReasoningDelta: StepProcessor._on_reasoning_delta,
    TextStart: StepProcessor._on_text_start,
    ReasoningStart: StepProcessor._on_reasoning_start,
    TextEnd: StepProcessor._on_end,
    ReasoningEnd: StepProcessor._on_end,
    StepFinish: StepProcessor._on_finish,
    ToolResultEvent: StepProcessor._hosted_result,
    ToolErrorEvent: StepProcessor._hosted_error,
    ProviderErrorEvent: StepProcessor._on_provider_error,
    StepStart: _ignore,
}
"""What :meth:`StepProcessor.handle` does with each stream event class."""


_TOOL_FIELDS = frozenset(f.name for f in fields(ToolPart))
assert not hasattr(ToolPart, "__post_init__"), "_evolve copies fields without running __init__"


def _evolve(part: ToolPart, **changes: Any) -> ToolPart:
    """``dataclasses.replace(part, **changes)`` for the tool part, in a fifth of the time (2-3 per call).

    ``replace`` checks every field's kind and whether it is an init field, then runs ``__init__`` with all 21 fields
    (4.8 µs against 1.0 µs here). A tool part has only plain init fields, no ``__post_init__`` and no ``__slots__``,
    so its state is its instance ``__dict__``: the copy is a new instance whose dict is the old one updated with
    ``changes``, filled before anything else can see the new part. Every field is copied, so a field added to
    ``ToolPart`` is kept without a change here.
    """
    if not _TOOL_FIELDS.issuperset(changes):  # what replace() refuses, refused alike
        unknown = sorted(set(changes) - _TOOL_FIELDS)
        raise TypeError(f"ToolPart has no field {unknown[0]!r}")
    new = object.__new__(ToolPart)
    state = new.__dict__
    state.update(part.__dict__)
    state.update(changes)
    return new


PARTIAL_OUTPUT_LIMIT = 30_000
"""Characters of an aborted call's last reported output kept on its part (the tail)."""


def _partial_output(update: Mapping[str, Any]) -> tuple[Text, ...]:
    """The tail of a progress update's ``output``, with a marker when earlier output is not kept."""
    output: str = update["output"]
    kept = output[-PARTIAL_OUTPUT_LIMIT:]
    total = update.get("bytes")
    clipped = len(kept) < len(output) or (
        isinstance(total, int) and total > len(kept.encode("utf-8", "surrogatepass"))
    )
    if not kept:
        return ()
    return (Text(("[... earlier output not kept ...]\n" if clipped else "") + kept),)


def _json(value: Any) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)
