"""Real MCP servers end to end through a session turn: mcp-server-time, mcp-server-git, server-everything."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from tether.session import ToolProgress

from .conftest import VENV_BIN, opened, text, turn

pytestmark = pytest.mark.anyio


def local(command: list[str]) -> dict[str, object]:
    """The config of server-everything over stdio."""
    return {"everything": {"type": "local", "command": command}}


async def test_time_server_answers_through_a_turn(tmp_path: Path, project: Path) -> None:
    servers = {"time": {"type": "local", "command": [str(VENV_BIN / "mcp-server-time")]}}
    async with opened(tmp_path, project, servers) as (rt, location):
        (status,) = location.mcp.statuses()  # type: ignore[union-attr]
        assert status.state == "connected" and status.transport == "stdio"
        assert {name for name, _ in status.tools} == {"time_get_current_time", "time_convert_time"}
        (part,) = await turn(
            rt,
            location,
            [
                (
                    "time_convert_time",
                    {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                )
            ],
        )
    assert part.state == "completed", part.error
    assert json.loads(text(part))["target"]["datetime"].startswith(
        json.loads(text(part))["source"]["datetime"][:10]
    )
    assert "T21:00:00+09:00" in text(part)


async def test_git_server_reads_the_project_repository(tmp_path: Path, project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "hello.txt").write_text("hi\n")
    servers = {"git": {"command": str(VENV_BIN / "mcp-server-git"), "args": ["--repository", str(project)]}}
    async with opened(tmp_path, project, servers) as (rt, location):
        (part,) = await turn(rt, location, [("git_git_status", {"repo_path": str(project)})])
    assert part.state == "completed", part.error
    assert "hello.txt" in text(part)


async def test_everything_image_structured_and_resources(
    tmp_path: Path, project: Path, everything: list[str]
) -> None:
    async with opened(tmp_path, project, local(everything)) as (rt, location):
        status = location.mcp.statuses()[0]  # type: ignore[union-attr]
        assert status.state == "connected", status.error
        calls = [
            ("everything_get-tiny-image", {}),
            ("everything_get-structured-content", {"location": "New York"}),
            ("list_mcp_resources", {"server": "everything"}),
            (
                "read_mcp_resource",
                {"server": "everything", "uri": "demo://resource/static/document/architecture.md"},
            ),
            ("everything_get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
        ]
        image, structured, listing, read, embedded = await turn(rt, location, calls)
    assert image.state == "completed", image.error
    files = [c for c in image.content if getattr(c, "type", "") == "file"]
    assert len(files) == 1 and files[0].mime == "image/png"  # type: ignore[union-attr]
    assert structured.state == "completed", structured.error
    assert "temperature" in text(structured)
    assert listing.state == "completed" and "everything demo://resource/" in text(listing), text(listing)
    assert read.state == "completed", read.error
    assert "[resource demo://resource/static/document/architecture.md]" in text(read)
    assert embedded.state == "completed" and "[resource demo://resource/dynamic/text/1]" in text(embedded), (
        text(embedded)
    )
    assert read.permissions[0]["action"] == "read"
    assert read.permissions[0]["resources"] == [
        "mcp:everything:demo://resource/static/document/architecture.md"
    ]


async def test_everything_progress_reaches_the_bus(
    tmp_path: Path, project: Path, everything: list[str]
) -> None:
    async with opened(tmp_path, project, local(everything)) as (rt, location):
        seen: list[ToolProgress] = []
        rt.bus.subscribe(ToolProgress, seen.append)
        (part,) = await turn(
            rt, location, [("everything_trigger-long-running-operation", {"duration": 0.6, "steps": 3})]
        )
    assert part.state == "completed", part.error
    assert [u.update["progress"] for u in seen] == [1, 2, 3]
    assert all(u.update["total"] == 3 for u in seen)


async def test_everything_error_result_is_a_failure_the_model_reads(
    tmp_path: Path, project: Path, everything: list[str]
) -> None:
    async with opened(tmp_path, project, local(everything)) as (rt, location):
        (part,) = await turn(
            rt,
            location,
            [
                (
                    "everything_gzip-file-as-resource",
                    {"name": "x.gz", "data": "https://example.invalid/nothing", "outputType": "resource"},
                )
            ],
        )
    assert part.state == "error" and part.error_kind == "tool"
    assert part.error is not None and 'MCP server "everything" reported an error' in part.error


@pytest.mark.parametrize("transport", ["streamableHttp", "sse"])
async def test_everything_over_http(
    tmp_path: Path, project: Path, everything: list[str], transport: str
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [*everything, transport],
        env={"PORT": str(port), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        with anyio.fail_after(30):
            while str(port).encode() not in (line := await anyio.to_thread.run_sync(process.stderr.readline)):
                assert line, "the server exited before listening"
        path = "mcp" if transport == "streamableHttp" else "sse"
        # remote: streamable HTTP first, SSE when the server refuses it
        servers = {"everything": {"type": "remote", "url": f"http://127.0.0.1:{port}/{path}"}}
        async with opened(tmp_path, project, servers) as (rt, location):
            status = location.mcp.statuses()[0]  # type: ignore[union-attr]
            assert status.state == "connected", status.error
            assert status.transport == ("http" if transport == "streamableHttp" else "sse")
            (part,) = await turn(rt, location, [("everything_echo", {"message": "over the wire"})])
        assert part.state == "completed" and "over the wire" in text(part), part.error
    finally:
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


async def test_everything_list_changed_is_listed_again(
    tmp_path: Path, project: Path, everything: list[str]
) -> None:
    # server-everything registers its capability-dependent tools once initialized and announces the change
    async with opened(tmp_path, project, local(everything)) as (rt, location):
        servers = location.mcp
        assert servers is not None
        with anyio.fail_after(30):
            await servers.wait(lambda: servers.connections[0].listings >= 2)
        names = {name for name, _ in servers.statuses()[0].tools}
        assert "everything_simulate-research-query" in names
        (part,) = await turn(rt, location, [("everything_get-sum", {"a": 2, "b": 3})])
    assert part.state == "completed" and "5" in text(part), part.error
