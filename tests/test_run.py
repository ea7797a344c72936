"""Custom tools in real sessions (ctx.ask, ctx.deps, ctx.root), TurnResult.calls, rt.run, run_sync and tether.run."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

import tether
from tether import Runtime
from tether.errors import UsageError
from tether.permissions import PermissionAsked
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call
from tether.tools import ToolContext, tool


@dataclass
class Deps:
    env: str


@tool
async def deploy(ctx: ToolContext[Deps], service: str) -> str:
    """Deploy a service.

    Args:
        service: the service to deploy.
    """
    await ctx.ask("deploy", f"{ctx.deps.env}/{service}", metadata={"service": service})
    return f"deployed {service} to {ctx.deps.env} from {ctx.root.name}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("ship it\n")
    return root


async def tool_parts(session: Any) -> list[ToolPart]:
    return [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]


@pytest.mark.anyio
async def test_ask_is_decided_by_the_session_rules_and_recorded_on_the_part(
    tmp_path: Path, project: Path
) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        loc = await rt.location(project)
        session = await rt.sessions.create(
            loc, rules=[("deploy", "staging/*", "allow"), ("deploy", "prod/*", "deny")], deps=Deps("staging")
        )
        model = ScriptedModel([[tool_call("deploy", {"service": "api"}, id="c1")], "done"])
        with loc.tools.register({"deploy": deploy}), model, anyio.fail_after(10):
            result = await session.prompt("deploy the api", model=model)
        (part,) = await tool_parts(session)
        assert part.state == "completed" and part.content[0].text == "deployed api to staging from project"  # type: ignore[union-attr]
        (record,) = part.permissions
        assert record["event"] == "permission.decided" and record["action"] == "deploy"
        assert record["resources"] == ["staging/api"]
        (verdict,) = record["decision"]["verdicts"]
        assert verdict["effect"] == "allow" and verdict["source"] == "session"
        assert verdict["rule"] == {"action": "deploy", "resource": "staging/*", "effect": "allow"}
        (call,) = result.calls
        assert call.ok and call.name == "deploy" and call.input == {"service": "api"} and call.call_id == "c1"

        prod = await rt.sessions.create(loc, rules=[("deploy", "prod/*", "deny")], deps=Deps("prod"))
        model = ScriptedModel([[tool_call("deploy", {"service": "api"}, id="c2")], "blocked"])
        with loc.tools.register({"deploy": deploy}), model, anyio.fail_after(10):
            result = await prod.prompt("deploy the api", model=model)
        (part,) = await tool_parts(prod)
        assert part.state == "error" and part.error_kind == "blocked"
        assert part.permissions[0]["decision"]["verdicts"][0]["rule"]["resource"] == "prod/*"
        (call,) = result.calls
        assert not call.ok and call.outcome == "error" and call.error_kind == "blocked"
        assert call.error is not None and call.error.startswith('Permission denied: deploy on "prod/api"')


@pytest.mark.anyio
async def test_ask_waits_for_a_person_and_records_the_reply(tmp_path: Path, project: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        loc = await rt.location(project)
        session = await rt.sessions.create(loc, rules=[("deploy", "*", "ask")], deps=Deps("staging"))
        send, receive = anyio.create_memory_object_stream[PermissionAsked](10)
        rt.bus.subscribe(PermissionAsked, send.send_nowait)
        model = ScriptedModel([[tool_call("deploy", {"service": "web"})]])

        async def reject() -> None:
            asked = await receive.receive()
            assert asked.request.request.action == "deploy"
            assert asked.request.request.metadata == {"service": "web"}
            await rt.permissions.reply(asked.request.id, "reject")

        with loc.tools.register({"deploy": deploy}), model, send, receive, anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(reject)
                result = await session.prompt("deploy", model=model)
        assert result.stop == "declined"
        (part,) = await tool_parts(session)
        assert [r["event"] for r in part.permissions] == ["permission.asked", "permission.replied"]
        assert part.permissions[1]["reply"] == "reject"
        (call,) = result.calls
        assert call.error_kind == "declined"


@pytest.mark.anyio
async def test_rt_run_registers_tools_for_one_turn_and_lists_its_calls(tmp_path: Path, project: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        model = ScriptedModel(
            [[tool_call("read", {"path": "notes.txt"}), tool_call("deploy", {"service": "db"})], "done"]
        )
        result = await rt.run(
            "read then deploy",
            model=model,
            directory=project,
            tools={"deploy": deploy},
            deps=Deps("dev"),
        )
        assert [(c.name, c.outcome) for c in result.calls] == [("read", "completed"), ("deploy", "completed")]
        assert "ship it" in result.calls[0].content
        assert result.calls[1].content == "deployed db to dev from project"  # the build agent allows "*"
        loc = await rt.location(project)
        assert "deploy" not in {d.name for d in loc.tools.materialize().definitions}


@pytest.mark.anyio
async def test_rt_run_tools_are_seen_by_their_own_turn_only(tmp_path: Path, project: Path) -> None:
    """The attack: turn A registers an admin tool with its deps; turn B, on the same Location at the same time and
    given no tools, calls it. B must not reach A's tool (nor its deps); A's own call still works."""
    a_waiting, b_done = anyio.Event(), anyio.Event()
    ran: list[str] = []

    @tool
    async def admin_reset(ctx: ToolContext[str]) -> str:
        """Reset everything (admin only)."""
        ran.append(ctx.deps)
        return f"reset with {ctx.deps}"

    @tool
    async def wait_for_b() -> str:
        """Wait until the other turn is done."""
        a_waiting.set()  # A's tools are registered and its turn is running
        await b_done.wait()
        return "waited"

    async with Runtime(data_dir=tmp_path / "data") as rt:
        a_model = ScriptedModel([[tool_call("wait_for_b", {})], [tool_call("admin_reset", {})], "done"])
        b_model = ScriptedModel([[tool_call("admin_reset", {})], "done"])
        results: dict[str, Any] = {}

        async def turn_a() -> None:
            results["a"] = await rt.run(
                "a",
                model=a_model,
                directory=project,
                tools={"admin_reset": admin_reset, "wait_for_b": wait_for_b},
                deps="ADMIN-CREDENTIALS",
            )

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(turn_a)
                await a_waiting.wait()
                try:
                    results["b"] = await rt.run("b", model=b_model, directory=project, deps="guest")
                finally:
                    b_done.set()
        (b_call,) = results["b"].calls
        assert b_call.name == "admin_reset" and b_call.outcome != "completed"
        assert "admin_reset" in (b_call.error or "")  # an unknown tool, named as such to the model
        assert ran == ["ADMIN-CREDENTIALS"]
        assert [c.outcome for c in results["a"].calls] == ["completed", "completed"]


@pytest.mark.anyio
async def test_rt_run_outside_the_runtime_and_run_sync_inside_a_loop_are_refused(tmp_path: Path) -> None:
    rt = Runtime(data_dir=tmp_path / "data")
    with pytest.raises(UsageError, match=r"inside `async with Runtime"):
        await rt.run("hi", model=ScriptedModel(["x"]))
    with pytest.raises(UsageError, match=r"Runtime.run_sync\(\) cannot run inside a running event loop"):
        rt.run_sync("hi", model=ScriptedModel(["x"]))
    with pytest.raises(UsageError, match=r"cannot run inside a running event loop"):
        tether.run("hi", model=ScriptedModel(["x"]), data_dir=tmp_path / "data")


def test_run_sync_refuses_an_open_runtime(tmp_path: Path) -> None:
    errors: list[str] = []

    async def main() -> None:
        async with Runtime(data_dir=tmp_path / "data") as rt:
            try:
                await anyio.to_thread.run_sync(lambda: rt.run_sync("hi", model=ScriptedModel(["x"])))
            except UsageError as exc:
                errors.append(str(exc))

    anyio.run(main)
    assert errors and "opens the runtime itself" in errors[0]


def test_tether_run_runs_one_turn_from_plain_sync_code(tmp_path: Path, project: Path) -> None:
    @tool
    def shout(text: str) -> str:
        """Shout text."""
        return text.upper()

    model = ScriptedModel([[tool_call("shout", {"text": "hi"})], "HI it is"])
    result = tether.run(
        "shout hi", model=model, directory=project, tools={"shout": shout}, data_dir=tmp_path / "data"
    )
    assert result.stop == "done" and result.text == "HI it is"
    assert [(c.name, c.content) for c in result.calls] == [("shout", "HI")]
    assert (tmp_path / "data" / "tether.db").exists()


def test_tether_run_resolves_a_model_spec_with_a_clear_error(tmp_path: Path, project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    code = (
        "import tether, sys\n"
        "try:\n"
        f"    tether.run('hi', model='nosuch/model', directory={str(project)!r}, data_dir={str(tmp_path / 'd')!r})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.startswith("ConfigError model: unknown provider 'nosuch'"), out.stderr


def test_tether_run_refuses_a_directory_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(UsageError, match="nowhere"):
        tether.run("hi", model=ScriptedModel(["x"]), directory=missing, data_dir=tmp_path / "data")
    assert not missing.exists()


@pytest.mark.anyio
async def test_an_error_inside_the_runtime_propagates_as_itself(tmp_path: Path, project: Path) -> None:
    with pytest.raises(UsageError, match='Agent not found: "nobody"'):
        async with Runtime(data_dir=tmp_path / "data") as rt:
            await rt.run("hi", model=ScriptedModel(["x"]), directory=project, agent="nobody")
    with pytest.raises(ZeroDivisionError):
        async with Runtime(data_dir=tmp_path / "data"):
            _ = 1 / 0
    async with Runtime(data_dir=tmp_path / "data") as rt:  # closed cleanly: the store opens again
        assert await rt.sessions.list() == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ([deploy], r"tools must map names to tools, e\.g\. tools=\{'line_count': line_count\}"),
        ({"plain": lambda: "x"}, r"tools\['plain'\] is not a Tool: decorate it with @tool"),
        ({"number": 3}, r"tools\['number'\] is not a Tool: build it with @tool or Tool\(\.\.\.\)"),
    ],
)
async def test_rt_run_refuses_tools_that_are_not_named_tools(
    tmp_path: Path, project: Path, tools: Any, message: str
) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        with pytest.raises(UsageError, match=message):
            await rt.run("hi", model=ScriptedModel(["x"]), directory=project, tools=tools)
        assert await rt.sessions.list() == []  # refused before anything was created


@pytest.mark.anyio
async def test_an_agents_temperature_and_top_p_reach_every_request_under_the_callers_options(
    tmp_path: Path, project: Path
) -> None:
    from tether.config import parse_config

    config = parse_config({"agent": {"build": {"temperature": 0.2, "top_p": 0.9}}}, file="tether.json")
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        loc = await rt.location(project)
        session = await rt.sessions.create(loc)
        model = ScriptedModel([[tool_call("read", {"path": "notes.txt"})], "done", "again"])
        await session.prompt("read", model=model)
        await session.prompt("again", model=model, options={"temperature": 0.7})
    first, second, third = (dict(r.options) for r in model.requests)
    assert first == second == {"temperature": 0.2, "top_p": 0.9}
    assert third == {"temperature": 0.7, "top_p": 0.9}


def test_an_out_of_range_temperature_is_a_config_error_naming_the_key() -> None:
    from tether.config import parse_config
    from tether.errors import ConfigError

    with pytest.raises(ConfigError, match=r"agent\.build\.temperature"):
        parse_config({"agent": {"build": {"temperature": 7}}}, file="tether.json")
