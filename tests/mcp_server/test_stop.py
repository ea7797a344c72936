"""``tether mcp serve`` stopped by a service manager: SIGTERM while a client's call runs cancels the call (recorded
as aborted, answered with an error that says the server is stopping), closes the store, exports the call's spans,
and exits 0; over stdio as over ``--http``. Each server is a real subprocess driven by the official ``mcp`` client."""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from mcp import Client

from ..server.test_serve_command import stored_tool_parts
from ..telemetry import conftest as telemetry
from ..telemetry.conftest import Collector
from .serve_fixtures.served import HttpServer, Served

collector = telemetry.collector  # tests/telemetry's OTLP/HTTP receiver on 127.0.0.1, as a fixture here
SLEEP = {"command": "echo started; sleep 60", "description": "wait"}


@pytest.fixture
def served(tmp_path: Path, collector: Collector) -> Served:
    served = Served(tmp_path)
    served.user_config({"permission": {"bash": "allow"}, "telemetry": {"otlp_endpoint": collector.endpoint}})
    return served


def _assert_stopped_in_order(served: Served, collector: Collector, result: types.CallToolResult) -> None:
    assert result.is_error
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    assert "The server is stopping" in text
    [part] = stored_tool_parts(served.cli.data_dir)
    assert part["tool"] == "bash" and part["state"] == "error" and part["error_kind"] == "aborted"
    spans = {str(s["name"]): s["attributes"] for s in collector.spans()}
    call: Any = spans["execute_tool bash"]
    assert call["tether.tool.error_kind"] == "aborted"


def _server_pid(served: Served) -> int:
    """The ``tether mcp serve`` the stdio client started for this test's project (its path is unique)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with suppress(OSError):
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if b"mcp" in argv and str(served.project).encode() in argv:
                    return int(entry.name)
    raise AssertionError("the stdio server is not running")


async def _call_until_started(
    client: Client, started: anyio.Event, results: list[types.CallToolResult]
) -> None:
    async def progress(done: float, total: float | None, message: str | None) -> None:
        if message and "started" in message:
            started.set()

    results.append(await client.call_tool("bash", SLEEP, progress_callback=progress))


@pytest.mark.anyio
async def test_sigterm_over_http_cancels_the_running_call_and_exits_0(
    served: Served, collector: Collector
) -> None:
    server = HttpServer(served)
    try:
        started = anyio.Event()
        results: list[types.CallToolResult] = []
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {server.token}"}) as http,
            Client(
                streamable_http_client(server.url, http_client=http),
                mode="legacy",
                client_info=types.Implementation(name="stopping", version="1"),
            ) as client,
            anyio.create_task_group() as calls,
        ):
            calls.start_soon(_call_until_started, client, started, results)
            with anyio.fail_after(30):
                await started.wait()
            server.process.send_signal(signal.SIGTERM)
        code = await anyio.to_thread.run_sync(lambda: server.process.wait(timeout=30))
        rest = server.close()
    finally:
        if server.process.poll() is None:
            server.process.kill()
    assert code == 0, rest
    assert "SIGTERM, stopping" in rest and "tether mcp serve: stopped" in rest
    _assert_stopped_in_order(served, collector, results[0])
    with pytest.raises(httpx2.TransportError):  # nothing listens any more
        httpx2.post(server.url, content=b"{}", timeout=5)


@pytest.mark.anyio
async def test_sigterm_over_stdio_cancels_the_running_call_and_exits_in_order(
    served: Served, collector: Collector, tmp_path: Path
) -> None:
    # An MCP client ends a stdio server by closing stdin, then SIGTERM; the server must not wait for stdin's EOF.
    started, closed = anyio.Event(), anyio.Event()
    params = StdioServerParameters(command=served.argv()[0], args=served.argv()[1:], env=served.cli.env)
    with (tmp_path / "stderr.txt").open("w+") as errlog:
        async with (
            Client(
                stdio_client(params, errlog=errlog),
                mode="legacy",
                client_info=types.Implementation(name="stopping", version="1"),
            ) as client,
            anyio.create_task_group() as calls,
        ):
            calls.start_soon(_call_ended_by_the_stop, client, started, closed)
            with anyio.fail_after(30):
                await started.wait()
            os.kill(_server_pid(served), signal.SIGTERM)
            with anyio.fail_after(30):  # the bound (STOP_GRACE is 10 s, the sleep 60 s)
                await closed.wait()
        errlog.seek(0)
        said = errlog.read()
    assert "SIGTERM, stopping" in said and "tether mcp serve: stopped" in said, said
    assert "exiting at once" not in said  # stopped in order, not by the deadline
    [part] = stored_tool_parts(served.cli.data_dir)
    assert part["tool"] == "bash" and part["state"] == "error" and part["error_kind"] == "aborted"
    call: Any = {str(s["name"]): s["attributes"] for s in collector.spans()}["execute_tool bash"]
    assert call["tether.tool.error_kind"] == "aborted"


async def _call_ended_by_the_stop(client: Client, started: anyio.Event, closed: anyio.Event) -> None:
    # over stdio the transport ends with the stop: the call's answer may not reach the client, its record does
    with suppress(MCPError):
        await _call_until_started(client, started, [])
    closed.set()
