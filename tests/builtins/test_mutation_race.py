"""Attacks on the check-then-use window (issue 11 §3): while a mutation waits for approval, a directory of its path (or
the file itself) is replaced by a symlink to a canary directory outside the project. After approval the call must
fail with the model-visible "changed while waiting for approval" error, and the canary must be untouched."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tether.permissions import PermissionRequest
from tether.tools import Completed, Failed

pytestmark = pytest.mark.anyio


class Gate:
    """A permission service whose every ask waits until the test approves (then allows)."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.approved = anyio.Event()
        self.requests: list[PermissionRequest] = []

    async def assert_(self, request: PermissionRequest) -> None:
        self.requests.append(request)
        self.asked.set()
        await self.approved.wait()


def snapshot(directory: Path) -> dict[str, bytes | str]:
    """Every entry under ``directory`` (symlinks not followed): file bytes, ``"dir"`` or ``"-> target"``."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(directory))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = path.read_bytes()
    return out


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """The canary: the same names as inside the project, so a followed symlink would find what it looks for."""
    canary = tmp_path / "outside"
    (canary / "deep").mkdir(parents=True)
    (canary / "a.txt").write_text("alpha\n")
    (canary / "b.txt").write_text("canary b\n")
    (canary / "deep" / "c.txt").write_text("alpha\n")
    return canary


@pytest.fixture
def world(root: Path, outside: Path) -> Path:
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("alpha\n")
    (root / "sub" / "deep" / "c.txt").write_text("alpha\n")
    (root / "top.txt").write_text("alpha\n")
    return root


def swap_directory(root: Path, outside: Path) -> Callable[[], None]:
    def swap() -> None:
        os.rename(root / "sub", root.parent / "sub-moved-away")
        (root / "sub").symlink_to(outside, target_is_directory=True)

    return swap


async def attack(
    project, gate: Gate, swap: Callable[[], None], name: str, **input: object
) -> Completed | Failed:
    """Start the call, swap while its permission request waits, approve, return the outcome."""
    result: dict[str, Completed | Failed] = {}
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            result["outcome"] = await project.call(name, **input)

        tg.start_soon(run)
        with anyio.fail_after(5):
            await gate.asked.wait()
        swap()
        gate.approved.set()
    return result["outcome"]


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"])


DIRECTORY_SWAPS: dict[str, tuple[str, dict[str, object]]] = {
    "write": ("write", {"path": "sub/a.txt", "content": "payload\n"}),
    "write creating directories": ("write", {"path": "sub/new/dir/f.txt", "content": "payload\n"}),
    "write under a deeper directory": ("write", {"path": "sub/deep/c.txt", "content": "payload\n"}),
    "edit": ("edit", {"path": "sub/a.txt", "old_string": "alpha", "new_string": "payload"}),
    "edit under a deeper directory": (
        "edit",
        {"path": "sub/deep/c.txt", "old_string": "alpha", "new_string": "payload"},
    ),
    "apply_patch add": ("apply_patch", {"patch_text": patch("*** Add File: sub/b.txt", "+payload")}),
    "apply_patch add creating directories": (
        "apply_patch",
        {"patch_text": patch("*** Add File: sub/new/b.txt", "+payload")},
    ),
    "apply_patch update": (
        "apply_patch",
        {"patch_text": patch("*** Update File: sub/a.txt", "@@", "-alpha", "+payload")},
    ),
    "apply_patch delete": ("apply_patch", {"patch_text": patch("*** Delete File: sub/a.txt")}),
    "apply_patch move source": (
        "apply_patch",
        {
            "patch_text": patch(
                "*** Update File: sub/a.txt", "*** Move to: moved.txt", "@@", "-alpha", "+payload"
            )
        },
    ),
    "apply_patch move destination": (
        "apply_patch",
        {
            "patch_text": patch(
                "*** Update File: top.txt", "*** Move to: sub/b.txt", "@@", "-alpha", "+payload"
            )
        },
    ),
    "apply_patch whose first hunk is elsewhere": (
        "apply_patch",
        {
            "patch_text": patch(
                "*** Add File: first.txt",
                "+payload",
                "*** Update File: sub/a.txt",
                "@@",
                "-alpha",
                "+payload",
            )
        },
    ),
}


@pytest.mark.parametrize("case", list(DIRECTORY_SWAPS))
async def test_a_directory_swapped_for_a_symlink_during_approval_is_refused_and_the_canary_untouched(
    make_project, world: Path, outside: Path, case: str
) -> None:
    name, input = DIRECTORY_SWAPS[case]
    gate = Gate()
    project = make_project(gate)
    canary = snapshot(outside)
    outcome = await attack(project, gate, swap_directory(world, outside), name, **input)
    assert isinstance(outcome, Failed), outcome
    real = world.resolve()
    assert f"changed while waiting for approval: {real.as_posix()}/sub is now a symlink" in outcome.error
    assert "Nothing was written." in outcome.error
    assert snapshot(outside) == canary
    # Nothing was written inside the project either (apply_patch fails before its first hunk).
    assert snapshot(world) == {"sub": f"-> {outside}", "top.txt": b"alpha\n"}


FILE_SWAPS: dict[str, tuple[str, dict[str, object]]] = {
    "write": ("write", {"path": "sub/a.txt", "content": "payload\n"}),
    "edit": ("edit", {"path": "sub/a.txt", "old_string": "alpha", "new_string": "payload"}),
    "apply_patch add": ("apply_patch", {"patch_text": patch("*** Add File: sub/a.txt", "+payload")}),
    "apply_patch update": (
        "apply_patch",
        {"patch_text": patch("*** Update File: sub/a.txt", "@@", "-alpha", "+payload")},
    ),
    "apply_patch delete": ("apply_patch", {"patch_text": patch("*** Delete File: sub/a.txt")}),
    "apply_patch move destination": (
        "apply_patch",
        {
            "patch_text": patch(
                "*** Update File: top.txt", "*** Move to: sub/a.txt", "@@", "-alpha", "+payload"
            )
        },
    ),
}


@pytest.mark.parametrize("case", list(FILE_SWAPS))
async def test_a_file_swapped_for_a_symlink_during_approval_is_refused_and_the_canary_untouched(
    make_project, world: Path, outside: Path, case: str
) -> None:
    name, input = FILE_SWAPS[case]
    gate = Gate()
    project = make_project(gate)
    canary = snapshot(outside)

    def swap() -> None:
        (world / "sub" / "a.txt").unlink()
        (world / "sub" / "a.txt").symlink_to(outside / "a.txt")

    outcome = await attack(project, gate, swap, name, **input)
    assert isinstance(outcome, Failed), outcome
    real = world.resolve()
    assert (
        f"changed while waiting for approval: {real.as_posix()}/sub/a.txt is now a symlink" in outcome.error
    )
    assert snapshot(outside) == canary
    assert (world / "sub" / "a.txt").is_symlink() and (world / "top.txt").read_text() == "alpha\n"


async def test_a_directory_replaced_by_a_file_during_approval_is_refused(
    make_project, world: Path, outside: Path
) -> None:
    gate = Gate()
    project = make_project(gate)

    def swap() -> None:
        os.rename(world / "sub", world.parent / "sub-moved-away")
        (world / "sub").write_text("now a file\n")

    outcome = await attack(project, gate, swap, "write", path="sub/a.txt", content="payload\n")
    assert isinstance(outcome, Failed), outcome
    assert f"{world.resolve().as_posix()}/sub is not a directory. Nothing was written." in outcome.error
    assert (world / "sub").read_text() == "now a file\n"


async def test_an_approved_write_without_a_swap_lands_in_the_project(
    make_project, world: Path, outside: Path
) -> None:
    gate = Gate()
    project = make_project(gate)
    outcome = await attack(project, gate, lambda: None, "write", path="sub/new/f.txt", content="payload\n")
    assert isinstance(outcome, Completed), outcome
    assert (world / "sub" / "new" / "f.txt").read_text() == "payload\n"
    assert [r.action for r in gate.requests] == ["edit"]


async def test_an_approved_external_directory_swapped_for_a_symlink_is_refused(
    make_project, root: Path, tmp_path: Path, outside: Path
) -> None:
    approved = tmp_path / "elsewhere" / "notes"
    approved.mkdir(parents=True)
    (approved / "a.txt").write_text("alpha\n")
    gate = Gate()
    project = make_project(gate)
    canary = snapshot(outside)

    def swap() -> None:
        os.rename(approved, tmp_path / "notes-moved-away")
        approved.symlink_to(outside, target_is_directory=True)

    outcome = await attack(
        project, gate, swap, "edit", path=str(approved / "a.txt"), old_string="alpha", new_string="payload"
    )
    assert isinstance(outcome, Failed), outcome
    assert f"{tmp_path.resolve().as_posix()}/elsewhere/notes is now a symlink" in outcome.error
    assert snapshot(outside) == canary


def swap_file(root: Path, outside: Path) -> Callable[[], None]:
    def swap() -> None:
        (root / "sub" / "a.txt").unlink()
        (root / "sub" / "a.txt").symlink_to(outside / "b.txt")

    return swap


READ_SWAPS: dict[str, tuple[Callable[[Path, Path], Callable[[], None]], str, str]] = {
    # case: (swap maker, path read, the component the error names)
    "a directory of the path": (swap_directory, "sub/a.txt", "sub"),
    "the directory listed": (swap_directory, "sub", "sub"),
    "the file itself": (swap_file, "sub/a.txt", "sub/a.txt"),
}


@pytest.mark.parametrize("case", list(READ_SWAPS))
async def test_a_read_swapped_for_a_symlink_during_approval_reads_nothing_outside(
    make_project, world: Path, outside: Path, case: str
) -> None:
    """The approved read must not be redirected: the canary's text never reaches the model."""
    make_swap, path, component = READ_SWAPS[case]
    gate = Gate()
    project = make_project(gate)
    outcome = await attack(project, gate, make_swap(world, outside), "read", path=path)
    assert isinstance(outcome, Failed), outcome
    real = world.resolve()
    assert (
        f"changed while waiting for approval: {real.as_posix()}/{component} is now a symlink" in outcome.error
    )
    assert "Nothing was read." in outcome.error
    assert "canary" not in outcome.error and "b.txt" not in outcome.error.replace("a.txt", "")


async def test_an_approved_read_without_a_swap_reads_the_file_and_lists_the_directory(
    make_project, world: Path
) -> None:
    gate = Gate()
    gate.approved.set()
    project = make_project(gate)
    page = await project.call("read", path="sub/a.txt")
    listing = await project.call("read", path="sub")
    assert isinstance(page, Completed) and "1: alpha" in str(page.content)
    assert (
        isinstance(listing, Completed) and "deep/" in str(listing.content) and "a.txt" in str(listing.content)
    )
