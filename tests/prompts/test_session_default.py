"""A session prompted without ``system`` sends tether's default system prompt; with ``system``, exactly that."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.config import parse_config
from tether.errors import UsageError
from tether.prompts import base_prompt, measure_environment
from tether.session import Sessions
from tether.testing import ScriptedModel

pytestmark = pytest.mark.anyio


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "config"))  # no user AGENTS.md from this machine
    path = tmp_path / "project"
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "topic"], cwd=path, check=True)
    (path / "AGENTS.md").write_text("Use tabs.\n", encoding="utf-8")
    return path


async def test_default_system_is_base_environment_then_instructions(tmp_path: Path, project: Path) -> None:
    model = ScriptedModel(["hello"])
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project)
        await session.prompt("hi", model=model)
    (request,) = model.requests
    base, env, agents_md = request.system
    assert base == base_prompt("build", "test/scripted")
    assert f"Project root: {project}" in env
    assert "Git branch: topic (no commits yet)" in env
    # an embedding runtime's project is untrusted by default: git status runs with every program turned off
    assert "Git status: 1 untracked" in env  # AGENTS.md
    assert "Model: test/scripted" in env
    assert agents_md == f"Instructions from: {project / 'AGENTS.md'}\nUse tabs.\n"


async def test_explicit_system_replaces_the_default_whole(tmp_path: Path, project: Path) -> None:
    model = ScriptedModel(["one", "two"])
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project, agent="explore")
        await session.prompt("hi", model=model, system=["Only this."])
        await session.prompt("again", model=model, system=[])
    assert [r.system for r in model.requests] == [("Only this.",), ()]


async def test_agent_text_and_configured_prompt(tmp_path: Path, project: Path) -> None:
    config = parse_config({"agent": {"build": {"prompt": "Be brief."}}}, file="tether.json")
    model = ScriptedModel(["a", "b"])
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        await (await rt.sessions.create(project)).prompt("hi", model=model)
        await rt.prompt(project, "look", model=model, agent="plan")
    assert model.requests[0].system[0] == "Be brief."
    assert model.requests[1].system[0] == base_prompt("plan", "test/scripted")
    assert "<env>" in model.requests[1].system[1]


async def test_bare_sessions_have_no_instruction_texts(tmp_path: Path, project: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        location = await rt.location(project)
        bare = Sessions(store=rt.store, bus=rt.bus, agents=rt.agents)
        texts = await bare.system_prompt(location, agent="explore", model="openai/gpt-5")
        assert texts[0] == base_prompt("explore", "openai/gpt-5")
        assert len(texts) == 2
        given = await bare.system_prompt(location, agent="build", model="a/b", instructions=["x\udcff"])
        assert given[2] == "x\\xff"  # storable: a lone surrogate from a non-UTF-8 file is shown as an escape
        with pytest.raises(UsageError, match='Agent not found: "nobody"'):
            await bare.system_prompt(location, agent="nobody", model="a/b")


class _PlainLocation:
    """A SessionLocation that is not a Runtime's: the runtime has no instruction files for it."""

    def __init__(self, root: Path, tools: Any) -> None:
        self.root = self.directory = root
        self.tools = tools


async def test_runtime_reads_instructions_only_for_its_own_locations(tmp_path: Path, project: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        plain = _PlainLocation(project, rt.tools)
        texts = await rt.sessions.service.system_prompt(plain, agent="build", model="a/b")
        assert len(texts) == 2 and "<env>" in texts[1]
        own = await rt.sessions.service.system_prompt(await rt.location(project), agent="build", model="a/b")
        assert own[2].endswith("Use tabs.\n")


async def test_instructions_and_environment_are_read_in_one_hand_off(
    tmp_path: Path, project: Path, counted_hand_offs: Any
) -> None:
    # Each worker-thread hand-off of a turn waits for a thread to wake and for the loop to take the answer back
    # (~0.3 ms on a busy machine): the instruction files are read where the environment is measured.
    async with Runtime(data_dir=tmp_path / "data") as rt:
        location = await rt.location(project)
        with counted_hand_offs() as hand_offs:
            texts = await rt.sessions.service.system_prompt(location, agent="build", model="a/b")
    assert len(hand_offs) == 1
    assert "Git branch: topic" in texts[1] and texts[2].endswith("Use tabs.\n")


async def test_a_slow_instruction_read_leaves_git_its_whole_time(tmp_path: Path) -> None:
    # The instruction files are read first in the thread that measures the environment; the bound of the git part
    # (its timeout + 1 s) starts when that read ends: a slow read is waited for and never makes the block say git was
    # slow. (tmp_path is in no repository: git's part is a few lstat, however loaded the machine.)
    read: list[str] = []

    def slow() -> None:
        time.sleep(1.2)  # a slow filesystem: longer than the whole bound below (0.05 + 1 s)
        read.append("done")

    environment = await measure_environment(
        root=tmp_path, directory=tmp_path, model="a/b", git_timeout=0.05, beside=slow
    )
    assert read == ["done"] and environment.git is None and environment.git_note == ""


async def test_a_hung_instruction_read_is_still_cancelled_with_the_turn(tmp_path: Path) -> None:
    release = threading.Event()
    with anyio.move_on_after(0.2) as scope:  # the turn is cancelled (the user's Ctrl-C)
        await measure_environment(
            root=tmp_path, directory=tmp_path, model="a/b", beside=lambda: release.wait(30)
        )
    release.set()
    assert scope.cancelled_caught  # the abandoned thread ends on its own


async def test_an_async_instruction_reader_is_awaited(tmp_path: Path) -> None:
    # The form Sessions(instructions=) had before the read moved beside the environment: an ``async def``.
    async def reader(location: Any, agent: str) -> tuple[str, ...]:
        await anyio.sleep(0)
        return (f"For {agent}.",)

    async with Runtime(data_dir=tmp_path / "data") as rt:
        sessions = Sessions(store=rt.store, bus=rt.bus, agents=rt.agents, instructions=reader)
        texts = await sessions.system_prompt(_PlainLocation(tmp_path, rt.tools), agent="build", model="a/b")
    assert texts[2] == "For build."
