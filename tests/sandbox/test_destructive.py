"""With bubblewrap holding commands, the built-in agents run them without asking, except what destroys work.

Each command goes through a real session, the bash tool's own analysis and the permission service, in a git project
with uncommitted work: a destructive spelling asks (rejected here) and the work survives; a command that only adds
runs without a question.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from tether import Runtime
from tether.permissions import PermissionAsked
from tether.sandbox import detect
from tether.testing import ScriptedModel, tool_call

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        detect("auto").mechanism != "bwrap", reason=f"no bubblewrap: {detect('auto').reasons}"
    ),
]

KEPT = "committed line\nuncommitted work\n"


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / "kept.txt").write_text("committed line\n")
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    (root / "kept.txt").write_text(KEPT)  # work no commit holds
    (root / "new.txt").write_text("untracked work\n")
    return root


def state(project: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(project.iterdir()) if p.is_file()}


async def run(tmp_path: Path, project: Path, command: str) -> list[tuple[str, tuple[str, ...]]]:
    """Run ``command`` with the bash tool in a session of the default agent; reject every ask; return the asks."""
    asks: list[tuple[str, tuple[str, ...]]] = []
    async with Runtime(data_dir=tmp_path / "data") as rt:
        send, receive = anyio.create_memory_object_stream[PermissionAsked](10)
        rt.bus.subscribe(PermissionAsked, send.send_nowait)

        async def reject() -> None:
            async for asked in receive:
                asks.append((asked.request.request.action, tuple(asked.request.request.resources)))
                await rt.permissions.reply(asked.request.id, "reject", "not this one")

        session = await rt.sessions.create(project)
        model = ScriptedModel([[tool_call("bash", {"command": command})], "done"])
        with model, anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(reject)
                await session.prompt("go", model=model)
                tg.cancel_scope.cancel()
        send.close()
        receive.close()
    return asks


@pytest.mark.parametrize(
    "command",
    [
        "rm kept.txt",
        "rm -rf .",
        "git clean -fd",
        "git -C . clean -fdx",  # git's own options before the subcommand
        "git reset --hard",
        "git --no-pager reset --hard HEAD",
        "git checkout -- kept.txt",
        "git checkout .",
        "git restore kept.txt",
        "git stash && git stash drop",
        "find . -name '*.txt' -delete",
        "mv a.txt kept.txt",  # moving over an existing file
        "truncate -s0 kept.txt",
        "> kept.txt",
        "sort kept.txt > kept.txt",
        "cat a.txt 2> kept.txt",
        "cat a.txt &> kept.txt",
        "cat a.txt >| kept.txt",
        "sh -c 'rm new.txt'",
    ],
)
async def test_what_destroys_work_still_asks_and_the_work_survives_a_rejection(
    tmp_path: Path, project: Path, command: str
) -> None:
    before = state(project)
    asks = await run(tmp_path, project, command)
    assert [action for action, _ in asks] == ["bash"], asks
    assert state(project) == before and (project / "kept.txt").read_text() == KEPT


@pytest.mark.parametrize(
    ("command", "made"),
    [
        ("touch made.txt", "made.txt"),
        ("cp a.txt made.txt", "made.txt"),
        ("echo more >> kept.txt && echo done > /dev/null", "kept.txt"),
        ("mkdir -p build && printf 'x' | tee build/out.txt", "build/out.txt"),
        (
            "git add -A && git commit -qm wip && git checkout -b feature && git log -1 --format=%s > /dev/null",
            "",
        ),
    ],
)
async def test_what_only_adds_runs_without_a_question(
    tmp_path: Path, project: Path, command: str, made: str
) -> None:
    assert await run(tmp_path, project, command) == []
    if made:
        assert (project / made).exists()
    else:
        head = subprocess.run(
            ["git", "-C", str(project), "branch", "--show-current"], capture_output=True, text=True
        )
        assert head.stdout.strip() == "feature"
    assert (project / "kept.txt").read_text().startswith(KEPT)
