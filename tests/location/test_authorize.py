from __future__ import annotations

from pathlib import Path

import pytest

from tether.errors import BlockedError
from tether.location import Location, authorize, authorize_edit, authorize_protected, require_external
from tether.permissions import PermissionRequest
from tether.tools import ToolContext

CTX = ToolContext(session_id="ses_1", agent="build", message_id="msg_1", call_id="call_1")


class Recorder:
    def __init__(self, deny: str | None = None) -> None:
        self.requests: list[PermissionRequest] = []
        self.deny = deny

    async def assert_(self, request: PermissionRequest) -> None:
        self.requests.append(request)
        if request.action == self.deny:
            raise BlockedError("Permission denied", action=request.action, resources=request.resources)


@pytest.fixture
def loc(tmp_path: Path) -> Location:
    (tmp_path / "root").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return Location(tmp_path / "root")


@pytest.mark.anyio
async def test_edit_asks_external_directory_then_edit_with_save_star(loc: Location, tmp_path: Path) -> None:
    perms = Recorder()
    target = loc.resolve("../a/x.txt")
    await authorize_edit(perms, CTX, target)
    assert [(r.action, tuple(r.resources), tuple(r.save)) for r in perms.requests] == [
        ("external_directory", (f"{(tmp_path / 'a').as_posix()}/*",), (f"{(tmp_path / 'a').as_posix()}/*",)),
        ("edit", ((tmp_path / "a" / "x.txt").as_posix(),), ("*",)),
    ]
    edit = perms.requests[1]
    assert edit.session_id == "ses_1" and edit.agent == "build"
    assert edit.source is not None and (edit.source.message_id, edit.source.call_id) == ("msg_1", "call_1")


@pytest.mark.anyio
async def test_internal_edit_asks_only_edit(loc: Location) -> None:
    perms = Recorder()
    await authorize_edit(perms, CTX, loc.resolve("src/x.py"))
    assert [(r.action, tuple(r.resources)) for r in perms.requests] == [("edit", ("src/x.py",))]


@pytest.mark.anyio
async def test_denied_external_directory_stops_before_edit(loc: Location) -> None:
    perms = Recorder(deny="external_directory")
    with pytest.raises(BlockedError):
        await authorize_edit(perms, CTX, loc.resolve("../a/x.txt"))
    assert [r.action for r in perms.requests] == ["external_directory"]


@pytest.mark.anyio
async def test_external_directory_once_per_directory_then_one_request(loc: Location, tmp_path: Path) -> None:
    perms = Recorder()
    targets = [loc.resolve(p) for p in ("../a/1", "x", "../b/2", "../a/3", "x")]
    await authorize(perms, CTX, targets, action="edit")
    assert [r.action for r in perms.requests] == ["external_directory", "external_directory", "edit"]
    assert perms.requests[0].resources == (f"{(tmp_path / 'a').as_posix()}/*",)
    assert perms.requests[1].resources == (f"{(tmp_path / 'b').as_posix()}/*",)
    assert len(perms.requests[2].resources) == 4  # deduplicated, first-seen order
    assert perms.requests[2].resources[1] == "x"


@pytest.mark.anyio
async def test_require_external_is_a_no_op_inside(loc: Location) -> None:
    perms = Recorder()
    await require_external(perms, CTX, loc.resolve("."))
    assert perms.requests == []


@pytest.mark.anyio
async def test_edit_asks_each_protected_path_on_its_own_with_its_anchor_and_exact_save(loc: Location) -> None:
    perms = Recorder()
    targets = [
        loc.resolve(p) for p in ("src/x.py", ".git/hooks/pre-commit", ".tether/tether.json", "AGENTS.md")
    ]
    await authorize_edit(perms, CTX, targets, metadata={"filepath": "many"})
    assert [(r.action, tuple(r.resources), tuple(r.save), r.protected) for r in perms.requests] == [
        ("edit", ("src/x.py",), ("*",), None),
        ("edit", (".git/hooks/pre-commit",), (".git/hooks/pre-commit",), ".git/hooks/"),
        ("edit", (".tether/tether.json",), (".tether/tether.json",), ".tether/"),
        ("edit", ("AGENTS.md",), ("AGENTS.md",), "AGENTS.md"),
    ]
    hook = perms.requests[1]
    assert hook.metadata["protected"] == ".git/hooks/"
    assert hook.metadata["filepath"] == str(loc.root / ".git" / "hooks" / "pre-commit")


@pytest.mark.anyio
async def test_edit_of_only_protected_paths_skips_the_ordinary_request(loc: Location) -> None:
    perms = Recorder()
    await authorize_edit(perms, CTX, loc.resolve(".git/config"))
    assert [(tuple(r.resources), r.protected) for r in perms.requests] == [((".git/config",), ".git/config")]


@pytest.mark.anyio
async def test_authorize_protected_asks_nothing_for_ordinary_paths(loc: Location) -> None:
    perms = Recorder()
    await authorize_protected(perms, CTX, [loc.resolve("src/x.py"), loc.resolve("../a/x.txt")])
    assert perms.requests == []


@pytest.mark.anyio
async def test_authorize_protected_asks_edit_once_per_protected_path_with_bash_metadata(
    loc: Location,
) -> None:
    perms = Recorder()
    targets = [loc.resolve(p) for p in (".gitmodules", "out.txt", ".gitmodules", "../a/.git/config")]
    await authorize_protected(perms, CTX, targets, metadata={"command": "echo x > .gitmodules"})
    assert [(r.action, r.protected) for r in perms.requests] == [
        ("edit", ".gitmodules"),
        ("edit", (loc.root.parent / "a" / ".git" / "config").as_posix()),
    ]
    assert perms.requests[0].metadata["command"] == "echo x > .gitmodules"


@pytest.mark.anyio
async def test_a_denied_protected_path_stops_the_next_one(loc: Location) -> None:
    perms = Recorder(deny="edit")
    with pytest.raises(BlockedError):
        await authorize_protected(perms, CTX, [loc.resolve(".git/config"), loc.resolve("AGENTS.md")])
    assert len(perms.requests) == 1
