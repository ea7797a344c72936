"""Mutating tools ask external_directory (if needed) then edit, and read no target content before approval.

An audit hook records every open() of the watched target paths; the permission fake snapshots that record at the
moment each request arrives. A tool that read early would show the open before its edit request.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from tether.bus import Bus
from tether.permissions import (
    Agent,
    PermissionAsked,
    PermissionService,
    Rule,
    SavedApprovals,
    StaticRules,
)

pytestmark = pytest.mark.anyio

PATCH = """*** Begin Patch
*** Update File: a.txt
@@
-alpha
+ALPHA
*** Add File: ../outside/new.txt
+new
*** Delete File: b.txt
*** Update File: ../outside/c.txt
@@
-gamma
+GAMMA
*** End Patch"""


def _seed(root: Path, outside: Path) -> None:
    outside.mkdir(exist_ok=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")
    (outside / "c.txt").write_text("gamma\n")


@pytest.mark.parametrize(
    ("tool", "input"),
    [
        ("edit", {"path": "a.txt", "old_string": "alpha", "new_string": "x"}),
        ("write", {"path": "a.txt", "content": "x"}),
        ("apply_patch", {"patch_text": PATCH}),
    ],
)
async def test_denied_edit_reads_nothing(
    make_project, kit, root: Path, tmp_path: Path, tool: str, input
) -> None:
    _seed(root, tmp_path / "outside")
    perms = kit.Recorder(decide=lambda r: "deny" if r.action == "edit" else "allow")
    project = make_project(perms)
    kit.watch([root / "a.txt", root / "b.txt", tmp_path / "outside" / "c.txt"])
    failed = await project.fail(tool, **input)
    assert failed.kind == "blocked"
    assert kit.opened == []
    assert all(seen == [] for seen in perms.opened_before)
    assert (root / "a.txt").read_text() == "alpha\n" and (root / "b.txt").exists()


async def test_allowed_edit_reads_only_after_approval(make_project, kit, root: Path, tmp_path: Path) -> None:
    _seed(root, tmp_path / "outside")
    perms = kit.Recorder()
    project = make_project(perms)
    kit.watch([root / "a.txt"])
    await project.ok("edit", path="a.txt", old_string="alpha", new_string="x")
    assert perms.opened_before == [[]]
    assert str(root / "a.txt") in kit.opened  # the watch works: the tool did read, after approval


async def test_denied_edit_does_not_reveal_whether_old_string_matches(make_project, kit, root: Path) -> None:
    (root / "a.txt").write_text("alpha\n")
    project = make_project(kit.Recorder(decide=lambda r: "deny"))
    hit = await project.fail("edit", path="a.txt", old_string="alpha", new_string="x")
    miss = await project.fail("edit", path="a.txt", old_string="zzz", new_string="x")
    missing = await project.fail("edit", path="nope.txt", old_string="zzz", new_string="x")
    assert hit.error == miss.error == missing.error


async def test_apply_patch_asks_each_external_directory_once_then_one_edit(
    make_project, kit, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    _seed(root, outside)
    perms = kit.Recorder()
    project = make_project(perms)
    kit.watch([root / "a.txt", root / "b.txt", outside / "c.txt"])
    text = await project.text("apply_patch", patch_text=PATCH)
    assert perms.asked == [
        ("external_directory", (f"{outside.as_posix()}/*",)),
        ("edit", ("a.txt", f"{outside.as_posix()}/new.txt", "b.txt", f"{outside.as_posix()}/c.txt")),
    ]
    assert perms.requests[1].save == ("*",)
    assert all(seen == [] for seen in perms.opened_before)
    assert text == (
        f"Applied patch sequentially:\nM a.txt\nA {outside.as_posix()}/new.txt\nD b.txt\nM {outside.as_posix()}/c.txt"
    )
    assert (outside / "c.txt").read_text() == "GAMMA\n" and not (root / "b.txt").exists()


async def test_denied_external_directory_stops_before_edit(
    make_project, kit, root: Path, tmp_path: Path
) -> None:
    _seed(root, tmp_path / "outside")
    perms = kit.Recorder(decide=lambda r: "deny" if r.action == "external_directory" else "allow")
    project = make_project(perms)
    failed = await project.fail("apply_patch", patch_text=PATCH)
    assert failed.kind == "blocked" and [a for a, _ in perms.asked] == ["external_directory"]
    assert (root / "a.txt").read_text() == "alpha\n"


@pytest.mark.parametrize(("verdict", "kind"), [("decline", "declined"), ("correct", "corrected")])
async def test_user_rejections_propagate_to_settle(
    make_project, kit, root: Path, verdict: str, kind: str
) -> None:
    (root / "a.txt").write_text("alpha\n")
    project = make_project(kit.Recorder(decide=lambda r: verdict))
    failed = await project.fail("write", path="a.txt", content="x")
    assert failed.kind == kind
    assert (root / "a.txt").read_text() == "alpha\n"


def _service(tmp_path: Path, rules: list[Rule]) -> tuple[PermissionService, Bus]:
    bus = Bus()
    saved = SavedApprovals(tmp_path / "approvals.sqlite")
    service = PermissionService(
        bus=bus, saved=saved, resolve=StaticRules(project="p", agent=Agent(name="build", rules=tuple(rules)))
    )
    return service, bus


async def test_real_service_configured_deny_blocks_edit(make_project, root: Path, tmp_path: Path) -> None:
    (root / "a.txt").write_text("alpha\n")
    service, _ = _service(tmp_path, [Rule("*", "*", "allow"), Rule("edit", "*", "deny")])
    project = make_project(service)
    failed = await project.fail("edit", path="a.txt", old_string="alpha", new_string="x")
    assert failed.kind == "blocked"
    assert (await project.text("read", path="a.txt")).endswith("1: alpha")


async def test_real_service_ask_waits_for_the_reply(make_project, root: Path, tmp_path: Path) -> None:
    service, bus = _service(tmp_path, [Rule("*", "*", "allow"), Rule("external_directory", "*", "ask")])
    project = make_project(service)
    asked: list[PermissionAsked] = []
    event = anyio.Event()

    def on_asked(e: PermissionAsked) -> None:
        asked.append(e)
        event.set()

    bus.subscribe(PermissionAsked, on_asked)
    result = {}
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            result["outcome"] = await project.call("write", path="../outside/w.txt", content="w\n")

        tg.start_soon(run)
        with anyio.fail_after(5):
            await event.wait()
        assert not (tmp_path / "outside").exists()  # nothing happens while the question is open
        await service.reply(asked[0].request.id, "once")
    assert result["outcome"].status == "completed"
    assert (tmp_path / "outside" / "w.txt").read_text() == "w\n"


def test_the_audit_sees_a_file_read_through_a_descriptor_link(tmp_path: Path, kit) -> None:
    # The proof above rests on the audit hook: an O_PATH open (resolution) is not a read, but reopening that
    # descriptor through /proc/self/fd reads the file, and is recorded as a read of it.
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    kit.watch([secret])
    try:
        fd = os.open(secret, os.O_PATH | os.O_CLOEXEC)
        try:
            assert kit.opened == []
            with open(f"/proc/self/fd/{fd}") as reopened:
                assert reopened.read() == "x"
        finally:
            os.close(fd)
        assert kit.opened == [str(secret)]
    finally:
        kit.watch([])
