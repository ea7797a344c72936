"""A deliberately broken server: each misbehaviour fails that call (or that server) only, with a clear message."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from tether.session import ToolPart, ToolProgress
from tether.testing import ScriptedModel, tool_call

from .conftest import VENV_BIN, broken, opened, text, turn

pytestmark = pytest.mark.anyio


def received(state: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (state / "received").read_text().splitlines()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_crash_mid_call_fails_that_call_and_the_server_restarts(
    tmp_path: Path, project: Path
) -> None:
    state = tmp_path / "broken"
    async with opened(tmp_path, project, {"broken": broken(state)}) as (rt, location):
        servers = location.mcp
        assert servers is not None
        first = int((state / "pid").read_text())
        (part,) = await turn(rt, location, [("broken_crash", {})])
        assert part.state == "error" and part.error_kind == "tool"
        assert part.error is not None and part.error.startswith('MCP server "broken" closed the connection')
        assert '(while running "crash")' in part.error
        assert "crashing on purpose" in part.error  # the server's last error output says why
        with anyio.fail_after(30):
            await servers.wait(
                lambda: servers.connections[0].restarts == 1 and servers.connections[0].state == "connected"
            )
        (again,) = await turn(rt, location, [("broken_echo", {"text": "back"})])
        assert again.state == "completed" and text(again) == "echo: back"
        second = int((state / "pid").read_text())
        assert second != first and not alive(first)
    assert not alive(second)  # closing the runtime ended the process: no orphan


async def test_a_silent_call_times_out_alone_while_its_sibling_completes(
    tmp_path: Path, project: Path
) -> None:
    state = tmp_path / "broken"
    async with opened(tmp_path, project, {"broken": broken(state, call_timeout=500)}) as (rt, location):
        hung, echo = await turn(rt, location, [("broken_hang", {}), ("broken_echo", {"text": "fine"})])
        assert hung.state == "error" and hung.error is not None
        assert 'MCP server "broken" sent nothing for 0.5s while running "hang"' in hung.error
        assert echo.state == "completed" and text(echo) == "echo: fine"
        (after,) = await turn(rt, location, [("broken_echo", {"text": "still"})])
        assert after.state == "completed"
        assert location.mcp is not None and location.mcp.connections[0].restarts == 0  # it answered the ping
    methods = [m.get("method") for m in received(state)]
    assert "ping" in methods
    cancels = [m for m in received(state) if m.get("method") == "notifications/cancelled"]
    calls = [m for m in received(state) if m.get("method") == "tools/call"]
    assert cancels and cancels[0]["params"]["requestId"] == calls[0]["id"]  # type: ignore[index]


async def test_a_silent_call_after_an_idle_spell_still_times_out(tmp_path: Path, project: Path) -> None:
    # A call that starts after a spell with nothing in flight (the last call's deadline long past) still gets its
    # own idle deadline: a deadline kept anywhere but on the call itself must be re-armed when it starts.
    async with opened(tmp_path, project, {"broken": broken(tmp_path / "b", call_timeout=500)}) as (
        rt,
        location,
    ):
        (echo,) = await turn(rt, location, [("broken_echo", {"text": "first"})])
        assert echo.state == "completed"
        await anyio.sleep(1.0)  # the idle spell itself (past the echo's deadline), not a wait for some state
        (hung,) = await turn(rt, location, [("broken_hang", {})], timeout=10)
    assert hung.state == "error" and "sent nothing for 0.5s" in (hung.error or ""), hung.error
    assert hung.started is not None and hung.ended is not None and hung.ended - hung.started < 5000


async def test_a_silent_call_times_out_beside_one_kept_alive_by_progress(
    tmp_path: Path, project: Path
) -> None:
    # Two deadlines at once: the progressing call's keeps moving past the silent one's, which still expires.
    async with opened(tmp_path, project, {"broken": broken(tmp_path / "b", call_timeout=1000)}) as (
        rt,
        location,
    ):
        alive, hung = await turn(
            rt, location, [("broken_progress", {"steps": 6, "gap": 0.3}), ("broken_hang", {})], timeout=10
        )
    assert alive.state == "completed" and text(alive) == "progress done", alive.error
    assert hung.state == "error" and "sent nothing for 1s" in (hung.error or ""), hung.error
    assert hung.ended is not None and alive.ended is not None and hung.ended < alive.ended


async def test_a_hung_server_is_restarted(tmp_path: Path, project: Path) -> None:
    state = tmp_path / "broken"
    async with opened(tmp_path, project, {"broken": broken(state, call_timeout=500)}) as (rt, location):
        servers = location.mcp
        assert servers is not None
        (frozen,) = await turn(rt, location, [("broken_freeze", {})])
        assert frozen.state == "error" and "sent nothing for 0.5s" in (frozen.error or "")
        with anyio.fail_after(30):
            await servers.wait(
                lambda: servers.connections[0].restarts == 1 and servers.connections[0].state == "connected"
            )
        assert (
            "ping got no answer" in (servers.statuses()[0].error or "") or servers.statuses()[0].error is None
        )
        (echo,) = await turn(rt, location, [("broken_echo", {"text": "revived"})])
        assert echo.state == "completed" and text(echo) == "echo: revived"


async def test_a_malformed_answer_fails_that_call_and_the_connection_serves_on(
    tmp_path: Path, project: Path
) -> None:
    state = tmp_path / "broken"
    async with opened(tmp_path, project, {"broken": broken(state)}) as (rt, location):
        (bad,) = await turn(rt, location, [("broken_malformed", {})])
        assert bad.state == "error" and bad.error is not None
        assert bad.error.startswith('MCP server "broken" wrote a message that is not JSON-RPC')
        assert bad.error.endswith('(while running "malformed")')
        (echo,) = await turn(rt, location, [("broken_echo", {"text": "ok"})])
        assert echo.state == "completed" and text(echo) == "echo: ok"


async def test_a_server_that_never_initializes_is_failed_and_skipped(tmp_path: Path, project: Path) -> None:
    servers = {
        "mute": broken(tmp_path / "mute", "noinit", timeout=1000),
        "dead": broken(tmp_path / "dead", "exit"),
        "time": {"type": "local", "command": [str(VENV_BIN / "mcp-server-time")]},
    }
    async with opened(tmp_path, project, servers) as (rt, location):
        assert location.mcp is not None
        mute, dead, time = location.mcp.statuses()
        assert mute.state == "failed" and mute.error is not None and "did not start within 1s" in mute.error
        assert dead.state == "failed" and dead.error is not None and "missing token" in dead.error
        assert time.state == "connected"
        unknown, ok = await turn(
            rt, location, [("mute_echo", {}), ("time_get_current_time", {"timezone": "UTC"})]
        )
        assert unknown.state == "error" and "Unknown tool" in (unknown.error or "")
        assert ok.state == "completed"
    assert not alive(int((tmp_path / "mute" / "pid").read_text()))


async def test_a_banner_before_the_handshake_is_ignored(tmp_path: Path, project: Path) -> None:
    async with opened(tmp_path, project, {"broken": broken(tmp_path / "b", "banner")}) as (rt, location):
        (echo,) = await turn(rt, location, [("broken_echo", {"text": "hi"})])
    assert echo.state == "completed" and text(echo) == "echo: hi"


async def test_progress_restarts_the_idle_deadline_and_reaches_the_call(
    tmp_path: Path, project: Path
) -> None:
    async with opened(tmp_path, project, {"broken": broken(tmp_path / "b", call_timeout=2000)}) as (
        rt,
        location,
    ):
        (part,) = await turn(rt, location, [("broken_progress", {"steps": 4, "gap": 0.8})])
    assert part.state == "completed" and text(part) == "progress done", part.error


async def test_list_changed_reaches_the_next_step_not_the_current_one(tmp_path: Path, project: Path) -> None:
    async with opened(tmp_path, project, {"broken": broken(tmp_path / "b")}) as (rt, location):
        servers = location.mcp
        assert servers is not None
        grow, early = await turn(rt, location, [("broken_grow", {}), ("broken_extra", {})])
        assert grow.state == "completed"
        assert early.state == "error" and "Unknown tool" in (early.error or "")  # the step kept its catalog
        with anyio.fail_after(10):
            await servers.wait(lambda: any(n == "broken_extra" for n, _ in servers.statuses()[0].tools))
        (extra,) = await turn(rt, location, [("broken_extra", {})])
        assert extra.state == "completed" and text(extra) == "extra ran"


async def test_a_call_asks_its_effective_name_on_everything(tmp_path: Path, project: Path) -> None:
    async with opened(tmp_path, project, {"broken": broken(tmp_path / "b")}) as (rt, location):
        (part,) = await turn(
            rt, location, [("broken___book_meeting_room", {"room": "A"})], rules=[("broken_*", "*", "allow")]
        )
    assert part.state == "completed", part.error
    (record,) = part.permissions
    assert record["action"] == "broken___book_meeting_room" and record["resources"] == ["*"]
    assert record["decision"]["verdicts"][0]["rule"]["action"] == "broken_*"


async def test_an_error_result_carries_the_server_text(tmp_path: Path, project: Path) -> None:
    async with opened(tmp_path, project, {"broken": broken(tmp_path / "b")}) as (rt, location):
        (part,) = await turn(rt, location, [("broken_fail", {})])
    assert part.state == "error" and part.error_kind == "tool"
    assert (
        part.error == 'MCP server "broken" reported an error from its tool "fail": the room is already booked'
    )


async def test_schemas_and_instructions_reach_the_model(tmp_path: Path, project: Path) -> None:
    async with opened(tmp_path, project, {"broken": broken(tmp_path / "b")}) as (rt, location):
        definitions = {d.name: d for d in location.tools.materialize().definitions}
        tags = definitions["broken_tags"].input_schema
        assert tags["properties"]["tags"] == {
            "type": "array",
            "items": {"type": "string", "enum": ["red", "green"]},
        }
        structured = definitions["broken_structured"].output_schema
        assert structured is not None and structured["required"] == ["sum"]
        system = await rt.sessions.service.system_prompt(location, agent="build", model="test/scripted")
        assert any('MCP server "broken"' in t and "Use broken_echo" in t for t in system)
        (part,) = await turn(rt, location, [("broken_structured", {})])
        assert part.state == "completed" and text(part) == '{"sum": 3}', part.error


async def test_cancelling_the_turn_sends_notifications_cancelled(tmp_path: Path, project: Path) -> None:
    state = tmp_path / "broken"
    async with opened(tmp_path, project, {"broken": broken(state)}) as (rt, location):
        session = await rt.sessions.create(location)
        rt.bus.subscribe(ToolProgress, lambda event: session.cancel())  # cancel once the call is under way
        model = ScriptedModel([[tool_call("broken_progress", {"steps": 500, "gap": 0.1}, id="c1")]])
        with anyio.fail_after(30):
            await session.prompt("go", model=model)
        (part,) = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
        assert part.state == "error"
        (echo,) = await turn(
            rt, location, [("broken_echo", {"text": "after"})]
        )  # answered after the cancel was read
        assert echo.state == "completed"
    call = next(m for m in received(state) if m.get("method") == "tools/call")
    cancels = [m for m in received(state) if m.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [call["id"]]  # type: ignore[index]


async def test_every_page_of_a_paginated_listing_is_read(tmp_path: Path, project: Path) -> None:
    async with opened(tmp_path, project, {"broken": broken(tmp_path / "b", "paged")}) as (rt, location):
        assert location.mcp is not None
        (status,) = location.mcp.statuses()
        assert len(status.tools) == 13 and ("broken_tags", "tags") in status.tools
        (part,) = await turn(rt, location, [("broken_tags", {"tags": ["red"]})])  # on the last page
    assert part.state == "completed", part.error
    lists = [m for m in received(tmp_path / "b") if m.get("method") == "tools/list"]
    assert [(m.get("params") or {}).get("cursor") for m in lists] == [None, "3", "6", "9", "12"]  # type: ignore[union-attr]


async def test_a_server_that_cannot_restart_is_failed_after_five_tries(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.mcp import _connection

    monkeypatch.setattr(
        _connection, "_BACKOFF", 0.001
    )  # the backoff's schedule, not its length, is under test
    async with opened(tmp_path, project, {"broken": broken(tmp_path / "b", "once")}) as (rt, location):
        servers = location.mcp
        assert servers is not None
        (part,) = await turn(rt, location, [("broken_crash", {})])
        assert part.state == "error"
        with anyio.fail_after(30):
            await servers.wait(lambda: servers.connections[0].state == "failed")
        (status,) = servers.statuses()
        assert servers.connections[0].restarts == 6 and "refusing to start again" in (status.error or "")
        (late,) = await turn(rt, location, [("broken_echo", {"text": "x"})])
        assert late.state == "error" and "Unknown tool" in (late.error or "")  # its tools left the catalog


async def test_a_chatty_servers_error_output_is_kept_to_its_end(tmp_path: Path, project: Path) -> None:
    state = tmp_path / "broken"
    async with opened(tmp_path, project, {"broken": broken(state)}) as (rt, location):
        (part,) = await turn(rt, location, [("broken_chatter", {})])
        assert part.state == "completed"
        pid = int((state / "pid").read_text())
        assert os.stat(f"/proc/{pid}/fd/2").st_size <= 1 << 20  # 3 MB written, the end kept
        (crash,) = await turn(rt, location, [("broken_crash", {})])
    assert "crashing on purpose" in (crash.error or "")  # written after the trim: still shown
