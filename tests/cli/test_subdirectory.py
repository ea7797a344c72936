"""Commands started in a subdirectory (``proj/pkg``) work in the project: the root found by walking up is the
project (what is external, what permission resources name, where sessions are grouped) and the subdirectory is the
working directory (relative paths, bash's cwd, the prompt's environment block). Real subprocess runs with a scripted
model and no terminal, so any ask is rejected and shows in the output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _tool_parts(cli: Any, stderr: str) -> list[dict[str, Any]]:
    session_id = stderr.split("session ", 1)[1].split()[0]
    timeline = cli.json("session", "show", session_id, "--json")
    return [
        p
        for item in timeline["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p["type"] == "tool"
    ]


@pytest.fixture(params=["config", "git"])
def proj(request: pytest.FixtureRequest, cli: Any, tmp_path: Path) -> Path:
    """``proj/`` (a ``.tether/tether.json`` or a git root) with ``pkg/`` below it and ``outside/`` beside it.

    The runs' temp directory is moved aside: everything here lies in the machine's temp directory, which the
    built-in agents may read without asking (``<tmp>/*``), and an outside read must ask as in a real checkout.
    """
    (tmp_path / "tmp").mkdir()
    cli.env["TMPDIR"] = str(tmp_path / "tmp")
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    if request.param == "config":
        (root / ".tether").mkdir()
        (root / ".tether" / "tether.json").write_text("{}", encoding="utf-8")
    else:
        (root / ".git").mkdir()
    (root / "README.md").write_text("root readme\n", encoding="utf-8")
    (root / "x.txt").write_text("root x\n", encoding="utf-8")
    (root / "pkg" / "x.txt").write_text("pkg x\n", encoding="utf-8")
    (root / "pkg" / "secret.txt").write_text("pkg secret\n", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "canary.txt").write_text("CANARY-OUTSIDE\n", encoding="utf-8")
    return root


def _run(cli: Any, cwd: Path, calls: list[dict[str, Any]], *extra: str) -> Any:
    model = cli.script([{"tool_calls": calls}, {"text": "done"}])
    result = cli.run("run", "go", "--model", model, *extra, cwd=cwd)
    assert result.code == 0, result.output
    return result


def test_a_file_above_the_working_directory_inside_the_project_needs_no_approval(
    cli: Any, proj: Path
) -> None:
    result = _run(cli, proj / "pkg", [_call("read", path="../README.md")])
    assert "external_directory" not in result.output
    (read,) = _tool_parts(cli, result.stderr)
    assert read["state"] == "completed", read
    assert "root readme" in json.dumps(read)


def test_a_relative_path_is_relative_to_the_working_directory(cli: Any, proj: Path) -> None:
    result = _run(cli, proj / "pkg", [_call("read", path="x.txt")])
    (read,) = _tool_parts(cli, result.stderr)
    assert read["state"] == "completed", read
    shown = json.dumps(read)
    assert "pkg x" in shown and "root x" not in shown


def test_a_root_config_rule_on_a_root_relative_resource_applies_in_the_subdirectory(
    cli: Any, proj: Path
) -> None:
    cli.configure(proj, {"permission": {"read": {"pkg/secret*": "deny"}}})
    result = _run(cli, proj / "pkg", [_call("read", path="secret.txt"), _call("read", path="x.txt")])
    secret, other = _tool_parts(cli, result.stderr)
    assert secret["state"] == "error", secret
    assert "pkg secret" not in json.dumps(secret)
    assert other["state"] == "completed", other


def test_bash_runs_in_the_working_directory(cli: Any, proj: Path) -> None:
    result = _run(cli, proj / "pkg", [_call("bash", command="pwd")], "--yes")
    (bash,) = _tool_parts(cli, result.stderr)
    assert bash["state"] == "completed", bash
    assert f"{(proj / 'pkg').resolve()}\\n" in json.dumps(bash)


def test_a_path_outside_the_root_still_asks_for_the_external_directory(cli: Any, proj: Path) -> None:
    result = _run(cli, proj / "pkg", [_call("read", path="../../outside/canary.txt")])
    assert "rejected (no terminal to ask): external_directory" in result.stdout, result.output
    (read,) = _tool_parts(cli, result.stderr)
    assert read["state"] == "error"
    assert "CANARY-OUTSIDE" not in result.output and "CANARY-OUTSIDE" not in json.dumps(read)


def test_a_symlink_in_the_working_directory_leading_out_of_the_root_is_not_inside(
    cli: Any, proj: Path
) -> None:
    (proj / "pkg" / "out").symlink_to(proj.parent / "outside")
    result = _run(cli, proj / "pkg", [_call("read", path="out/canary.txt")], "--yes")
    (read,) = _tool_parts(cli, result.stderr)
    assert read["state"] == "error", read
    assert "resolves outside the project through a symlink" in read["error"]
    assert "CANARY-OUTSIDE" not in json.dumps(read)


def test_continue_from_the_root_continues_the_conversation_started_in_the_subdirectory(
    cli: Any, proj: Path
) -> None:
    model = cli.script([{"text": "first answer"}, {"text": "second answer"}])
    first = cli.run("run", "first question", "--model", model, cwd=proj / "pkg")
    assert first.code == 0, first.output
    second = cli.run("run", "second question", "--model", model, "--continue", cwd=proj)
    assert second.code == 0, second.output
    assert "second answer" in second.stdout
    for where in (proj, proj / "pkg"):  # one project, one list, from anywhere in it
        listed = cli.run("sessions", "--json", cwd=where)
        assert len(json.loads(listed.stdout)) == 1, listed.output
    short = cli.run("sessions", cwd=proj).stdout.splitlines()[1].split()[0]  # the row's short id
    timeline = cli.json("session", "show", short, "--json")
    assert [item["text"] for item in timeline["timeline"] if item["type"] == "user"] == [
        "first question",
        "second question",
    ]


def test_the_continued_session_keeps_its_working_directory(cli: Any, proj: Path) -> None:
    model = cli.script(
        [{"text": "started"}, {"tool_calls": [_call("read", path="x.txt")]}, {"text": "read it"}]
    )
    assert cli.run("run", "start", "--model", model, cwd=proj / "pkg").code == 0
    result = cli.run("run", "go on", "--model", model, "--continue", cwd=proj)
    assert result.code == 0, result.output
    (read,) = _tool_parts(cli, result.stderr)
    assert "pkg x" in json.dumps(read)  # resumed in pkg/, where its history's relative paths were written


def test_the_environment_block_shows_the_root_and_the_working_directory(cli: Any, proj: Path) -> None:
    (proj / "AGENTS.md").write_text("ROOT-RULES\n", encoding="utf-8")
    (proj / "pkg" / "AGENTS.md").write_text("PKG-RULES\n", encoding="utf-8")
    model = cli.script([{"echo": "system"}])
    result = cli.run("run", "hello", "--model", model, cwd=proj / "pkg")
    assert result.code == 0, result.output
    assert f"Project root: {proj.resolve()}\n" in result.stdout
    assert f"Working directory: {(proj / 'pkg').resolve()}\n" in result.stdout
    assert "ROOT-RULES" in result.stdout and "PKG-RULES" in result.stdout
    shown = cli.run("run", "--show-prompt", "--model", model, cwd=proj / "pkg")
    assert shown.code == 0, shown.output
    assert f"Project root: {proj.resolve()}\n" in shown.stdout
    assert f"Working directory: {(proj / 'pkg').resolve()}\n" in shown.stdout


def test_tool_call_from_the_subdirectory_works_in_the_project(cli: Any, proj: Path) -> None:
    inside = cli.run("tool", "call", "read", '{"path": "../README.md"}', cwd=proj / "pkg")
    assert inside.code == 0, inside.output
    assert "root readme" in inside.stdout
    here = cli.run("tool", "call", "read", '{"path": "x.txt"}', cwd=proj / "pkg")
    assert "pkg x" in here.stdout, here.output
    outside = cli.run("tool", "call", "read", '{"path": "../../outside/canary.txt"}', cwd=proj / "pkg")
    assert outside.code == 1
    assert "CANARY-OUTSIDE" not in outside.output


def test_dir_names_the_working_directory_inside_the_project(cli: Any, proj: Path) -> None:
    result = _run(cli, proj.parent, [_call("read", path="../README.md")], "--dir", str(proj / "pkg"))
    (read,) = _tool_parts(cli, result.stderr)
    assert read["state"] == "completed", read
    assert "root readme" in json.dumps(read)


def test_explain_resolves_resources_against_the_root_and_bash_against_the_working_directory(
    cli: Any, proj: Path
) -> None:
    cli.configure(proj, {"permission": {"read": {"pkg/secret*": "deny"}}})
    explained = cli.run("permissions", "--explain", "read", "pkg/secret.txt", cwd=proj / "pkg")
    assert explained.code == 0, explained.output
    assert 'deny by read "pkg/secret*"' in explained.stdout, explained.stdout
    bash = cli.run("permissions", "--explain", "bash", "ls > out.txt", cwd=proj / "pkg")
    assert bash.code == 0, bash.output
    assert f"path: {(proj / 'pkg').resolve()}/out.txt (write, inside)" in bash.stdout, bash.stdout
