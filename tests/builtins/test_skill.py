"""The skill tool: Agent Skills folders found on disk (real files, symlinks, permissions), loaded through settle."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tether import Runtime
from tether.builtins import BuiltinDeps, builtin_tools
from tether.builtins._skills import FrontMatterError, discover_skills, parse_skill
from tether.content import text_of
from tether.location import Location
from tether.output import OutputStore
from tether.tools import Completed, Failed, ToolCall, ToolRegistry

pytestmark = pytest.mark.anyio


def skill_md(name: str, description: str = "Does a thing.", body: str = "Step one.\nStep two.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"


def make_skill(folder: Path, name: str, text: str | None = None, **files: str) -> Path:
    directory = folder / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(text if text is not None else skill_md(name), encoding="utf-8")
    for relative, content in files.items():
        path = directory / relative.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return directory


# -- the front matter -----------------------------------------------------------------------------------------------


def test_front_matter_forms() -> None:
    text = (
        "---\n"
        "# a comment\n"
        "name: 'pdf-tools'\n"
        "description: >-\n"
        "  Fill PDF forms\n"
        "  and merge files.\n"
        "license: MIT\n"
        "metadata:\n"
        "  author: someone\n"
        "  tags: [a, b]\n"
        "allowed-tools: Read Grep\n"
        "---\n"
        "# PDF\n\nUse it.\n"
    )
    assert parse_skill(text) == ("pdf-tools", "Fill PDF forms and merge files.", "# PDF\n\nUse it.")
    assert parse_skill('---\nname: "a-b"\ndescription: "say \\"hi\\"" # c\n---\nx')[:2] == ("a-b", 'say "hi"')
    assert parse_skill("---\nname: a\ndescription: first line\n  continued here\n---\n")[1] == (
        "first line continued here"
    )
    assert parse_skill("\ufeff---\nname: a\ndescription: |\n  one\n  two\n---\n")[1] == "one two"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name: a\ndescription: b\n", "does not start"),
        ("---\nname: a\ndescription: b\n", "no closing"),
        ("---\ndescription: b\n---\n", "no name"),
        ("---\nname: a\n---\n", "no description"),
        ("---\nname: Bad_Name\ndescription: b\n---\n", "not a skill name"),
        ("---\nname: a--b\ndescription: b\n---\n", "not a skill name"),
        ("---\nname: -a\ndescription: b\n---\n", "not a skill name"),
        ("---\nname: ../../etc\ndescription: b\n---\n", "not a skill name"),
        ("---\nname: a*\ndescription: b\n---\n", "not a skill name"),
        (f"---\nname: {'a' * 65}\ndescription: b\n---\n", "not a skill name"),
        (f"---\nname: a\ndescription: {'d' * 1025}\n---\n", "longer than"),
        ("---\nname: a\nname: b\ndescription: c\n---\n", "appears twice"),
        ("---\nname: &x a\ndescription: b\n---\n", "anchors"),
        ("---\nname: a\ndescription: *alias\n---\n", "anchors"),
        ("---\nname: a\ndescription: 'open\n---\n", "single-quoted"),
        ("---\nname: a\ndescription:\n  nested: map\n---\n", "nested"),
        ("---\nname: a\n\tdescription: b\n---\n", "tabs"),
        ("---\n  name: a\ndescription: b\n---\n", "indented"),
        ("---\n!!python/object:os.system name: a\n---\n", "key: value"),
    ],
)
def test_malformed_front_matter_is_refused_with_the_reason(text: str, problem: str) -> None:
    with pytest.raises(FrontMatterError, match=problem):
        parse_skill(text)


# -- discovery ------------------------------------------------------------------------------------------------------


@pytest.fixture
def user(tmp_path: Path) -> Path:
    path = tmp_path / "config"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_skills_are_found_in_every_folder_in_order(project: Path, user: Path) -> None:
    make_skill(user / "skills", "mine")
    make_skill(project / ".tether" / "skills", "alpha")
    make_skill(project / ".opencode" / "skills", "beta")
    make_skill(project / ".opencode" / "skill", "gamma")
    make_skill(project / ".claude" / "skills" / "group", "delta")  # nested one level
    make_skill(project / "pkg" / ".tether" / "skills", "inner")
    found = discover_skills(Location(project, directory=project / "pkg"), user)
    assert [s.name for s in found.found] == ["mine", "inner", "alpha", "beta", "gamma", "delta"]
    assert [s.origin for s in found.found] == ["user"] + ["project"] * 5
    assert found.refused == ()
    assert found.found[2].directory == (project / ".tether" / "skills" / "alpha").resolve()
    # from the root, the package's folder is not on the way
    assert "inner" not in [s.name for s in discover_skills(Location(project), user).found]


def test_the_first_skill_of_a_name_wins_and_the_user_comes_first(project: Path, user: Path) -> None:
    make_skill(user / "skills", "deploy", skill_md("deploy", "The user's own deploy."))
    make_skill(project / ".tether" / "skills", "deploy", skill_md("deploy", "A cloned repository's deploy."))
    make_skill(project / ".claude" / "skills", "review")
    make_skill(project / ".claude" / "skills", "review-copy", skill_md("review"))
    found = discover_skills(Location(project), user)
    assert [(s.name, s.description) for s in found.found] == [
        ("deploy", "The user's own deploy."),
        ("review", "Does a thing."),
    ]
    assert len(found.refused) == 2
    assert all("first found wins" in line for line in found.refused)


def test_project_skills_leading_outside_are_refused(project: Path, user: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make_skill(outside, "secret")
    (outside / "note.md").write_text(skill_md("linked"), encoding="utf-8")
    # the whole skills folder is a link out of the project
    (project / ".claude").mkdir()
    (project / ".claude" / "skills").symlink_to(outside)
    # one SKILL.md is a link to a file outside
    (project / ".tether" / "skills" / "linked").mkdir(parents=True)
    (project / ".tether" / "skills" / "linked" / "SKILL.md").symlink_to(outside / "note.md")
    # a skill folder linked out of the project is not walked
    (project / ".opencode" / "skills").mkdir(parents=True)
    (project / ".opencode" / "skills" / "secret").symlink_to(outside / "secret")
    found = discover_skills(Location(project), user)
    assert found.found == ()
    assert len(found.refused) == 2
    assert all("refused" in line for line in found.refused)
    # the user's own folder may link wherever the user wants
    (user / "skills").mkdir()
    (user / "skills" / "secret").symlink_to(outside / "secret")
    assert [s.name for s in discover_skills(Location(project), user).found] == ["secret"]


def test_a_skill_others_may_write_is_refused(project: Path, user: Path) -> None:
    directory = make_skill(project / ".tether" / "skills", "shared")
    (directory / "SKILL.md").chmod(0o666)
    found = discover_skills(Location(project), user)
    assert found.found == ()
    assert "anyone may write it" in found.refused[0]


def test_malformed_skills_are_skipped_with_a_line(project: Path, user: Path) -> None:
    make_skill(project / ".tether" / "skills", "good")
    make_skill(project / ".tether" / "skills", "bad", "---\nname: Bad Name\ndescription: x\n---\n")
    (project / ".tether" / "skills" / "fifo").mkdir()
    os.mkfifo(project / ".tether" / "skills" / "fifo" / "SKILL.md")  # must not hang discovery
    found = discover_skills(Location(project), user)
    assert [s.name for s in found.found] == ["good"]
    assert len(found.refused) == 2


# -- the tool -------------------------------------------------------------------------------------------------------


class Tools:
    def __init__(self, project: Path, user: Path | None, permissions: Any) -> None:
        location = Location(project)
        self.deps = BuiltinDeps(
            location=location,
            permissions=permissions,
            output=OutputStore(project.parent / "out"),
            skills=discover_skills(location, user),
        )
        self.tools = builtin_tools(self.deps)
        self.registry = ToolRegistry(output=OutputStore(project.parent / "out"))
        self.registry.register(self.tools)

    async def call(self, ctx: Any, **input: Any) -> Completed | Failed:
        step = self.registry.materialize(rules=[])
        return await step.settle(ToolCall(call_id="call_1", name="skill", input=input), ctx)


async def test_loading_a_skill_returns_its_body_and_files(
    project: Path, user: Path, tmp_path: Path, kit: Any
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret", encoding="utf-8")
    directory = make_skill(
        project / ".tether" / "skills",
        "pdf",
        skill_md("pdf", "Fill PDF forms.", "# PDF\n\nRun scripts/fill.py."),
        scripts__fill="print()",
        reference__forms_md="forms",
        **{".hidden": "h"},
    )
    (directory / "escape").symlink_to(outside)
    (directory / "alias.txt").symlink_to(directory / ".hidden")
    (directory / "linkdir").symlink_to(tmp_path)
    recorder = kit.Recorder()
    tools = Tools(project, user, recorder)
    assert "- pdf: Fill PDF forms." in tools.tools["skill"].description
    outcome = await tools.call(kit.ctx, name="pdf")
    assert isinstance(outcome, Completed), outcome
    text = text_of(outcome.content)
    assert text.startswith('<skill_content name="pdf">\n# Skill: pdf\n\n# PDF\n\nRun scripts/fill.py.')
    assert f"Base directory for this skill: {directory.resolve()}" in text
    files = [line[6:-7] for line in text.splitlines() if line.startswith("<file>")]
    assert files == [".hidden", "alias.txt", "reference/forms_md", "scripts/fill"]
    assert recorder.asked == [("skill", ("pdf",))]
    assert recorder.requests[0].save == ("pdf",)
    assert outcome.metadata == {"name": "pdf", "dir": str(directory.resolve())}


async def test_a_denied_skill_is_not_read(project: Path, user: Path, kit: Any) -> None:
    directory = make_skill(project / ".tether" / "skills", "pdf")
    tools = Tools(project, user, kit.Recorder(decide=lambda request: "deny"))
    kit.watch([(directory / "SKILL.md").resolve()])
    outcome = await tools.call(kit.ctx, name="pdf")
    assert isinstance(outcome, Failed) and outcome.kind == "blocked"
    assert kit.opened == []


async def test_an_unknown_skill_names_the_available_ones(project: Path, user: Path, kit: Any) -> None:
    make_skill(project / ".tether" / "skills", "alpha")
    make_skill(project / ".tether" / "skills", "beta")
    recorder = kit.Recorder()
    outcome = await Tools(project, user, recorder).call(kit.ctx, name="gamma")
    assert isinstance(outcome, Failed)
    assert outcome.error == 'Skill "gamma" not found. Available skills: alpha, beta'
    assert recorder.asked == []
    for hostile in ("../alpha", "alpha/../../etc", "*", "x" * 10_000):
        outcome = await Tools(project, user, recorder).call(kit.ctx, name=hostile)
        assert isinstance(outcome, Failed) and "not found" in outcome.error and len(outcome.error) < 200
    assert recorder.asked == []


def test_a_symlink_loop_in_your_skills_folder_ends(project: Path, user: Path) -> None:
    make_skill(user / "skills" / "group", "deep")
    (user / "skills" / "group" / "loop").symlink_to(user / "skills")
    (user / "skills" / "self").symlink_to(user / "skills" / "self")  # a dangling self-link
    assert [s.name for s in discover_skills(Location(project), user).found] == ["deep"]


async def test_a_skill_changed_or_removed_since_discovery_fails_cleanly(
    project: Path, user: Path, kit: Any
) -> None:
    directory = make_skill(project / ".tether" / "skills", "pdf")
    tools = Tools(project, user, kit.Recorder())
    (directory / "SKILL.md").write_text(skill_md("other"), encoding="utf-8")
    outcome = await tools.call(kit.ctx, name="pdf")
    assert isinstance(outcome, Failed) and "now names the skill 'other'" in outcome.error
    (directory / "SKILL.md").unlink()
    (directory / "SKILL.md").symlink_to(project / "x")  # a link swapped in after discovery is never followed
    (project / "x").write_text(skill_md("pdf"), encoding="utf-8")
    outcome = await tools.call(kit.ctx, name="pdf")
    assert isinstance(outcome, Failed) and "cannot be read" in outcome.error


async def test_no_skills_no_tool(project: Path, user: Path, kit: Any) -> None:
    assert "skill" not in Tools(project, user, kit.Recorder()).tools


async def test_the_runtime_registers_the_skill_tool_and_reports_refusals(
    project: Path, user: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(user))
    make_skill(user / "skills", "mine")
    make_skill(project / ".tether" / "skills", "broken", "no front matter")
    async with Runtime(data_dir=tmp_path / "data") as rt:
        location = await rt.location(project)
        assert "skill" in location.builtins
        definitions = {d.name: d for d in location.tools.materialize(rules=[]).definitions}
        assert "- mine: Does a thing." in definitions["skill"].description
        assert any("broken" in line and "front matter" in line for line in location.notices)


def test_tether_tools_lists_the_skill_tool_and_says_what_was_refused(tmp_path: Path) -> None:
    from ..cli.conftest import Cli

    cli = Cli(tmp_path)
    project = tmp_path / "proj"
    make_skill(tmp_path / "config" / "skills", "mine")
    make_skill(project / ".claude" / "skills", "theirs")
    make_skill(project / ".tether" / "skills", "mine", skill_md("mine", "A clone's copy."))
    shown = cli.json("tools", "--dir", str(project), "--format", "json")
    skill = next(row for row in shown["tools"] if row["name"] == "skill")
    assert skill["origin"] == "builtin"
    assert any("ignored skill 'mine'" in line and "first found wins" in line for line in shown["notices"])


def test_your_skills_folder_is_readable_outside_the_project_and_nothing_else_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.permissions import builtin_agents
    from tether.rules import last_match

    config = tmp_path / "config"
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(config))
    skills = os.path.realpath(config / "skills")
    for agent in builtin_agents(tmp_path / "data", tmp_path / "tmp").values():
        rules = agent.rules

        def effect(resource: str, rules: Any = rules) -> str:
            found = last_match(rules, "external_directory", resource)
            return "ask" if found < 0 else rules[found].effect

        if agent.name in ("compaction", "title", "summary"):
            continue
        assert effect(f"{skills}/pdf/*") == "allow", agent.name
        assert effect(f"{skills}-evil/*") == "ask", agent.name
        assert effect(f"{os.path.realpath(config)}/*") == "ask", agent.name
