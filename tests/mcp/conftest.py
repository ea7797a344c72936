"""Real MCP peers for tests/mcp: the runtime with servers configured, and a session turn played by a scripted model.

The peers are real programs: ``mcp-server-time`` and ``mcp-server-git`` (PyPI, in the venv), the reference
``server-everything`` (npm, installed by ``scripts/bootstrap`` into ``.cache/mcp-peers``) and ``broken_server.py``
(this folder: a server that crashes, hangs and writes malformed JSON on request).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether._runtime import RuntimeLocation
from tether.config import Config
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call

HERE = Path(__file__).parent
REPO = HERE.parent.parent
BROKEN = HERE / "broken_server.py"
VENV_BIN = Path(sys.executable).parent
EVERYTHING = REPO / ".cache/mcp-peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def broken(state: Path, mode: str = "ok", **more: Any) -> dict[str, Any]:
    """The config entry of the broken server in ``mode``, keeping its pid and received messages in ``state``."""
    return {"type": "local", "command": [sys.executable, str(BROKEN), mode, str(state)], **more}


@pytest.fixture
def everything() -> list[str]:
    """The command of the reference server-everything (stdio); skipped only when bootstrap could not install it."""
    node = shutil.which("node")
    if node is None or not EVERYTHING.is_file():
        pytest.skip("server-everything is not installed: run scripts/bootstrap (needs npm)")
    return [node, str(EVERYTHING)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@asynccontextmanager
async def opened(
    tmp_path: Path, project: Path, servers: Mapping[str, Any], **config: Any
) -> AsyncIterator[tuple[Runtime, RuntimeLocation]]:
    """A runtime whose config names ``servers``, and the project's Location (servers connected or failed)."""
    data = {"mcp": dict(servers), **config}
    async with Runtime(data_dir=tmp_path / "data", config=Config(data=data)) as rt:
        with anyio.fail_after(60):
            location = await rt.location(project)
        yield rt, location


async def turn(
    rt: Runtime,
    location: RuntimeLocation,
    calls: Sequence[tuple[str, Any]],
    *,
    rules: Sequence[tuple[str, str, str]] = (),
    timeout: float = 60,
) -> list[ToolPart]:
    """One turn whose first step calls ``calls`` (name, input) in parallel; the tool parts, in call order."""
    session = await rt.sessions.create(location, rules=rules)
    model = ScriptedModel(
        [[tool_call(name, args, id=f"c{n}") for n, (name, args) in enumerate(calls)], "done"]
    )
    with model, anyio.fail_after(timeout):
        await session.prompt("go", model=model)
    parts = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
    return sorted(parts, key=lambda p: p.call_id)


def text(part: ToolPart) -> str:
    """The text the model read of a completed call (its content's text parts), or its error."""
    if part.state == "error":
        return part.error or ""
    return "".join(getattr(c, "text", "") for c in part.content)
