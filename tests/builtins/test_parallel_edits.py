"""Parallel mutations of one file are never lost (issue 13 §1): every call reported successful is in the final file.

Calls run through the real tools (settle, worker threads, the per-file lock), in one process and in two real
processes started together."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from tether.tools import Completed, Failed

pytestmark = pytest.mark.anyio

N = 16


def numbered(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i:02d}\n" for i in range(n))


async def run_parallel(project, calls: list[tuple[str, dict[str, object]]]) -> list[Completed | Failed]:
    outcomes: list[Completed | Failed | None] = [None] * len(calls)

    async def one(index: int, name: str, input: dict[str, object]) -> None:
        outcomes[index] = await project.call(name, **input)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for index, (name, input) in enumerate(calls):
                tg.start_soon(one, index, name, input)
    assert all(o is not None for o in outcomes)
    return [o for o in outcomes if o is not None]


async def test_parallel_edits_of_different_lines_of_one_file_all_land(project, root: Path) -> None:
    (root / "f.txt").write_text(numbered(N))
    calls = [
        ("edit", {"path": "f.txt", "old_string": f"line {i:02d}", "new_string": f"edited {i:02d}"})
        for i in range(N)
    ]
    outcomes = await run_parallel(project, calls)
    final = (root / "f.txt").read_text()
    succeeded = [i for i, o in enumerate(outcomes) if isinstance(o, Completed)]
    assert all(f"edited {i:02d}\n" in final for i in succeeded)
    assert succeeded == list(range(N)), [o for o in outcomes if isinstance(o, Failed)]
    assert final == numbered(N, "edited")


async def test_parallel_patches_of_one_file_all_land(project, root: Path) -> None:
    (root / "f.txt").write_text(numbered(N))
    calls = [
        (
            "apply_patch",
            {
                "patch_text": f"*** Begin Patch\n*** Update File: f.txt\n@@\n-line {i:02d}\n+edited {i:02d}\n"
                "*** End Patch"
            },
        )
        for i in range(N)
    ]
    outcomes = await run_parallel(project, calls)
    assert all(isinstance(o, Completed) for o in outcomes), outcomes
    assert (root / "f.txt").read_text() == numbered(N, "edited")


async def test_patches_touching_two_files_in_opposite_orders_do_not_deadlock(project, root: Path) -> None:
    (root / "x.txt").write_text(numbered(N))
    (root / "y.txt").write_text(numbered(N))

    def hunk(name: str, i: int) -> str:
        return f"*** Update File: {name}\n@@\n-line {i:02d}\n+edited {i:02d}\n"

    calls = [
        (
            "apply_patch",
            {
                "patch_text": "*** Begin Patch\n"
                + (hunk("x.txt", i) + hunk("y.txt", i) if i % 2 else hunk("y.txt", i) + hunk("x.txt", i))
                + "*** End Patch"
            },
        )
        for i in range(N)
    ]
    outcomes = await run_parallel(project, calls)
    assert all(isinstance(o, Completed) for o in outcomes), outcomes
    assert (root / "x.txt").read_text() == (root / "y.txt").read_text() == numbered(N, "edited")


async def test_parallel_writes_and_edits_of_one_file_never_interleave(project, root: Path) -> None:
    (root / "f.txt").write_text(numbered(N))
    calls: list[tuple[str, dict[str, object]]] = []
    for i in range(N):
        calls.append(
            ("edit", {"path": "f.txt", "old_string": f"line {i:02d}", "new_string": f"edited {i:02d}"})
        )
        if i % 4 == 0:
            calls.append(("write", {"path": "f.txt", "content": numbered(N)}))
    outcomes = await run_parallel(project, calls)
    assert all(isinstance(o, Completed) for o in outcomes), outcomes
    # Whatever the order, the final file is the last write followed by the edits that ran after it: every line is
    # either its original or its edited form, never a mix of two versions of the file.
    final = (root / "f.txt").read_text().splitlines()
    assert [line.split()[1] for line in final] == [f"{i:02d}" for i in range(N)]


# A second tether process: the library's real edit tool, allowed everything, editing its own lines of the shared file
# in parallel once the parent says go (stdin), printing "ready" first and then the indexes of the edits reported
# successful.
WORKER = textwrap.dedent(
    """
    import json, sys, tempfile
    import anyio
    from tether.builtins import BuiltinDeps, builtin_tools
    from tether.location import Location
    from tether.output import OutputStore
    from tether.tools import Completed, ToolCall, ToolContext, ToolRegistry

    class Allow:
        async def assert_(self, request):
            return None

    root, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

    async def main():
        output = OutputStore(tempfile.mkdtemp())
        registry = ToolRegistry(output=output)
        registry.register(builtin_tools(BuiltinDeps(location=Location(root), permissions=Allow(), output=output)))
        step = registry.materialize(rules=[])
        ctx = ToolContext(session_id="ses_x", agent="build", message_id="msg_x", call_id="call_x")
        done = []

        async def edit(i):
            call = ToolCall(
                call_id=f"call_{i}",
                name="edit",
                input={"path": "f.txt", "old_string": f"line {i:02d}", "new_string": f"edited {i:02d}"},
            )
            if isinstance(await step.settle(call, ctx), Completed):
                done.append(i)

        print("ready", flush=True)
        sys.stdin.readline()
        async with anyio.create_task_group() as tg:
            for i in range(first, first + count):
                tg.start_soon(edit, i)
        print(json.dumps(sorted(done)))

    anyio.run(main)
    """
)


def test_two_processes_editing_one_file_lose_no_reported_success(root: Path) -> None:
    per_process = 32
    (root / "f.txt").write_text(numbered(2 * per_process))
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(root), str(first), str(per_process)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for first in (0, per_process)
    ]
    for worker in workers:  # both have imported everything and built their tools before either is told to go
        assert worker.stdout is not None
        assert worker.stdout.readline() == "ready\n"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    succeeded: list[int] = []
    for worker in workers:
        out, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err
        succeeded += json.loads(out)
    final = (root / "f.txt").read_text()
    assert all(f"edited {i:02d}\n" in final for i in succeeded)
    assert sorted(succeeded) == list(range(2 * per_process))
    assert final == numbered(2 * per_process, "edited")
