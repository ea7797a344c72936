"""The processor's copy of a tool part (``_evolve``): exactly what ``dataclasses.replace`` gives, for every field."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest

from tether.content import Text
from tether.records._model import ToolPart
from tether.session._processor import _evolve

FULL = ToolPart(
    id="prt_1",
    session_id="ses_1",
    message_id="msg_1",
    call_id="call_1",
    tool="read",
    state="running",
    input={"path": "a.txt"},
    raw="{",
    content=(Text("partial"),),
    metadata={"k": 1},
    title="a.txt",
    output_paths=("/tmp/out",),
    started=1,
    ended=2,
    error="boom",
    error_kind="tool",
    interrupted=True,
    permissions=({"action": "read"},),
    provider_executed=True,
    provider_metadata={"p": {"q": 1}},
)
OTHER: dict[str, Any] = {
    "id": "prt_2",
    "session_id": "ses_2",
    "message_id": "msg_2",
    "call_id": "call_2",
    "tool": "write",
    "state": "completed",
    "input": {"path": "b.txt"},
    "raw": None,
    "content": (),
    "metadata": None,
    "title": None,
    "output_paths": (),
    "started": None,
    "ended": None,
    "error": None,
    "error_kind": None,
    "interrupted": False,
    "permissions": (),
    "provider_executed": False,
    "provider_metadata": None,
    "type": "tool",
}


def test_every_tool_part_field_is_kept_or_changed_like_replace() -> None:
    names = [f.name for f in fields(ToolPart)]
    assert sorted(OTHER) == sorted(names), "a new ToolPart field: give it a value here"
    assert _evolve(FULL) == FULL and _evolve(FULL) is not FULL
    for name in names:
        changed = _evolve(FULL, **{name: OTHER[name]})
        assert changed == replace(FULL, **{name: OTHER[name]})
        assert getattr(changed, name) == OTHER[name]
    assert _evolve(FULL, **OTHER) == replace(FULL, **OTHER)


def test_the_copy_is_a_new_record_and_the_original_is_unchanged() -> None:
    before = dict(FULL.__dict__)
    copy = _evolve(FULL, state="completed")
    assert copy is not FULL and copy.__dict__ is not FULL.__dict__
    assert FULL.__dict__ == before
    assert copy.settled and copy == replace(FULL, state="completed")


def test_an_unknown_field_is_refused_like_replace() -> None:
    with pytest.raises(TypeError, match="stat"):
        _evolve(FULL, stat="completed")
    with pytest.raises(TypeError):
        replace(FULL, stat="completed")  # type: ignore[call-arg]


class _Appended:
    """A store that keeps what it is given (the processor's writes)."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def append(self, event: Any) -> None:
        self.events.append(event)


def test_each_stream_event_kind_is_handled_by_its_class_a_subclass_as_its_base_and_an_unknown_one_ignored() -> (
    None
):
    from tether.bus import Bus
    from tether.errors import ProviderError
    from tether.llm import (
        ProviderErrorEvent,
        StepFinish,
        StepStart,
        TextDelta,
        TextEnd,
        TextStart,
        ToolCallEvent,
    )
    from tether.records import TextPart
    from tether.session._processor import Emitter, StepProcessor

    class LateCall(ToolCallEvent):  # an adapter's own subclass of a known event
        pass

    store = _Appended()
    processor = StepProcessor(Emitter(store, Bus()), session_id="ses_1", message_id="msg_1")  # type: ignore[arg-type]
    assert processor.handle(StepStart()) is None
    processor.handle(TextStart(id="t"))
    processor.handle(TextDelta(id="t", text="hi"))
    processor.handle(TextEnd(id="t"))
    call = LateCall(id="c1", name="noop", input={})
    assert (
        processor.handle(call) is call
    )  # handled as a ToolCallEvent: its part is running, the call dispatched
    assert processor.handle(object()) is None  # type: ignore[arg-type]  # not a stream event: nothing happens
    processor.handle(StepFinish(reason="tool-calls", usage=None))
    assert processor.finish_reason == "tool-calls"
    texts = [p for p in processor.parts.values() if isinstance(p, TextPart)]
    assert [t.text for t in texts] == ["hi"] and processor.tool("c1").state == "running"  # type: ignore[union-attr]
    with pytest.raises(ProviderError, match="overloaded"):
        processor.handle(ProviderErrorEvent(message="overloaded"))
