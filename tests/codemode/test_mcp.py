"""An MCP server's tools from code: mcp-server-time (a real stdio server from PyPI) called as tools.<server>_<tool>."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from tether import Runtime
from tether.config import Config

from .conftest import Script, execute, last_tool_text, tool_parts

pytestmark = pytest.mark.anyio

VENV_BIN = Path(sys.executable).parent


async def test_an_mcp_tool_is_called_from_code_under_its_server_prefix(tmp_path: Path, project: Path) -> None:
    code = (
        "r = await tools.time_convert_time(source_timezone='UTC', time='12:00', target_timezone='Asia/Tokyo')\n"
        "r if isinstance(r, str) else r['target']['datetime']"
    )
    script = Script([execute(code)], last_tool_text)
    data = {
        "mcp": {"time": {"type": "local", "command": [str(VENV_BIN / "mcp-server-time")]}},
        "agent": {"build": {"codemode": True}},
    }
    async with Runtime(data_dir=tmp_path / "data", config=Config(data=data)) as rt:
        with anyio.fail_after(60):
            location = await rt.location(project)
            session = await rt.sessions.create(location)
            result = await session.prompt("go", model=script.model)
        description = script.requests[0].tools[0].description
        assert "- time_convert_time(" in description and "- time_get_current_time(" in description
        assert "T21:00:00+09:00" in result.text
        (call,) = await tool_parts(session)
        assert call.metadata is not None
        (inner,) = await tool_parts(await rt.sessions.get(call.metadata["session_id"]))
        assert inner.tool == "time_convert_time" and inner.state == "completed"
