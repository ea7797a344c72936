"""Attack (review 2, hole 2) through a real stdio server: hostile tool schemas are left out with their reason (shown
by ``tether mcp list``), nothing they name is fetched, a fanned-out schema is registered without being expanded,
and the server's other tools work."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.tools._codec import MAX_SCHEMA_CHARS

from ..tools.test_review2_codec import chain, serving
from .conftest import opened, text, turn

pytestmark = pytest.mark.anyio


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    with serving() as served:
        yield served


SERVER = Path(__file__).with_name("review2_server.py")


async def test_hostile_schemas_are_left_out_and_nothing_is_fetched(
    tmp_path: Path,
    project: Path,
    listener: tuple[str, list[str]],
) -> None:
    url, hits = listener

    def tool(name: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "description": name, "inputSchema": schema}

    tools = [
        tool("echo", {"type": "object"}),
        tool("fetch", {"type": "object", "properties": {"a": {"$ref": f"{url}/from-tether"}}}),
        tool("local", {"type": "object", "properties": {"a": {"$ref": (tmp_path / "tools.json").as_uri()}}}),
        tool("meta", {"$schema": f"{url}/meta", "type": "object"}),
        tool("huge", {"type": "object", "description": "x" * MAX_SCHEMA_CHARS}),
        tool("bomb", chain(24)),
    ]
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    command = [sys.executable, str(SERVER), str(tmp_path / "state"), str(tmp_path / "tools.json")]
    async with opened(tmp_path, project, {"s": {"command": command}}) as (rt, location):
        assert location.mcp is not None
        (status,) = location.mcp.statuses()
        assert status.state == "connected"
        assert {raw for _, raw in status.tools} == {"echo", "bomb"}
        reasons = dict(line.split(": ", 1) for line in status.skipped)
        assert set(reasons) == {"fetch", "local", "meta", "huge"}
        assert "only local references" in reasons["fetch"] and "only local references" in reasons["local"]
        assert "too large" in reasons["huge"]
        definitions = {d.name: d for d in location.tools.materialize().definitions}
        assert "$defs" in definitions["s_bomb"].input_schema
        (part,) = await turn(rt, location, [("s_echo", {})])
        assert part.state == "completed" and text(part) == "echo"
    assert hits == []
