"""One session, one writer on Temporal: a turn holds the store's claim on its session while it runs.

Two turns of one session, and a Temporal turn beside an in-process ``tether run``, exclude each other: the second one
is refused with ``session … is busy`` (exit code 2, as the in-process busy case) and writes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest

from tether import Runtime
from tether.errors import NotFoundError, UsageError

from .conftest import Turns
from .support import count

pytestmark = pytest.mark.anyio


def _cli_env(turns: Turns) -> dict[str, str]:
    env = {**os.environ, "TETHER_DATA_DIR": str(turns.data), "NO_COLOR": "1"}
    env["TETHER_CONFIG_DIR"] = str(turns.directory / "config")
    env["XDG_CONFIG_HOME"] = str(turns.directory / "xdg-config")
    for name in ("TETHER_PERMISSION", "TETHER_TRUST", "TETHER_STORE_URL"):
        env.pop(name, None)
    return env


async def _cli(turns: Turns, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tether.cli", "run", *args]
    return await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            command,
            env=_cli_env(turns),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
    )


async def _started(turns: Turns, name: str = "slow") -> None:
    with anyio.fail_after(60):
        while count(turns.marks, f"{name}-started") == 0:
            await anyio.sleep(0.05)


async def _user_messages(rt: Runtime, session_id: str) -> int:
    return sum(1 for m in await rt.store.load_messages(session_id) if m.info.role == "user")


async def test_a_second_turn_of_a_running_session_is_refused_as_busy_and_the_next_one_runs(
    turns: Turns,
) -> None:
    async with turns.worker() as rt:
        first = await turns.submit([["fast", {"n": 1}]])
        with anyio.fail_after(60):
            session_id = (await first.result()).session_id
        running = await turns.submit([["slow", {}]], session_id=session_id)
        await _started(turns)
        # the same session again, from this process: Temporal refuses a second running turn of it
        with pytest.raises(UsageError, match=f"session {session_id} is busy"):
            await turns.submit([["fast", {"n": 2}]], session_id=session_id)
        # and from `tether run --temporal`: exit code 2, the in-process busy code
        done = await _cli(turns, "--temporal", turns.target, "--task-queue", turns.queue, "--model", "plan",
                          "--session", session_id, "--dir", str(turns.directory), json.dumps([["fast", {"n": 3}]]))  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"session {session_id} is busy" in done.stderr
        assert await _user_messages(rt, session_id) == 2  # neither refused turn wrote its prompt
        (turns.marks / "release").touch()
        with anyio.fail_after(60):
            assert (await running.result()).stop == "done"
        # a finished turn is followed by the next one of the same session (same workflow id, reused)
        after = await turns.submit([["fast", {"n": 4}]], session_id=session_id)
        with anyio.fail_after(60):
            assert (await after.result()).text == "done: fast=fast 4"
        assert await _user_messages(rt, session_id) == 3
        assert count(turns.marks, "fast") == 2  # n=1 and n=4; the refused turns ran nothing


async def test_a_turn_that_created_its_session_holds_it_against_a_turn_that_continues_it(
    turns: Turns,
) -> None:
    async with turns.worker() as rt:
        creating = await turns.submit([["slow", {}]])  # a new session: its workflow id is not the session's
        await _started(turns)
        session_id = await creating.session_id()
        assert session_id is not None
        continuing = await turns.submit([["fast", {"n": 1}]], session_id=session_id)
        with anyio.fail_after(60), pytest.raises(UsageError, match=f"session {session_id} is busy"):
            await continuing.result()
        assert await _user_messages(rt, session_id) == 1
        (turns.marks / "release").touch()
        with anyio.fail_after(60):
            assert (await creating.result()).stop == "done"
        assert count(turns.marks, "fast") == 0


async def test_an_in_process_run_and_a_temporal_turn_of_one_session_exclude_each_other(turns: Turns) -> None:
    async with turns.worker() as rt:
        first = await turns.submit([["fast", {"n": 1}]])
        with anyio.fail_after(60):
            session_id = (await first.result()).session_id
        # an in-process owner (another store on the same data directory, as `tether run` opens) runs the session:
        # the Temporal turn is refused before it writes anything
        async with Runtime(data_dir=turns.data, plugins=False) as other:
            await other.store.claim(session_id)
            refused = await turns.submit([["fast", {"n": 2}]], session_id=session_id)
            with (
                anyio.fail_after(60),
                pytest.raises(UsageError, match=f"session {session_id} is busy \\(pid"),
            ):
                await refused.result()
            await other.store.release(session_id)
        assert await _user_messages(rt, session_id) == 1
        # a Temporal turn runs the session: an in-process `tether run --session` is refused (exit code 2)
        running = await turns.submit([["slow", {}]], session_id=session_id)
        await _started(turns)
        done = await _cli(turns, "--model", "replay/demo", "--session", session_id, "--dir", str(turns.directory),
                          "hello")  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"session {session_id} is busy (pid {os.getpid()})" in done.stderr
        (turns.marks / "release").touch()
        with anyio.fail_after(60):
            assert (await running.result()).stop == "done"
        # the claim is released before the turn's result is out: an in-process owner gets the session at once
        async with Runtime(data_dir=turns.data, plugins=False) as other:
            await other.store.claim(session_id)
            await other.store.release(session_id)
        assert await _user_messages(rt, session_id) == 2
        assert count(turns.marks, "fast") == 1


async def test_a_turn_of_a_session_that_does_not_exist_is_not_found_at_once_and_claims_nothing(
    turns: Turns,
) -> None:
    async with turns.worker() as rt:
        handle = await turns.submit([["fast", {"n": 1}]], session_id="ses_nope")
        with anyio.fail_after(30), pytest.raises(NotFoundError, match="ses_nope"):
            await handle.result()  # not retried: the hold refuses it before anything is claimed or written
        async with Runtime(data_dir=turns.data, plugins=False) as other:
            await other.store.claim("ses_nope")  # no claim was left behind
        assert list(await rt.store.list_sessions()) == []
    assert count(turns.marks, "fast") == 0
