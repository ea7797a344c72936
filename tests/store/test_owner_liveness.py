"""Whether the store that wrote an unfinished call is gone, judged from its process: a killed process, a zombie
and an impossible pid are gone at once; a live pid without a recorded identity falls back to the heartbeat."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tether.store._owners import STALE_SECONDS, Owner, OwnerRow, owner_alive, process_identity

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
NOW = 10_000_000
FRESH = NOW - 1000
STALE = NOW - int(STALE_SECONDS * 1000) - 1


def me() -> Owner:
    return Owner(id="own_me", host="here", pid=os.getpid(), identity=process_identity(os.getpid()))


def row(pid: int, *, identity: str = "", heartbeat: int = FRESH) -> OwnerRow:
    return OwnerRow(id="own_other", host="here", pid=pid, identity=identity, heartbeat=heartbeat)


def test_the_owner_of_a_killed_and_reaped_process_is_gone_even_with_a_fresh_heartbeat() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    identity = process_identity(child.pid)
    child.kill()
    child.wait()
    assert not owner_alive(row(child.pid, identity=identity), me(), NOW)


@linux_only
def test_the_owner_of_a_killed_process_not_yet_reaped_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    identity = process_identity(child.pid)
    try:
        os.kill(child.pid, signal.SIGKILL)
        # Wait for the exit but leave the child unreaped: it is a zombie now, whatever the scheduler did.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert not owner_alive(row(child.pid, identity=identity), me(), NOW)
    finally:
        child.wait()


def test_an_impossible_pid_is_gone() -> None:
    assert not owner_alive(row(0), me(), NOW)


def test_a_live_pid_without_a_recorded_identity_is_judged_by_its_heartbeat() -> None:
    parent = os.getppid()
    assert owner_alive(row(parent, heartbeat=FRESH), me(), NOW)
    assert not owner_alive(row(parent, heartbeat=STALE), me(), NOW)


def test_this_stores_own_row_is_alive_whatever_its_heartbeat() -> None:
    mine = me()
    own = OwnerRow(id=mine.id, host="elsewhere", pid=-1, identity="", heartbeat=0)
    assert owner_alive(own, mine, NOW)
