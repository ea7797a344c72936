"""A real turn whose step calls ``edit`` many times in parallel on one file: every edit reported successful (a
completed tool part) is in the final file (issue 13 §1)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tether import Runtime
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call

N = 12


@pytest.mark.anyio
async def test_parallel_edit_calls_in_one_step_all_land_in_the_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    target = project / "f.py"
    target.write_text("".join(f"value_{i:02d} = {i}\n" for i in range(N)))
    calls = [
        tool_call(
            "edit",
            {
                "path": "f.py",
                "old_string": f"value_{i:02d} = {i}",
                "new_string": f"value_{i:02d} = {i * 100 + 1}",
            },
            id=f"call_edit_{i:02d}",
        )
        for i in range(N)
    ]
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project, rules=[("edit", "*", "allow")])
        model = ScriptedModel([calls, "done"])
        with model, anyio.fail_after(30):
            result = await session.prompt("edit every line", model=model)
        assert result.stop == "done"
        parts = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
    assert len(parts) == N
    final = target.read_text()
    succeeded = [int(p.call_id.rsplit("_", 1)[1]) for p in parts if p.state == "completed"]
    assert all(f"value_{i:02d} = {i * 100 + 1}\n" in final for i in succeeded)
    assert sorted(succeeded) == list(range(N)), [
        (p.call_id, p.state, p.error) for p in parts if p.state != "completed"
    ]
