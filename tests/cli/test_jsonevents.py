"""The JSON event writer in process: each bus event of the session becomes schema-valid lines; others are ignored."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from tether.cli._jsonevents import JsonEvents, events_adapter
from tether.cli._sessions import _remove_outputs
from tether.llm import Usage
from tether.permissions import (
    Decision,
    PendingRequest,
    PermissionAsked,
    PermissionDecided,
    PermissionReplied,
    PermissionRequest,
    PermissionSource,
    Rule,
    Verdict,
)
from tether.session import PartDelta, PartUpdated, ReasoningPart, StepFinishPart, TextPart, ToolPart

S = "ses_1"


def lines(out: io.StringIO) -> list[dict[str, Any]]:
    parsed = [json.loads(line) for line in out.getvalue().splitlines()]
    for event in parsed:
        events_adapter().validate_python(event)
    return parsed


def tool(state: str, *, session: str = S, **extra: Any) -> ToolPart:
    return ToolPart(
        id="prt_t", session_id=session, message_id="msg_1", call_id="c1", tool="bash", state=state, **extra
    )  # type: ignore[arg-type]


def request(session: str = S) -> PermissionRequest:
    return PermissionRequest(
        session_id=session,
        action="bash",
        resources=["rm -rf build"],
        source=PermissionSource(message_id="msg_1", call_id="c1"),
    )


def test_reasoning_whole_texts_and_tool_states_become_lines() -> None:
    out = io.StringIO()
    view = JsonEvents(S, decided_by="user", out=out)
    reasoning = ReasoningPart(id="prt_r", session_id=S, message_id="msg_1", text="", started=1)
    view.on_event(PartUpdated(reasoning))
    view.on_event(PartDelta(session_id=S, message_id="msg_1", part_id="prt_r", field="text", delta="hmm"))
    # a provider that sends a whole text at once: the ended part is its one delta
    whole = TextPart(id="prt_w", session_id=S, message_id="msg_1", text="all at once", started=1, ended=2)
    view.on_event(PartUpdated(whole))
    view.on_event(PartUpdated(whole))  # seen again: not repeated
    view.on_event(PartUpdated(tool("pending")))  # input not complete yet: nothing
    view.on_event(
        PartUpdated(tool("error", input={"command": "x"}, error="bad input", error_kind="invalid_input"))
    )
    view.on_event(PartUpdated(tool("error", provider_executed=True)))
    view.on_event(
        PartUpdated(
            StepFinishPart(id="prt_s", session_id=S, message_id="msg_1", reason="stop", usage=Usage())
        )
    )
    got = lines(out)
    assert [(e["type"], e.get("delta")) for e in got[:2]] == [("reasoning", "hmm"), ("text", "all at once")]
    assert [e["type"] for e in got[2:]] == ["tool_start", "tool_end", "step"]
    assert got[3]["status"] == "failed" and got[3]["error_kind"] == "invalid_input"


def test_events_of_other_sessions_are_ignored() -> None:
    out = io.StringIO()
    view = JsonEvents(S, decided_by="user", out=out)
    other = "ses_2"
    view.on_event(PartDelta(session_id=other, message_id="m", part_id="p", field="text", delta="x"))
    view.on_event(PartUpdated(tool("completed", session=other)))
    decision = Decision(action="bash", effect="ask", verdicts=())
    view.on_event(
        PermissionAsked(
            request=PendingRequest(id="per_1", request=request(other), project="/", decision=decision)
        )
    )
    view.on_event(PermissionReplied(session_id=other, request_id="per_1", reply="once"))
    view.on_event(PermissionReplied(session_id=S, request_id="per_unknown", reply="once"))
    view.on_event(PermissionDecided(request=request(other), decision=decision))
    view.on_event(object())
    assert out.getvalue() == ""


def test_permission_lines_name_the_rule_or_who_replied() -> None:
    out = io.StringIO()
    view = JsonEvents(S, decided_by="--deny-asks", out=out)
    asked = Decision(
        action="bash",
        effect="ask",
        verdicts=(Verdict(resource="rm -rf build", rule=Rule("*", "*", "ask"), source="default"),),
    )
    view.on_event(
        PermissionAsked(request=PendingRequest(id="per_1", request=request(), project="/", decision=asked))
    )
    view.on_event(PermissionReplied(session_id=S, request_id="per_1", reply="reject"))
    denied = Decision(
        action="bash",
        effect="deny",
        verdicts=(Verdict(resource="rm -rf build", rule=Rule("bash", "rm *", "deny"), source="config"),),
    )
    view.on_event(PermissionDecided(request=request(), decision=denied))
    view.on_event(PermissionDecided(request=request(), decision=asked))  # no rule matched: rule is null
    view.on_event(
        PermissionDecided(request=request(), decision=Decision(action="bash", effect="allow", verdicts=()))
    )
    first, replied, by_rule, by_default, empty = lines(out)
    assert first["type"] == "permission_asked" and first["call"] == "c1"
    assert replied["decision"] == "deny" and replied["by"] == "--deny-asks" and replied["request"] == "per_1"
    assert by_rule["rule"] == {"action": "bash", "resource": "rm *", "effect": "deny"}
    assert by_rule["rule_source"] == "config"
    assert by_default["rule"] is None and by_default["rule_source"] is None
    assert empty["rule"] is None and empty["decision"] == "allow"


def test_removing_outputs_never_follows_a_symlink_and_reports_failures(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("precious", encoding="utf-8")
    link = tmp_path / "ses_link"
    link.symlink_to(outside, target_is_directory=True)
    real = tmp_path / "ses_real"
    real.mkdir()
    (real / "tool_1").write_text("x", encoding="utf-8")
    not_a_directory = tmp_path / "ses_file"
    not_a_directory.write_text("x", encoding="utf-8")
    failures = _remove_outputs([link, real, tmp_path / "ses_missing", not_a_directory])
    assert not link.exists() and (outside / "keep.txt").read_text(encoding="utf-8") == "precious"
    assert not real.exists()
    assert len(failures) == 1 and "could not remove" in failures[0] and "ses_file" in failures[0]


def test_whole_text_writes_each_block_once_and_the_final_text_is_the_last_step_s() -> None:
    out = io.StringIO()
    view = JsonEvents(S, decided_by="user", out=out, whole=True)
    view.on_event(PartDelta(session_id=S, message_id="msg_1", part_id="prt_a", field="text", delta="Fir"))
    first = TextPart(id="prt_a", session_id=S, message_id="msg_1", text="First step.", started=1, ended=2)
    view.on_event(PartUpdated(first))
    note = TextPart(id="prt_n", session_id=S, message_id="msg_2", text="(synthetic)", ended=3, synthetic=True)
    view.on_event(PartUpdated(note))
    for n, text in enumerate(("Last ", "step."), start=1):
        view.on_event(
            PartUpdated(TextPart(id=f"prt_{n}", session_id=S, message_id="msg_3", text=text, ended=4))
        )
    assert [e["delta"] for e in lines(out)] == ["First step.", "(synthetic)", "Last ", "step."]
    assert view.final_text == "Last step."
    assert JsonEvents(S, decided_by="user", out=io.StringIO()).final_text == ""
