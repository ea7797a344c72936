"""``Runtime.location`` with a working directory inside the project: which root it takes, one scope per (root,
working directory), sessions recording both and reopening in both, built-ins acting from the working directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.config import Config
from tether.errors import UsageError
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "README.md").write_text("root readme\n")
    (root / "pkg" / "x.txt").write_text("pkg x\n")
    return root


async def _parts(session: Any) -> list[ToolPart]:
    return [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]


@pytest.mark.anyio
async def test_the_config_root_is_the_root_of_a_directory_below_it(tmp_path: Path, repo: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data", config=Config(root=repo)) as rt:
        loc = await rt.location(repo / "pkg")
        assert (loc.root, loc.directory) == (repo, repo / "pkg")
        assert await rt.location(str(repo / "pkg") + "/") is loc
        top = await rt.location(repo)
        assert top is not loc and (top.root, top.directory) == (repo, repo)
        # a directory outside the config's root is its own project
        (tmp_path / "other").mkdir()
        other = await rt.location(tmp_path / "other")
        assert other.root == other.directory == tmp_path / "other"


@pytest.mark.anyio
async def test_without_a_config_root_the_path_is_the_root_unless_one_is_given(
    tmp_path: Path, repo: Path
) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        alone = await rt.location(repo / "pkg")
        assert alone.root == alone.directory == repo / "pkg"
        given = await rt.location(repo / "pkg", root=repo)
        assert (given.root, given.directory) == (repo, repo / "pkg")
        with pytest.raises(UsageError, match="outside the project root"):
            await rt.location(repo, root=repo / "pkg")


@pytest.mark.anyio
async def test_a_session_records_both_and_reopens_in_both(tmp_path: Path, repo: Path) -> None:
    model = ScriptedModel(
        [[tool_call("read", {"path": "../README.md"}), tool_call("read", {"path": "x.txt"})], "read them"]
    )
    async with Runtime(data_dir=tmp_path / "data") as rt:
        loc = await rt.location(repo / "pkg", root=repo)
        session = await rt.sessions.create(loc, rules=[("external_directory", "*", "deny")])
        assert (session.info.project, session.info.directory) == (str(repo), str(repo / "pkg"))
        with model, anyio.fail_after(10):
            await session.prompt("read", model=model)
        readme, x = await _parts(session)
        assert readme.state == "completed" and "root readme" in readme.content[0].text  # type: ignore[union-attr]
        assert x.state == "completed" and "pkg x" in x.content[0].text  # type: ignore[union-attr]
        session_id = session.id
    # a new runtime whose config knows no root: the stored project is the root again
    async with Runtime(data_dir=tmp_path / "data", config=Config()) as rt:
        reopened = await rt.sessions.get(session_id)
        assert (reopened.location.root, reopened.location.directory) == (repo, repo / "pkg")
        model = ScriptedModel([[tool_call("read", {"path": "x.txt"})], "again"])
        with model, anyio.fail_after(10):
            await reopened.prompt("again", model=model)
        assert "pkg x" in (await _parts(reopened))[-1].content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_bash_and_search_tools_start_in_the_working_directory(tmp_path: Path, repo: Path) -> None:
    (repo / "pkg" / "found.py").write_text("NEEDLE = 1\n")
    (repo / "elsewhere.py").write_text("NEEDLE = 2\n")
    model = ScriptedModel(
        [
            [
                tool_call("bash", {"command": "pwd"}),
                tool_call("glob", {"pattern": "*.py"}),
                tool_call("grep", {"pattern": "NEEDLE"}),
                tool_call("list", {}),
            ],
            "done",
        ]
    )
    async with Runtime(data_dir=tmp_path / "data", config=Config(root=repo)) as rt:
        loc = await rt.location(repo / "pkg")
        session = await rt.sessions.create(loc, rules=[("*", "*", "allow")])
        with model, anyio.fail_after(20):
            await session.prompt("look", model=model)
        bash, glob, grep, listed = [p.content[0].text for p in await _parts(session)]  # type: ignore[union-attr]
    assert bash.splitlines()[0] == str(repo / "pkg")
    assert "found.py" in glob and "elsewhere.py" not in glob
    assert "found.py" in grep and "elsewhere.py" not in grep
    assert "x.txt" in listed and "README.md" not in listed
