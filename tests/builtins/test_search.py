from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether.builtins import BuiltinDeps, _rg, builtin_tools
from tether.bus import Bus
from tether.location import Location
from tether.output import OutputStore
from tether.permissions import PermissionService, SavedApprovals, StaticRules, builtin_agents
from tether.tools import Completed, ToolCall, ToolContext, ToolRegistry

pytestmark = pytest.mark.anyio


def _touch(path: Path, text: str = "", mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


async def test_glob_sorts_newest_first_with_absolute_paths(project, root: Path) -> None:
    _touch(root / "old.py", mtime=1_000)
    _touch(root / "src" / "new.py", mtime=3_000)
    _touch(root / "mid.py", mtime=2_000)
    _touch(root / "notes.md")
    text = await project.text("glob", pattern="**/*.py")
    assert text.splitlines() == [str(root / "src" / "new.py"), str(root / "mid.py"), str(root / "old.py")]


async def test_glob_respects_ignore_files_and_hidden(project, root: Path) -> None:
    _touch(root / ".gitignore", "ignored/\n*.log\n")
    _touch(root / ".ignore", "private.txt\n")
    for name in ("keep.txt", "ignored/x.txt", "a.log", "private.txt", ".hidden.txt", ".dir/y.txt"):
        _touch(root / name)
    text = await project.text("glob", pattern="**/*")
    assert text.splitlines() == [str(root / "keep.txt")]


async def test_glob_truncates_with_hint(project, root: Path) -> None:
    for i in range(7):
        _touch(root / f"f{i}.txt")
    outcome = await project.ok("glob", pattern="*.txt", limit=5)
    text = outcome.content[0].text  # type: ignore[union-attr]
    assert len(text.split("\n\n")[0].splitlines()) == 5
    assert text.endswith(
        "(Results are truncated: showing first 5 results. Consider using a more specific path or pattern.)"
    )
    assert outcome.metadata == {"count": 5, "truncated": True}


async def test_glob_no_results_and_bad_paths(project, root: Path) -> None:
    assert await project.text("glob", pattern="*.nothing") == "No files found"
    assert (
        await project.fail("glob", pattern="*", path="missing")
    ).error == "Search path does not exist: missing"
    _touch(root / "f.txt")
    assert (
        await project.fail("glob", pattern="*", path="f.txt")
    ).error == "Search path is not a directory: f.txt"


async def test_glob_asks_glob_with_the_pattern(project, root: Path) -> None:
    await project.text("glob", pattern="*.py", path=".")
    assert project.permissions.asked == [("glob", ("*.py",))]


async def test_glob_invalid_pattern(project) -> None:
    failed = await project.fail("glob", pattern="[")
    assert failed.error == "Invalid glob pattern: [ (unclosed character class)"


async def test_grep_groups_per_file_newest_first(project, root: Path) -> None:
    _touch(root / "old.py", "x = 1\ny = 2\nx = 3\n", mtime=1_000)
    _touch(root / "new.py", "x = 9\n", mtime=2_000)
    _touch(root / "other.md", "nothing\n")
    text = await project.text("grep", pattern=r"x = \d")
    assert text == (
        f"Found 3 matches\n\n{root / 'new.py'}:\n  Line 1: x = 9\n\n{root / 'old.py'}:\n  Line 1: x = 1\n  Line 3: x = 3"
    )


async def test_grep_include_literal_and_case(project, root: Path) -> None:
    _touch(root / "a.py", "Foo(1)\n")
    _touch(root / "b.txt", "foo(1)\n")
    assert "b.txt" not in await project.text("grep", pattern="foo", include="*.py", case_sensitive=False)
    assert "a.py" in await project.text("grep", pattern="Foo(1)", literal=True)
    assert await project.text("grep", pattern="FOO") == "No matches found"


async def test_grep_file_path_searches_only_that_file(project, root: Path) -> None:
    _touch(root / "d" / "one.txt", "needle\n")
    _touch(root / "d" / "two.txt", "needle\n")
    text = await project.text("grep", pattern="needle", path="d/one.txt")
    assert text == f"Found 1 matches\n\n{root / 'd' / 'one.txt'}:\n  Line 1: needle"


async def test_grep_cuts_long_lines_and_truncates(project, root: Path) -> None:
    _touch(root / "long.txt", "n" * 2500 + "\n" + "n\n" * 5)
    outcome = await project.ok("grep", pattern="n", limit=3)
    text = outcome.content[0].text  # type: ignore[union-attr]
    assert "  Line 1: " + "n" * 2000 + "... (line truncated to 2000 chars)\n" in text
    assert text.endswith(
        "(Results truncated: showing first 3 matches. Consider using a more specific path or pattern.)"
    )
    assert outcome.metadata == {"matches": 3, "truncated": True}


async def test_grep_invalid_regex_and_missing_path(project, root: Path) -> None:
    failed = await project.fail("grep", pattern="(unclosed")
    assert failed.error.startswith("Invalid regex pattern: ") and "unclosed group" in failed.error
    assert (await project.fail("grep", pattern="x", path="nowhere")).error == "Search path not found: nowhere"


async def test_grep_pattern_starting_with_dash(project, root: Path) -> None:
    _touch(root / "f.txt", "--flag\n")
    assert "Line 1: --flag" in await project.text("grep", pattern="--flag")


async def test_grep_asks_grep_with_the_pattern(project, root: Path) -> None:
    await project.text("grep", pattern="x")
    assert project.permissions.asked == [("grep", ("x",))]


async def test_list_tree_ignores_build_dirs(project, root: Path) -> None:
    for name in ("src/a.py", "src/pkg/b.py", "README.md", "node_modules/x/i.js", ".venv/lib/p.py", "build/o"):
        _touch(root / name)
    text = await project.text("list")
    assert text == f"{root}/\n  src/\n    pkg/\n      b.py\n    a.py\n  README.md"


async def test_list_ignore_parameter_and_cap(project, root: Path) -> None:
    for i in range(120):
        _touch(root / "many" / f"f{i:03}.txt")
    _touch(root / "skip" / "s.txt")
    outcome = await project.ok("list", ignore=["skip/"])
    text = outcome.content[0].text  # type: ignore[union-attr]
    assert "skip" not in text
    assert outcome.metadata == {"count": 100, "truncated": True}
    assert text.endswith("(Showing the first 100 files. Use a more specific path or the ignore parameter.)")


async def test_missing_rg_names_the_fix(project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_rg, "_locate", lambda: None)
    failed = await project.fail("glob", pattern="*")
    assert failed.error == _rg.RG_MISSING_MESSAGE and "pip install ripgrep==14.1.0" in failed.error


def test_rg_is_found_in_the_environment() -> None:
    assert Path(_rg.find_rg()).name in {"rg", "rg.exe"}


# --- grep and the read rules (.env files) --------------------------------------------------------------------------


async def test_grep_of_a_file_asks_read_for_it_before_searching(make_project, root: Path, kit) -> None:
    (root / ".env").write_text("API_KEY=sk-very-secret\n")
    project = make_project(kit.Recorder(decide=lambda r: "deny" if r.action == "read" else "allow"))
    failed = await project.fail("grep", pattern=".", path=".env")
    assert failed.kind == "blocked" and "sk-very-secret" not in failed.error
    assert project.permissions.asked == [("grep", (".",)), ("read", (".env",))]


async def test_grep_matches_in_a_file_ask_read_before_they_are_shown(make_project, root: Path, kit) -> None:
    (root / ".env").write_text("API_KEY=sk-very-secret\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("API = 1\n")
    project = make_project(kit.Recorder(decide=lambda r: "deny" if ".env" in r.resources else "allow"))
    failed = await project.fail("grep", pattern="API")
    assert failed.kind == "blocked" and "sk-very-secret" not in failed.error
    action, resources = project.permissions.asked[-1]
    assert action == "read" and sorted(resources) == [".env", "src/app.py"]
    assert project.permissions.requests[-1].save == resources


async def test_grep_without_matches_asks_no_read(project, root: Path) -> None:
    (root / "a.py").write_text("x = 1\n")
    assert await project.text("grep", pattern="nothing-like-this") == "No matches found"
    assert [a for a, _ in project.permissions.asked] == ["grep"]


async def test_default_build_agent_asks_before_grep_shows_env_lines(root: Path, tmp_path: Path) -> None:
    agent = builtin_agents(tmp_path / "data", tmp_path / "tmp")["build"]
    (root / ".env").write_text("API_KEY=sk-very-secret\n")
    (root / ".env.example").write_text("API_KEY=\n")
    (root / "app.py").write_text("API = 1\n")
    bus = Bus()
    asked: list[Any] = []
    seen = anyio.Event()

    def on_asked(event: Any) -> None:
        asked.append(event)
        seen.set()

    bus.subscribe("permission.asked", on_asked)
    async with SavedApprovals(tmp_path / "approvals.db") as saved:
        service = PermissionService(bus=bus, saved=saved, resolve=StaticRules(project="prj", agent=agent))
        deps = BuiltinDeps(location=Location(root), permissions=service, output=OutputStore(tmp_path / "out"))
        registry = ToolRegistry(output=OutputStore(tmp_path / "out"))
        registry.register(builtin_tools(deps))
        step = registry.materialize(rules=[])
        ctx = ToolContext(session_id="ses_1", agent="build", message_id="msg_1", call_id="call_1")
        call = ToolCall(call_id="c1", name="grep", input={"pattern": "API", "path": "app.py"})
        allowed = await step.settle(call, ctx)
        assert isinstance(allowed, Completed) and asked == []
        async with anyio.create_task_group() as tg:
            # The .env request waits for a person: observe it, then stop waiting.
            tg.start_soon(step.settle, ToolCall(call_id="c2", name="grep", input={"pattern": "API"}), ctx)
            with anyio.fail_after(5):
                await seen.wait()
            tg.cancel_scope.cancel()
        request = asked[0].request.request
        assert request.action == "read" and ".env" in request.resources


async def test_grep_cuts_long_lines_like_read(project, root: Path) -> None:
    (root / "wide.txt").write_text("needle" + "y" * 3000 + "\n")
    grepped = await project.text("grep", pattern="needle")
    read = await project.text("read", path="wide.txt")
    cut = "needle" + "y" * 1994 + "... (line truncated to 2000 chars)"
    assert grepped.endswith("  Line 1: " + cut)
    assert read.endswith("1: " + cut)
