"""Law 9 for the file tools: the heavy part of a call (fuzzy matching, difflib) runs off the event loop.

Each test wraps the heavy function with an observer that, once called, waits (an event, capped) for a concurrent
task on the event loop to make a few more checkpoints. Run on the event loop, the observer would block that task and
see no progress; run in a worker thread, the task keeps ticking. No timing is measured.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

import tether.builtins.edit
import tether.builtins.write

pytestmark = pytest.mark.anyio


class LoopWatch:
    """Wraps a function: when it is called, record whether the event loop still ticks while it runs."""

    def __init__(self, real: Callable[..., Any]) -> None:
        self.real = real
        self.started = threading.Event()
        self.ticked = threading.Event()
        self.observed: list[bool] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.started.set()
        self.observed.append(self.ticked.wait(5))
        return self.real(*args, **kwargs)

    async def ticker(self) -> None:
        await anyio.to_thread.run_sync(self.started.wait, abandon_on_cancel=True)
        for _ in range(3):
            await anyio.sleep(0)
        self.ticked.set()


async def run_watched(watch: LoopWatch, call: Callable[[], Any]) -> Any:
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch.ticker)
            outcome = await call()
            tg.cancel_scope.cancel()
    return outcome


def big_file(root: Path) -> Path:
    path = root / "big.py"
    path.write_text(
        "".join(f"    value_{i} = compute({i}, factor={i % 7})  # comment {i}\n" for i in range(20_000))
    )
    return path


async def test_edit_matches_and_diffs_off_the_event_loop(
    project, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = big_file(root)
    watch = LoopWatch(tether.builtins.edit.replace)
    monkeypatch.setattr(tether.builtins.edit, "replace", watch)
    outcome = await run_watched(
        watch,
        lambda: project.ok(
            "edit", path="big.py", old_string="value_19999 = compute(19999", new_string="last = compute(19999"
        ),
    )
    assert watch.observed == [True]
    assert outcome.metadata["replacements"] == 1
    assert "last = compute(19999" in path.read_text()


async def test_non_matching_large_edit_keeps_the_event_loop_free(
    project, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big_file(root)
    watch = LoopWatch(tether.builtins.edit.replace)
    monkeypatch.setattr(tether.builtins.edit, "replace", watch)
    old = "    value_1 = compute(1, factor=1)  # comment 1\nnot here\n    value_9 = compute(9, factor=2)  # comment 9"
    outcome = await run_watched(
        watch, lambda: project.fail("edit", path="big.py", old_string=old, new_string="x")
    )
    assert watch.observed == [True]
    assert "Could not find old_string" in outcome.error


async def test_write_diffs_off_the_event_loop(project, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big_file(root)
    watch = LoopWatch(tether.builtins.write.file_diff)
    monkeypatch.setattr(tether.builtins.write, "file_diff", watch)
    await run_watched(watch, lambda: project.ok("write", path="big.py", content="short\n"))
    assert watch.observed == [True]
    assert (root / "big.py").read_text() == "short\n"
