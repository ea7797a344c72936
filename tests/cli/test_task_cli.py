"""``tether run`` with the task tool: the child session under the parent's call in ``session show``, the child's
permission requests asked on the same terminal (labelled with the child) and streamed as JSON events."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from tether.cli._jsonevents import events_adapter

TASK = {
    "name": "task",
    "arguments": {
        "description": "read notes",
        "prompt": "Read notes.txt and report.",
        "subagent_type": "explore",
    },
}
READ = {"name": "read", "arguments": {"path": "notes.txt"}}


def _script(cli: Any) -> str:
    # The script's step k answers a request whose session history holds k assistant messages, so parent and child
    # both play it from the start: the parent delegates (step 0); the child's own task call (step 0) is refused
    # (explore runs no subagents), then it reads and reports (steps 1, 2); the parent then reads and answers too.
    return cli.script(
        [
            {"text": "Delegating.", "tool_calls": [TASK]},
            {"text": "", "tool_calls": [READ]},
            {"text": "The notes say alpha."},
        ]
    )


def test_session_show_nests_the_child_session_under_the_task_call(cli: Any, project: Path) -> None:
    result = cli.run(
        "run", "what do the notes say", "--model", _script(cli), "--dir", str(project), "--quiet"
    )
    assert result.code == 0, result.output
    assert result.stdout.strip() == "The notes say alpha."
    listed = cli.json("sessions", "--dir", str(project), "--json")
    (parent,) = [s for s in listed if s["parent_id"] is None]
    shown = cli.run("session", "show", parent["id"])
    assert shown.code == 0, shown.output
    text = shown.stdout
    task_at = text.index("task  ")
    child_at = text.index("session ses_", task_at)
    assert "(@explore subagent)" in text[child_at:] and "agent: explore" in text[child_at:]
    # the child's calls are shown indented under the parent's task call, before the parent's next step
    nested = re.search(r"^ {6,}.*read .*completed", text[child_at:], re.MULTILINE)
    assert nested is not None, text
    assert re.search(r"^ {6,}.*Unknown tool: task", text[child_at:], re.MULTILINE), text
    parent_step = re.search(r"^step 2", text[child_at:], re.MULTILINE)  # the parent's next step, not indented
    assert parent_step is not None and parent_step.start() > nested.start(), text

    document = cli.json("session", "show", parent["id"], "--json")
    tool, parent_read = [
        p
        for item in document["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p["type"] == "tool"
    ]
    assert tool["tool"] == "task" and parent_read["tool"] == "read" and "subsessions" not in parent_read
    (child,) = tool["subsessions"]
    assert child["session"]["parent_id"] == parent["id"]
    assert child["session"]["parent_call_id"] == tool["call_id"]
    assert tool["metadata"]["session_id"] == child["session"]["id"]
    child_tools = [
        p
        for item in child["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p["type"] == "tool"
    ]
    assert [t["tool"] for t in child_tools] == ["task", "read"] and child_tools[1]["state"] == "completed"


def test_session_export_holds_the_child_session_and_the_todos(cli: Any, project: Path) -> None:
    todo = {
        "name": "todowrite",
        "arguments": {
            "todos": [{"id": "1", "content": "read the notes", "status": "in_progress", "priority": "high"}]
        },
    }
    script = cli.script(
        [
            {"text": "Delegating.", "tool_calls": [TASK, todo]},
            {"text": "", "tool_calls": [READ]},
            {"text": "The notes say alpha."},
        ]
    )
    result = cli.run("run", "what do the notes say", "--model", script, "--dir", str(project), "--quiet")
    assert result.code == 0, result.output
    listed = cli.json("sessions", "--dir", str(project), "--json")
    (parent,) = [s for s in listed if s["parent_id"] is None]
    out = project.parent / "export.json"
    exported = cli.run("session", "export", parent["id"], "-o", str(out))
    assert exported.code == 0, exported.output
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["format"] == "tether.session/2"
    assert document["session"]["id"] == parent["id"]
    assert [(t["content"], t["status"]) for t in document["todos"]] == [("read the notes", "in_progress")]
    (child,) = document["children"]
    task_part = next(
        p for m in document["messages"] for p in m["parts"] if p["type"] == "tool" and p["tool"] == "task"
    )
    assert child["parent_call_id"] == task_part["call_id"]
    assert child["session"]["parent_id"] == parent["id"]
    child_tools = [p["tool"] for m in child["messages"] for p in m["parts"] if p["type"] == "tool"]
    assert "read" in child_tools and child["todos"] == [] and child["children"] == []
    # the timeline nests the child under the task call, as `session show --json` does
    shown = cli.json("session", "show", parent["id"], "--json")
    assert document["timeline"] == shown["timeline"]


def test_a_childs_ask_reaches_the_terminal_labelled_with_the_child(cli: Any, project: Path) -> None:
    cli.configure(project, {"agent": {"explore": {"permission": {"read": {"notes.txt": "ask"}}}}})
    term = cli.pty("run", "what do the notes say", "--model", _script(cli), "--dir", str(project))
    term.expect(r"permission asked: read")
    term.expect(r"asked by: subagent explore \(session ses_\w+\)")
    term.expect(r"choice \[o/(?:a|always)/r/f\]")
    term.send("o\n")
    term.expect("The notes say alpha.")
    assert term.wait() == 0, term.text


def test_the_json_stream_carries_the_childs_permission_events(cli: Any, project: Path) -> None:
    cli.configure(project, {"agent": {"explore": {"permission": {"read": {"notes.txt": "ask"}}}}})
    result = cli.run(
        "run", "notes?", "--model", _script(cli), "--dir", str(project), "--format", "json", "--yes"
    )
    assert result.code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    for line in lines:
        events_adapter().validate_python(line)
    session = lines[0]["session"]
    asked = [e for e in lines if e["type"] == "permission_asked"]
    assert len(asked) == 1 and asked[0]["action"] == "read" and asked[0]["session"] != session
    decided = [e for e in lines if e["type"] == "permission_decided" and e["request"] == asked[0]["request"]]
    assert decided[0]["by"] == "--yes" and decided[0]["session"] == asked[0]["session"]
    (end,) = [e for e in lines if e["type"] == "tool_end" and e["tool"] == "task"]
    assert end["status"] == "completed" and f'<task id="{asked[0]["session"]}"' in end["content"]


async def _resumed_child_asks(tmp_path: Path, project: Path) -> tuple[list[Any], str]:
    import anyio
    from rich.console import Console

    from tether import Runtime
    from tether.cli._approve import Approver
    from tether.cli._console import Output
    from tether.config import parse_config
    from tether.testing import ScriptedModel, tool_call

    config = parse_config(
        {"agent": {"explore": {"permission": {"read": {"notes.txt": "ask"}}}}},
        file=str(project / "tether.json"),
    )
    data = tmp_path / "data"
    args = {"description": "d", "prompt": "look", "subagent_type": "explore"}
    async with Runtime(data_dir=data, config=config) as rt:  # an earlier process: the child is created
        parent = await rt.sessions.create(project)
        with anyio.fail_after(20):
            await parent.prompt("first", model=ScriptedModel([[tool_call("task", args)], "c", "p"]))
        parts = [p for m in await parent.messages() for p in m.parts if p.type == "tool"]
        child_id = parts[0].metadata["session_id"]
    async with Runtime(data_dir=data, config=config) as rt:  # a new process resumes it; the child's read asks
        parent = await rt.sessions.get(parent.id)
        approver = Approver(
            mode="yes",
            service=rt.permissions,
            console=Output(console=Console(file=io.StringIO())),
            session_id=parent.id,
        )
        resume = [tool_call("task", {**args, "task_id": child_id})]
        model = ScriptedModel([resume, [tool_call("read", {"path": "notes.txt"})], "child read it", "done"])
        subscriptions = approver.subscribe(rt.bus)
        with anyio.fail_after(20):  # unanswered, the child's ask would wait forever
            async with anyio.create_task_group() as tg:
                tg.start_soon(approver.run)
                result = await parent.prompt("again", model=model)
                tg.cancel_scope.cancel()
        for subscription in subscriptions:
            subscription.close()
        approver._send.close()  # the CLI's approver lives as long as its process; this one ends here
    assert result.text == "done"
    return approver.decisions, child_id


def test_an_approver_answers_a_child_resumed_from_an_earlier_process(tmp_path: Path, project: Path) -> None:
    import anyio

    decisions, child_id = anyio.run(_resumed_child_asks, tmp_path, project)
    ((pending, reply, _),) = decisions
    assert pending.session_id == child_id and pending.request.action == "read" and reply == "once"


def test_tether_tool_call_task_refuses_without_a_model_for_the_subagent(cli: Any, project: Path) -> None:
    args = json.dumps({"description": "d", "prompt": "read notes.txt", "subagent_type": "explore"})
    result = cli.run("tool", "call", "task", args, "--dir", str(project))
    assert result.code == 1, result.output
    assert "The explore subagent has no model to run with" in result.output
    assert "agent.explore.model" in result.output
    sessions = cli.json("sessions", "--dir", str(project), "--json")
    assert [s["parent_id"] for s in sessions] == [None]  # no child session was created
