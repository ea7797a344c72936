"""Permission keys mean what the tools ask: every built-in tool's asked action is a documented key, and back.

One turn of a real session calls every built-in tool (and bash, read and grep in each of the ways they ask); the
session's rules make every request ask, and the person answering allows each call's earlier requests and rejects its
last, so each call shows every action it asks, in order, and nothing runs past it. The actions seen must be the
config's :data:`~tether.config.BUILTIN_ACTIONS`, the rows of docs/permissions.md's *Permission keys* table and the keys
of ``--explain``'s :data:`ASKED_BY`; a tool's name that is not its action must be read as that action. A new tool, a
new action or a new key fails here until all of them say the same.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.cli._permissions import ASKED_BY
from tether.config import (
    BUILTIN_ACTIONS,
    RESERVED_ACTIONS,
    TOOL_ACTIONS,
    load_config,
    parse_config,
    permission_action,
)
from tether.mcp._tools import resource_tools
from tether.permissions import PermissionAsked
from tether.sandbox import detect
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call

DOCS = Path(__file__).resolve().parents[2] / "docs" / "permissions.md"

PATCH = "*** Begin Patch\n*** Add File: added.txt\n+x\n*** End Patch"
SAME = {"pattern": "*.md"}
# The scripted model is shown apply_patch too (only GPT models are by default): every built-in is called.
EVERY_TOOL = parse_config({"catalog": {"models": {"*": {"*": True}}}}, file="tether.json")

# tool -> one (input, actions asked in order) per way the tool asks; the last action of each is rejected.
CALLS: dict[str, list[tuple[dict[str, Any], list[str]]]] = {
    "apply_patch": [({"patch_text": PATCH}, ["edit"])],
    "bash": [
        ({"command": "git status"}, ["bash"]),
        ({"command": "echo x > out.txt"}, ["edit"]),
        ({"command": "ls /"}, ["external_directory"]),
        ({"command": "ls", "escalate": True, "justification": "to see"}, ["bash", "escalate"]),
    ],
    "edit": [({"path": "notes.txt", "old_string": "hello", "new_string": "bye"}, ["edit"])],
    "glob": [(SAME, ["glob"]), (SAME, ["glob"]), (SAME, ["doom_loop"])],
    "grep": [({"pattern": "hello"}, ["grep"]), ({"pattern": "hello", "path": "notes.txt"}, ["grep", "read"])],
    "list": [({}, ["list"])],
    "question": [({"questions": [{"question": "Go?", "header": "go", "options": []}]}, ["question"])],
    "read": [({"path": "notes.txt"}, ["read"]), ({"path": "/"}, ["external_directory"])],
    "skill": [({"name": "demo"}, ["skill"])],
    "task": [({"description": "look", "prompt": "look", "subagent_type": "explore"}, ["task"])],
    "todoread": [({}, ["todoread"])],
    "todowrite": [({"todos": []}, ["todowrite"])],
    "webfetch": [
        ({"url": "https://example.com/"}, ["webfetch"]),
        ({"url": "http://127.0.0.1:9/"}, ["webfetch", "webfetch_private"]),
    ],
    "write": [({"path": "new.txt", "content": "x"}, ["edit"])],
}


# A sandboxed command's connection asks ``network`` (tether's proxy needs bubblewrap; curl is the client).
if detect("auto").mechanism == "bwrap" and shutil.which("curl") is not None:
    CALLS["bash"].append(({"command": "curl -s http://example.com/"}, ["bash", "network"]))


def documented_keys() -> list[str]:
    """The first column of the *Permission keys* table in docs/permissions.md."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("### Permission keys", 1)[1].split("\n\n", 3)[2]
    return [m[1] for m in re.finditer(r"^\| `([a-z_]+)` \|", section, re.MULTILINE)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    skill = root / ".tether" / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: A demo skill.\n---\nDo the demo.\n")
    (root / "notes.txt").write_text("hello\n")
    return root


@pytest.mark.anyio
async def test_every_built_in_tool_asks_only_documented_actions(tmp_path: Path, project: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data", config=EVERY_TOOL) as rt:
        loc = await rt.location(project)
        assert set(loc.builtins) == set(CALLS), (
            "a built-in tool was added or removed: list how it asks in CALLS"
        )
        expected: dict[str, list[str]] = {}
        calls = []
        for name, ways in CALLS.items():
            for index, (input, actions) in enumerate(ways):
                call_id = f"call_{name}_{index}"
                expected[call_id] = actions
                calls.append(tool_call(name, input, id=call_id))
        asked: dict[str, list[str]] = {call_id: [] for call_id in expected}
        send, receive = anyio.create_memory_object_stream[PermissionAsked](100)
        rt.bus.subscribe(PermissionAsked, send.send_nowait)
        session = await rt.sessions.create(loc, rules=[("*", "*", "ask")])
        model = ScriptedModel([calls, "done"])

        async def answer() -> None:
            async for event in receive:
                request = event.request.request
                assert request.source is not None
                seen = asked[request.source.call_id]
                seen.append(request.action)
                last = len(seen) >= len(expected[request.source.call_id])
                await rt.permissions.reply(
                    event.request.id, "reject" if last else "once", "stop here" if last else None
                )

        with model, send, receive, anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(answer)
                await session.prompt("ask for everything", model=model)
                group.cancel_scope.cancel()
        parts = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
    assert asked == expected
    assert all(p.state == "error" for p in parts), [(p.tool, p.state) for p in parts]
    assert not (project / "out.txt").exists() and not (project / "new.txt").exists()
    # (the other direction, every key asked by something, is checked on the source below)
    assert {action for actions in expected.values() for action in actions} <= BUILTIN_ACTIONS


def test_a_tool_name_that_is_not_its_action_is_read_as_that_action(project: Path, tmp_path: Path) -> None:
    async def names() -> dict[str, str]:
        async with Runtime(data_dir=tmp_path / "data") as rt:
            loc = await rt.location(project)
            return {name: loc.tools.require(name).action for name in loc.builtins}

    shown = anyio.run(names)
    shown.update({name: tool.permission or name for name, tool in resource_tools(list).items()})
    for name, action in shown.items():
        assert action in BUILTIN_ACTIONS, (name, action)
        if name in TOOL_ACTIONS or name == action:
            assert permission_action(name) == action, name
    assert {name for name, action in shown.items() if name != action} == {
        "apply_patch",
        "write",
        "list_mcp_resources",
        "read_mcp_resource",  # refused as keys (they share read with files); tests/config pins the message
    }


def test_the_documented_keys_are_the_built_in_actions_and_explain_describes_each() -> None:
    where = "docs/permissions.md's Permission keys table, config's BUILTIN_ACTIONS and --explain's ASKED_BY"
    assert set(documented_keys()) == BUILTIN_ACTIONS, f"{where} must name the same actions"
    assert set(ASKED_BY) == BUILTIN_ACTIONS, f"{where} must name the same actions"
    text = DOCS.read_text(encoding="utf-8")
    for key in (*TOOL_ACTIONS, *RESERVED_ACTIONS):
        assert f"`{key}`" in text, key


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ({"permission": {"write": "deny"}}, False),
        ({"permission": {"write": {"*.txt": "deny"}}, "tools": {"ls": False}}, True),
    ],
)
@pytest.mark.anyio
async def test_a_write_deny_in_the_config_stops_every_write(
    tmp_path: Path, project: Path, written: dict[str, Any], shown: bool
) -> None:
    # The scenario of issue 34 item 5: the user's config denies "write". The write tool asks "edit", which is what
    # the key is read as, so no tool writes (before, the key was accepted and matched nothing). Wholly denied, the
    # file tools are not even shown; denied on a pattern, they are shown and their own ask refuses.
    user = tmp_path / "user.json"
    user.write_text(json.dumps(written))
    config = load_config(project, user_file=user, environ={})
    calls = [
        tool_call("write", {"path": "new.txt", "content": "x"}, id="w"),
        tool_call("edit", {"path": "notes.txt", "old_string": "hello", "new_string": "bye"}, id="e"),
        tool_call("bash", {"command": "echo x > out.txt"}, id="b"),
    ]
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        session = await rt.sessions.create(await rt.location(project), rules=[("bash", "*", "allow")])
        with ScriptedModel([calls, "done"]) as model, anyio.fail_after(30):
            await session.prompt("write it", model=model)
        parts = {p.call_id: p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)}
    catalog = {t.name for t in model.requests[0].tools}
    assert ({"write", "edit"} <= catalog) == shown and ("list" in catalog) != shown
    refused = "blocked" if shown else "unknown"
    assert {k: (p.state, p.error_kind) for k, p in parts.items()} == {
        "w": ("error", refused),
        "e": ("error", refused),
        "b": ("error", "blocked"),
    }
    verdict = parts["b"].permissions[0]["decision"]["verdicts"][0]
    resource = "*.txt" if shown else "*"
    assert verdict["rule"] == {"action": "edit", "resource": resource, "effect": "deny"}
    assert verdict["source"] == "config"
    assert not (project / "new.txt").exists() and not (project / "out.txt").exists()
    assert (project / "notes.txt").read_text() == "hello\n"


SOURCE = Path(__file__).resolve().parents[2] / "src" / "tether"
ASKED = re.compile(r"""(?:\baction=|\.ask\(\s*|\bRule\()\s*["']([a-z_]+)["']""")


def test_every_action_the_source_names_is_a_documented_key() -> None:
    # A part that starts asking a new action (``action="..."``, ``ctx.ask("...")``, a default ``Rule("...")``) without
    # documenting it fails here: add it to config's BUILTIN_ACTIONS, --explain's ASKED_BY and the table of
    # docs/permissions.md (*Permission keys*), and to CALLS above when a built-in tool asks it.
    named = {
        (match[1], path.relative_to(SOURCE).as_posix())
        for path in SOURCE.rglob("*.py")
        for match in ASKED.finditer(path.read_text(encoding="utf-8"))
    }
    undocumented = sorted(
        (action, where) for action, where in named if action not in BUILTIN_ACTIONS | RESERVED_ACTIONS
    )
    assert undocumented == []
    called = {action for ways in CALLS.values() for _, actions in ways for action in actions}
    assert BUILTIN_ACTIONS - {"execute"} <= {action for action, _ in named} | called  # a key nothing asks
