"""The "read-only session" example of docs/permissions.md, run as documented: it is read-only in fact.

The config is read from the documentation itself, loaded as the user's config, and every command goes through the
real bash tool and the real permission service; anything asked is rejected (nobody is there to approve it).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether.builtins import BuiltinDeps
from tether.builtins.bash import make
from tether.bus import Bus
from tether.config import load_config
from tether.location import Location
from tether.output import OutputStore
from tether.permissions import PermissionAsked, PermissionService, SavedApprovals, StaticRules, builtin_agents
from tether.tools import Completed, Failed, ToolCall, ToolContext, ToolRegistry

pytestmark = pytest.mark.anyio

DOCS = Path(__file__).resolve().parents[2] / "docs" / "permissions.md"


def documented_read_only_config() -> dict[str, Any]:
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(r"A read-only session[^\n]*\n+```json\n(.*?)\n```", text, re.S)
    assert found is not None, "docs/permissions.md lost its read-only session example"
    return json.loads(found.group(1))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True, capture_output=True
    )


def make_project(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("print(1)\n")
    git(project, "init", "-q")
    git(project, "add", "app.py")
    git(project, "commit", "-qm", "init")
    (project / "app.py").write_text("print(2)\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the canary secret\n")
    return project, outside


async def run(
    tmp_path: Path, project: Path, commands: list[str]
) -> tuple[list[Completed | Failed], list[str]]:
    """Run ``commands`` through the bash tool under the documented config; every ask is rejected."""
    user_file = tmp_path / "user.json"
    user_file.write_text(json.dumps(documented_read_only_config()))
    config = load_config(project, user_file=user_file, environ={})
    agent = builtin_agents(tmp_path / "data", tmp_path / "tmp", config)["build"]
    bus = Bus()
    asked: list[str] = []
    outcomes: list[Completed | Failed] = []
    async with SavedApprovals(tmp_path / "approvals.db") as saved:
        service = PermissionService(bus=bus, saved=saved, resolve=StaticRules(project="prj", agent=agent))
        output = OutputStore(tmp_path / "out")
        registry = ToolRegistry(output=output)
        registry.register(
            {"bash": make(BuiltinDeps(location=Location(project), permissions=service, output=output))}
        )
        async with anyio.create_task_group() as tg:

            async def reject(request_id: str) -> None:
                await service.reply(request_id, "reject", "read-only session")

            def on_asked(event: PermissionAsked) -> None:
                asked.append(f"{event.request.request.action} {list(event.request.request.resources)}")
                tg.start_soon(reject, event.request.id)

            with bus.subscribe(PermissionAsked, on_asked):
                for number, command in enumerate(commands):
                    call_id = f"call_{number}"
                    ctx = ToolContext(session_id="ses_1", agent="build", message_id="msg_1", call_id=call_id)
                    call = ToolCall(call_id=call_id, name="bash", input={"command": command})
                    with anyio.fail_after(30):
                        outcomes.append(await registry.materialize(rules=[]).settle(call, ctx))
    return outcomes, asked


async def test_the_documented_read_only_session_reads(tmp_path: Path) -> None:
    project, _ = make_project(tmp_path)
    outcomes, asked = await run(tmp_path, project, ["git status", "git diff"])
    assert all(isinstance(o, Completed) for o in outcomes), outcomes
    assert asked == []


async def test_git_diff_output_option_cannot_write_a_file(tmp_path: Path) -> None:
    project, outside = make_project(tmp_path)
    commands = [f"git diff --output={project}/patch.txt", f"git diff --output {outside}/patch.txt"]
    outcomes, _ = await run(tmp_path, project, commands)
    assert all(isinstance(o, Failed) for o in outcomes), outcomes
    assert not (project / "patch.txt").exists()
    assert not (outside / "patch.txt").exists()


async def test_git_diff_no_index_cannot_read_outside_the_project(tmp_path: Path) -> None:
    project, outside = make_project(tmp_path)
    outcomes, asked = await run(tmp_path, project, [f"git diff --no-index {outside}/secret.txt /dev/null"])
    assert isinstance(outcomes[0], Failed)
    assert "the canary secret" not in str(outcomes[0])
    assert asked and asked[0].startswith("external_directory")


async def test_git_diff_redirected_into_a_project_file_writes_nothing(tmp_path: Path) -> None:
    project, _ = make_project(tmp_path)
    commands = ["git diff > app.py", "git diff >> app.py", "git diff 1<>app.py", "git status; > app.py"]
    outcomes, _ = await run(tmp_path, project, commands)
    assert all(isinstance(o, Failed) for o in outcomes), outcomes
    assert (project / "app.py").read_text() == "print(2)\n"
