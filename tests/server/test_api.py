"""The API against a live server: prompts run in the background and stream, asks are answered over HTTP."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tether.cli._jsonevents import events_adapter
from tether.client import ApiError, Client, Event
from tether.config import Config
from tether.rules import Rule
from tether.testing import Step, tool_call

from .conftest import Live, start

READ_TIMEOUT = 10.0


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    """The server, with every bash command asked: the asks here are the subject (with the sandbox, the built-in
    agents would run ``touch made.txt`` without one)."""
    yield from start(tmp_path, config=Config(permission=(Rule("bash", "*", "ask"),)))


def until(events: Iterator[Event], done: Callable[[Event], bool], seen: list[Event] | None = None) -> Event:
    """The first event for which ``done`` holds (each read capped by the stream's read timeout)."""
    for event in events:
        if seen is not None:
            seen.append(event)
        if done(event):
            return event
    raise AssertionError("the stream ended first")


def idle(event: Event) -> bool:
    return event.type == "status" and event.data["status"] == "idle"


def test_a_prompt_returns_at_once_and_its_turn_streams(live: Live, api: Client) -> None:
    session = api.create_session(title="notes")
    live.script([tool_call("read", {"path": "notes.txt"}, id="c1")], ["The notes say alpha."])
    seen: list[Event] = []
    stream = api.events(session=session["id"], read_timeout=READ_TIMEOUT)
    assert api.prompt(session["id"], "what do the notes say?") == {"session": session["id"], "status": "busy"}
    until(stream, idle, seen)
    stream.close()
    types = [e.type for e in seen]
    assert types[0] == "status" and seen[0].data["status"] == "busy"
    steps = [e.data for e in seen if e.type == "step"]
    assert [s["index"] for s in steps] == [1, 2]
    tools = [e.data for e in seen if e.type == "part_updated" and e.data["part"]["type"] == "tool"]
    assert [t["part"]["state"] for t in tools][-1] == "completed"
    assert all(t["message_id"].startswith("msg_") for t in tools)
    assert "".join(e.data["delta"] for e in seen if e.type == "text") == "The notes say alpha."
    ids = [e.id for e in seen if e.id is not None]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    # the live frames have the shapes of `tether run --format json` (one shape per concept)
    for event in seen:
        if event.type in ("text", "step"):
            events_adapter().validate_python(event.data)
    messages = api.messages(session["id"])
    parts = [p for m in messages for p in m["parts"] if p["type"] == "tool"]
    assert parts[0]["input"] == {"path": "notes.txt"} and "alpha" in parts[0]["content"][0]["text"]
    assert api.session(session["id"])["title"] == "notes"
    assert api.export(session["id"])["format"] == "tether.session/2"


def test_a_permission_ask_is_approved_over_http_and_the_command_runs(live: Live, api: Client) -> None:
    session = api.create_session()
    live.script([tool_call("bash", {"command": "touch made.txt", "description": "make"}, id="c1")], ["made"])
    seen: list[Event] = []
    stream = api.events(session=session["id"], read_timeout=READ_TIMEOUT)
    api.prompt(session["id"], "make the file")
    asked = until(stream, lambda e: e.type == "permission_asked", seen)
    events_adapter().validate_python(asked.data)
    assert asked.data["action"] == "bash" and asked.data["call"] == "c1"
    pending = api.permissions(session=session["id"])
    assert [p["id"] for p in pending] == [asked.data["request"]]
    assert not (live.project / "made.txt").exists()
    api.reply(asked.data["request"], "once")
    decided = until(stream, lambda e: e.type == "permission_decided", seen)
    events_adapter().validate_python(decided.data)
    assert (
        decided.data["reply"] == "once"
        and decided.data["decision"] == "allow"
        and decided.data["by"] == "user"
    )
    until(stream, idle, seen)
    stream.close()
    assert (live.project / "made.txt").exists()
    assert api.permissions() == []


def test_a_reject_with_feedback_fails_the_call_and_the_model_reads_it(live: Live, api: Client) -> None:
    session = api.create_session()
    live.script([tool_call("bash", {"command": "touch made.txt", "description": "make"}, id="c1")], ["ok"])
    stream = api.events(session=session["id"], read_timeout=READ_TIMEOUT)
    api.prompt(session["id"], "make the file")
    asked = until(stream, lambda e: e.type == "permission_asked")
    api.reply(asked.data["request"], "reject", "use the edit tool instead")
    until(stream, idle)
    stream.close()
    assert not (live.project / "made.txt").exists()
    tool = next(p for m in api.messages(session["id"]) for p in m["parts"] if p["type"] == "tool")
    assert tool["state"] == "error" and "use the edit tool instead" in tool["error"]


def test_always_saves_an_approval_listed_by_the_api(live: Live, api: Client) -> None:
    session = api.create_session()
    live.script([tool_call("bash", {"command": "touch made.txt", "description": "make"}, id="c1")], ["ok"])
    stream = api.events(session=session["id"], read_timeout=READ_TIMEOUT)
    api.prompt(session["id"], "make the file")
    asked = until(stream, lambda e: e.type == "permission_asked")
    api.reply(asked.data["request"], "always")
    until(stream, idle)
    stream.close()
    assert [a["action"] for a in api.approvals()] == ["bash"]


def test_a_question_is_answered_over_http(live: Live, api: Client) -> None:
    session = api.create_session()
    question = {"questions": [{"question": "Which color?", "header": "Color", "options": [
        {"label": "red", "description": "warm"}, {"label": "blue", "description": "cool"}]}]}  # fmt: skip
    live.script([tool_call("question", question, id="q1")], ["thanks"])
    stream = api.events(session=session["id"], read_timeout=READ_TIMEOUT)
    api.prompt(session["id"], "ask me")
    asked = until(stream, lambda e: e.type == "question_asked")
    events_adapter().validate_python(asked.data)
    assert [q["id"] for q in api.questions(session=session["id"])] == [asked.data["request"]]
    with pytest.raises(ApiError) as wrong:
        api.answer(asked.data["request"], [["red"], ["extra"]])
    assert wrong.value.status == 400
    api.answer(asked.data["request"], [["blue"]])
    answered = until(stream, lambda e: e.type == "question_answered")
    assert answered.data["answers"] == [["blue"]]
    until(stream, idle)
    stream.close()
    tool = next(p for m in api.messages(session["id"]) for p in m["parts"] if p["type"] == "tool")
    assert tool["state"] == "completed" and "blue" in tool["content"][0]["text"]


def test_reconnecting_with_last_event_id_loses_no_durable_event(live: Live, api: Client) -> None:
    session = api.create_session()
    live.script([tool_call("read", {"path": "notes.txt"}, id="c1")], ["done"])
    stream = api.events(session=session["id"], read_timeout=READ_TIMEOUT)
    api.prompt(session["id"], "read")
    until(stream, idle)
    stream.close()
    everything = api.events(session=session["id"], last_event_id=0, read_timeout=READ_TIMEOUT)
    replayed: list[Event] = []
    for event in everything:
        if event.id is None:
            break  # the replay ends where the live part begins (here: nothing pending, so the stream idles)
        replayed.append(event)
        if event.type == "message_updated" and event.data["message"].get("completed") and len(replayed) > 8:
            break
    everything.close()
    seqs = [e.id for e in replayed]
    assert seqs[0] == 1 and seqs == sorted(seqs)
    middle = replayed[len(replayed) // 2]
    resumed = api.events(session=session["id"], last_event_id=middle.id, read_timeout=READ_TIMEOUT)
    first = next(resumed)
    resumed.close()
    assert first.id == replayed[len(replayed) // 2 + 1].id


def test_a_pending_ask_is_sent_to_a_client_that_connects_later_and_a_busy_session_refuses_a_prompt(
    live: Live, api: Client
) -> None:
    session = api.create_session()
    live.script([tool_call("bash", {"command": "touch made.txt", "description": "make"}, id="c1")], ["ok"])
    with live.client() as other:
        stream = other.events(session=session["id"], read_timeout=READ_TIMEOUT)
        api.prompt(session["id"], "make it")
        until(stream, lambda e: e.type == "permission_asked")
        stream.close()
    with pytest.raises(ApiError) as busy:
        api.prompt(session["id"], "again")
    assert busy.value.status == 409
    with pytest.raises(ApiError) as deleting:
        api.delete(session["id"])
    assert deleting.value.status == 409
    later = api.events(session=session["id"], read_timeout=READ_TIMEOUT)
    asked = next(later)
    assert asked.type == "permission_asked" and asked.id is None
    assert api.cancel(session["id"]) is True
    until(later, idle)
    later.close()
    assert not (live.project / "made.txt").exists()
    assert api.delete(session["id"]) == [session["id"]]
    with pytest.raises(ApiError) as gone:
        api.session(session["id"])
    assert gone.value.status == 404


def test_refusals_say_what_was_wrong(live: Live, api: Client) -> None:
    session = api.create_session()
    cases = [
        (lambda: api.request("POST", "/api/sessions", {"title": "x", "colour": "red"}), 422),
        (lambda: api.request("POST", f"/api/sessions/{session['id']}/prompt", {"text": ""}), 422),
        (lambda: api.request("POST", f"/api/sessions/{session['id']}/prompt", b"{not json"), 422),
        (lambda: api.prompt(session["id"], "hi", model="other/model"), 400),
        (lambda: api.create_session(directory="../"), 400),
        (lambda: api.create_session(directory="/etc"), 400),
        (lambda: api.create_session(agent="nobody"), 400),
        (lambda: api.prompt("ses_nothing", "hi"), 404),
        (lambda: api.reply("per_nothing", "once"), 404),
        (lambda: api.reply("per_nothing", "once", "feedback"), 400),
        (lambda: api.request("POST", "/api/permissions/x/reply", {"reply": "sometimes"}), 422),
        (lambda: api.answer("que_nothing", [["a"]]), 404),
        (lambda: api.sessions(limit=0), 400),
        (lambda: api.catalog(agent="nobody"), 404),
    ]
    for call, status in cases:
        with pytest.raises(ApiError) as refused:
            call()
        assert refused.value.status == status, refused.value
        assert refused.value.detail


def test_the_catalog_sessions_mcp_and_health(live: Live, api: Client) -> None:
    session = api.create_session(title="first")
    names = [t["name"] for t in api.catalog()["tools"]]
    assert "read" in names and "bash" in names
    plan = api.catalog(agent="plan")
    assert plan["agent"] == "plan" and all(t["input_schema"]["type"] == "object" for t in plan["tools"])
    assert [s["id"] for s in api.sessions()] == [session["id"]]
    assert api.mcp() == []
    health = api.health()
    assert health["ok"] is True and health["project"] == str(live.project.resolve())
    (live.project / "sub").mkdir()
    inside = api.create_session(directory="sub")
    assert inside["directory"] == str((live.project / "sub").resolve())


def test_a_failing_turn_is_an_error_event(live: Live, api: Client) -> None:
    session = api.create_session()
    live.script(Step(RuntimeError("the model broke")))
    stream = api.events(session=session["id"], read_timeout=READ_TIMEOUT)
    api.prompt(session["id"], "hi")
    error = until(stream, lambda e: e.type == "error")
    stream.close()
    events_adapter().validate_python(error.data)
    assert "the model broke" in error.data["message"]


def test_a_session_another_process_runs_is_refused(live: Live, api: Client) -> None:
    import threading

    import anyio
    import anyio.to_thread

    from tether.store import SQLiteStore

    session = api.create_session()
    claimed, release = threading.Event(), threading.Event()

    async def hold() -> None:  # another tether process's store, running the session
        async with SQLiteStore(live.data_dir / "tether.db", recover=False) as store:
            await store.claim(session["id"])
            claimed.set()
            await anyio.to_thread.run_sync(release.wait)

    holder = threading.Thread(target=anyio.run, args=(hold,))
    holder.start()
    try:
        assert claimed.wait(10)
        with pytest.raises(ApiError) as busy:
            api.prompt(session["id"], "hi")
        assert busy.value.status == 409 and "busy" in busy.value.detail
    finally:
        release.set()
        holder.join(10)
    live.script(["hello"])
    with api.events(session=session["id"], read_timeout=READ_TIMEOUT) as stream:
        api.prompt(session["id"], "hi")  # the other process is gone: its claim is taken over
        until(stream, idle)
