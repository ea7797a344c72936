from __future__ import annotations

from pathlib import Path

import pytest

from tether.errors import BlockedError
from tether.location import Location, authorize, authorize_edit, require_external
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
