"""Review 2: ``tether mcp serve`` answers the asks of the subagents a served ``task`` call starts.

The attack (/tmp/attack/18): a served ``task`` call whose child session runs ``bash`` got no answer (both sessions
stayed running): the server answered only asks whose call id was the served call's, and a child's ask carries the
child's. Now the child's sessions belong to the call that started them (``session.updated``, the CLI approver's
``Descendants``): their asks are put to the client's user (labelled with the subagent) or answered by
``mcp_serve.ask``, and their questions fail fast (nobody answers questions over MCP).

The subagent's model is the OpenCode peer's scripted chat-completions server, in a thread on 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from .serve_fixtures.served import Served

pytestmark = pytest.mark.anyio

PEER = Path(__file__).resolve().parents[2] / "bench" / "opencode_peer"
TASK = {"description": "touch it", "prompt": "touch the canary", "subagent_type": "general"}
TOUCH = {"command": "touch canary", "description": "touch the canary"}
QUESTION = {
    "questions": [{"question": "Which one?", "header": "pick", "options": [{"label": "a"}, {"label": "b"}]}]
}


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.fixture
def model() -> Iterator[Callable[[list[dict[str, Any]]], int]]:
    """Start the scripted chat-completions server with a script; its port."""
    spec = importlib.util.spec_from_file_location(
        "scripted_openai_server", PEER / "scripted_openai_server.py"
    )
    assert spec is not None and spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    servers: list[Any] = []
    threads: list[threading.Thread] = []

    def start(script: list[dict[str, Any]]) -> int:
        handler = type("ScriptedHandler", (module.Handler,), {"script": script, "log": "/dev/null"})
        server = module.Server(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append(server)
        threads.append(thread)
        return server.server_address[1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
    for thread in threads:
        thread.join(timeout=30)


def _configure(served: Served, port: int, **more: Any) -> None:
    # every command asks: the asks are the subject (under the sandbox, `touch canary` would run without one)
    permission = {"bash": {"*": "ask"}, **more.pop("permission", {})}
    served.user_config(
        {
            "provider": {"fake": {"base_url": f"http://127.0.0.1:{port}/v1"}},
            "agent": {"general": {"model": "fake/m"}},
            "permission": permission,
            **more,
        }
    )


@pytest.mark.parametrize(
    "mode", ["legacy", "auto"]
)  # auto: 2026-07-28, the form comes back as InputRequiredResult
async def test_a_subagents_ask_is_put_to_the_clients_user_and_approving_runs_it(
    tmp_path: Path, model: Any, mode: str
) -> None:
    served = Served(tmp_path)
    _configure(
        served, model([{"tool_calls": [{"name": "bash", "arguments": TOUCH}]}, {"text": "child done"}])
    )
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "once"})

    with anyio.fail_after(120):  # the attack: no answer ever came
        async with served.stdio(elicit=elicit, mode=mode) as client:
            result = await client.call_tool("task", TASK)
    assert not result.is_error, _text(result)
    assert "child done" in _text(result)
    assert (served.project / "canary").exists()
    [message] = asked
    assert "subagent general" in message and "touch canary" in message and "bash" in message
    assert all(
        s["status"] != "busy" for s in served.cli.json("sessions", "--dir", str(served.project), "--json")
    )


async def test_without_elicitation_a_subagents_ask_is_refused_at_once_and_nothing_runs(
    tmp_path: Path, model: Any
) -> None:
    served = Served(tmp_path)
    _configure(
        served, model([{"tool_calls": [{"name": "bash", "arguments": TOUCH}]}, {"text": "child gave up"}])
    )
    with anyio.fail_after(120):
        async with served.stdio() as client:
            result = await client.call_tool("task", TASK)
            after = await client.call_tool("read", {"path": "."})  # the server goes on serving
    assert "child gave up" in _text(result), _text(result)
    assert not (served.project / "canary").exists()
    assert not after.is_error


async def test_a_subagents_ask_is_refused_when_the_user_declines(tmp_path: Path, model: Any) -> None:
    served = Served(tmp_path)
    _configure(
        served, model([{"tool_calls": [{"name": "bash", "arguments": TOUCH}]}, {"text": "child gave up"}])
    )

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    with anyio.fail_after(120):
        async with served.stdio(elicit=elicit) as client:
            await client.call_tool("task", TASK)
    assert not (served.project / "canary").exists()


async def test_a_subagents_question_fails_fast(tmp_path: Path, model: Any) -> None:
    served = Served(tmp_path)
    port = model([{"tool_calls": [{"name": "question", "arguments": QUESTION}]}, {"text": "child assumed a"}])
    _configure(served, port, permission={"question": "allow"})
    with anyio.fail_after(120):
        async with served.stdio() as client:
            result = await client.call_tool("task", TASK)
    assert "child assumed a" in _text(result), _text(result)
