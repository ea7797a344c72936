"""A server's ``notifications/tools/list_changed`` reaches the very next step (issue 34, item 6).

The server (``grow_server.py``, written with the ``mcp`` SDK) announces a new tool before answering the call that
added it. The step that made the call keeps the catalog it captured (law 5); the next step of the same turn must
advertise the new tool, with nothing in the test waiting for the re-listing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call

from .conftest import HERE, opened, text

pytestmark = pytest.mark.anyio

GROW = HERE / "grow_server.py"


def grow() -> dict[str, object]:
    return {"grow": {"type": "local", "command": [sys.executable, str(GROW)]}}


async def test_a_tool_announced_during_a_call_is_in_the_next_steps_catalog(
    tmp_path: Path, project: Path
) -> None:
    async with opened(tmp_path, project, grow()) as (rt, location):
        session = await rt.sessions.create(location)
        model = ScriptedModel(
            [[tool_call("grow_grow", {}, id="c1")], [tool_call("grow_extra", {}, id="c2")], "done"]
        )
        with model, anyio.fail_after(60):
            await session.prompt("go", model=model)
        parts = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
    first, second = model.requests[0], model.requests[1]
    assert "grow_extra" not in {d.name for d in first.tools}
    assert "grow_extra" in {d.name for d in second.tools}  # what the model was given at the next step
    grown, extra = sorted(parts, key=lambda p: p.call_id)
    assert grown.state == "completed" and text(grown) == "grown", grown.error
    assert extra.state == "completed" and text(extra) == "extra ran", extra.error  # what the step captured


async def test_a_server_that_never_lists_what_it_announced_does_not_hold_the_next_step(
    tmp_path: Path, project: Path
) -> None:
    # the server never answers tools/list after announcing: the re-listing's deadline (the server's "timeout") loses
    # it, and the next step goes on with the tools registered then
    servers = {"grow": {"type": "local", "command": [sys.executable, str(GROW), "hang"], "timeout": 8000}}
    async with opened(tmp_path, project, servers) as (rt, location):
        session = await rt.sessions.create(location)
        model = ScriptedModel(
            [[tool_call("grow_grow", {}, id="c1")], [tool_call("grow_extra", {}, id="c2")], "done"]
        )
        with model, anyio.fail_after(90):
            await session.prompt("go", model=model)
        parts = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
    grown, extra = sorted(parts, key=lambda p: p.call_id)
    assert grown.state == "completed" and text(grown) == "grown", grown.error
    assert extra.state == "error" and "Unknown tool" in (extra.error or "")
