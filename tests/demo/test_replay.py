"""The replay model and the sample project, through the real Runtime (store, tools, permissions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.config import load_config
from tether.demo import DEMO_PROMPT, ReplayModel, ScriptModel, copy_sample_project, sample_project
from tether.errors import ConfigError
from tether.permissions import PermissionAsked
from tether.session import ToolPart


def _unittest(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unittest"], cwd=project, capture_output=True, text=True, timeout=60
    )


def test_the_shipped_sample_project_has_a_failing_test(tmp_path: Path) -> None:
    project = copy_sample_project(tmp_path / "pricing")
    assert (project / ".tether" / "tether.json").is_file()
    assert not any(p.name == "__pycache__" for p in project.rglob("*"))
    result = _unittest(project)
    assert result.returncode != 0
    assert "FAILED (failures=2)" in result.stderr
    assert (sample_project() / "AGENTS.md").is_file()


async def _replay(tmp_path: Path, reply: str, message: str | None = None) -> tuple[Any, list[ToolPart], Path]:
    project = copy_sample_project(tmp_path / "pricing")
    # The demo trusts the project it wrote (``tether demo`` does the same): its bash allow rules apply.
    config = await anyio.to_thread.run_sync(lambda: load_config(project, trusted=True))
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        # The edit is answered with ``reply``; any other ask (the recording's program text, ``python3 -m unittest``,
        # asks external_directory for what it may touch) is approved once, as ``tether demo --yes`` does.
        send, receive = anyio.create_memory_object_stream[PermissionAsked](16)

        location = await rt.location(project)
        session = await rt.sessions.create(location)
        with send, receive, rt.bus.subscribe(PermissionAsked, send.send_nowait):
            async with anyio.create_task_group() as tg:

                async def replier() -> None:
                    async for event in receive:
                        pending = event.request
                        if pending.request.action == "edit":
                            await rt.permissions.reply(pending.id, reply, message)  # type: ignore[arg-type]
                        else:
                            await rt.permissions.reply(pending.id, "once")

                tg.start_soon(replier)
                with anyio.fail_after(60):
                    result = await session.prompt(DEMO_PROMPT, model=ReplayModel())
                tg.cancel_scope.cancel()
        messages = await rt.store.load_messages(session.id)
    tools = [p for m in messages for p in m.parts if isinstance(p, ToolPart)]
    return result, tools, project


@pytest.mark.anyio
async def test_replay_fixes_the_bug_through_the_real_tools(tmp_path: Path) -> None:
    result, tools, project = await _replay(tmp_path, "once")
    assert result.stop == "done"
    assert [t.tool for t in tools] == ["bash", "grep", "read", "edit", "bash", "bash"]
    assert all(t.state == "completed" for t in tools), [(t.tool, t.error) for t in tools]
    assert tools[-1].output_paths, "the report's output is bounded and retained"
    assert "saved the full output to" in result.text
    assert _unittest(project).returncode == 0


@pytest.mark.anyio
async def test_replay_tells_the_truth_when_the_edit_is_rejected(tmp_path: Path) -> None:
    result, tools, project = await _replay(tmp_path, "reject", "leave the code alone")
    assert [t.tool for t in tools] == ["bash", "grep", "read", "edit"]
    assert tools[-1].state == "error"
    assert "The edit was not applied" in result.text
    assert _unittest(project).returncode != 0


def test_script_model_errors_name_the_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "script.json"
    broken.write_text('[\n  {"text": "a"},\n  {"text": }\n]', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"script\.json:3"):
        ScriptModel(broken)
    broken.write_text(json.dumps({"text": "not a list"}), encoding="utf-8")
    with pytest.raises(ConfigError, match="a JSON list of steps"):
        ScriptModel(broken)
    broken.write_text(json.dumps([{"echo": "everything"}]), encoding="utf-8")
    with pytest.raises(ConfigError, match="echo"):
        ScriptModel(broken)
