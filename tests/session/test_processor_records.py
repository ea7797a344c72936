"""A call's permission records on its tool part: written at once, storable, and a record handed again (a remembered
decision) encoded once."""

from __future__ import annotations

from tether.bus import Bus
from tether.llm import ToolCallEvent
from tether.records import PartUpdated, ToolPart
from tether.rules import Rule
from tether.session.internal import Emitter, StepProcessor
from tether.testing import MemoryStore
from tether.tools import Completed, Text
from tether.tools.internal import PermissionRecord, Verdict

ODD = "a\ud800b"


def _processor() -> tuple[StepProcessor, MemoryStore]:
    store = MemoryStore()
    processor = StepProcessor(Emitter(store, Bus()), session_id="ses_1", message_id="msg_1")
    for call_id in ("call_1", "call_2"):
        processor.handle(ToolCallEvent(id=call_id, name="read", input={"path": "notes.txt"}))
    return processor, store


def _record(resource: str) -> PermissionRecord:
    rule = Rule("read", "*", "allow")
    return PermissionRecord(
        action="read",
        resources=(resource,),
        effect="allow",
        verdicts=(Verdict(resource=resource, rule=rule, source="config"),),
    )


def test_a_record_handed_again_is_written_on_each_call_as_one_json() -> None:
    processor, store = _processor()
    record = _record("notes.txt")
    processor.record_permission("call_1", record)
    processor.record_permission("call_2", record)
    processor.record_permission("call_1", _record("other.txt"))
    first, second = (processor.tool(c) for c in ("call_1", "call_2"))
    assert first is not None and second is not None
    assert first.permissions[0] is second.permissions[0]  # encoded and checked once
    assert [r["resources"] for r in first.permissions] == [["notes.txt"], ["other.txt"]]
    assert first.permissions[0] == record.to_json()
    written = [e.part for e in store.events if isinstance(e, PartUpdated)]
    assert [len(p.permissions) for p in written if isinstance(p, ToolPart)] == [0, 0, 1, 1, 2]
    assert written[-1] is first  # the store, the bus and the step hold the same part


def test_a_record_with_outside_text_is_written_storable() -> None:
    processor, store = _processor()
    record = _record(ODD)
    processor.record_permission("call_1", record)
    processor.record_permission("call_2", record)
    shown = "a\\ud800b"
    for call_id in ("call_1", "call_2"):
        part = processor.tool(call_id)
        assert part is not None
        (stored,) = part.permissions
        assert stored["resources"] == [shown]
        assert stored["decision"]["verdicts"][0]["resource"] == shown
    last = store.events[-1]
    assert isinstance(last, PartUpdated) and isinstance(last.part, ToolPart)
    assert last.part.permissions[0]["resources"] == [shown]


def test_a_settled_part_ignores_a_late_record() -> None:
    processor, store = _processor()
    processor.settle("call_1", Completed(output=None, content=(Text("ok"),)))
    count = len(store.events)
    processor.record_permission("call_1", _record("notes.txt"))
    processor.record_permission("call_unknown", _record("notes.txt"))
    assert len(store.events) == count
