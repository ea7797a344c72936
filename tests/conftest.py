"""Shared test configuration: anyio tests run on asyncio, and no process of the run outlives it.

Every test process (pytest itself, or each ``pytest-xdist`` worker) marks the environment its children inherit with a
run id of its own (:data:`MARK`). When the process's tests are done (its session fixtures, servers included, torn
down), :func:`_no_process_survives` looks for what is still alive of it: its descendants, and any process carrying
its mark (a daemon that double-forked away from its parent, a server a test left running). Survivors fail the run,
each named with its command line (a test's ``tmp_path`` in it names the test), and are then killed, so that one
leaking test does not leave the machine busy for the next run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# No property test's verdict depends on the machine's speed: no per-example deadline and no "too slow" health check
# (a busy 2-core machine generated inputs slowly enough to fail tests/mcp/test_units.py). A test's own @settings
# still sets its example count; these are the defaults it starts from.
settings.register_profile("tether", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("tether")

MARK = "PYTEST_TETHER_RUN"
"""The environment variable that carries this test process's run id to every process it starts."""

GRACE = 20.0
"""How long survivors may take to finish exiting (a hang guard: a process told to stop is usually gone at once)."""


def pytest_configure(config: pytest.Config) -> None:
    # Each process adds an id of its own to the ids it inherited: an xdist worker finds only what its own tests
    # started (not its siblings'), and a pytest run by a test still carries the outer run's id to its children.
    inherited = os.environ.get(MARK)
    os.environ[MARK] = f"{inherited}:{uuid.uuid4().hex}" if inherited else uuid.uuid4().hex


FIRST = (
    # temporal/: server restarts, killed workers and heartbeat timeouts (tens of seconds of waiting each)
    "test_ten_turns_survive_killed_workers_and_a_restart_of_each_server",
    "test_two_hosts_a_worker_crash_and_an_upgrade_as_the_docs_walk_through",
    "test_a_follower_outlives_a_server_restart_or_gives_up_without_cancelling_the_turn",
    "test_a_killed_worker_s_turn_finishes_on_another_worker",
    "test_a_worker_killed_at_a_fault_point_leaves_a_turn_another_worker_finishes_exactly_once",
    # many real tether processes each, or a long computation
    "test_ten_thousand_sequential_tool_calls",
    "test_lists_show_short_ids_and_every_command_takes_them",
    "test_every_sessions_command_uses_the_store_of_the_user_config",
    "test_prune_deletes_only_sessions_older_than_the_age",
    "test_workers_sharing_one_database_see_continue_and_delete_each_others_sessions",
    "test_a_broken_store_url_in_the_user_config_is_a_usage_error",
    "test_a_session_run_by_a_live_process_is_busy_and_a_dead_ones_claim_is_reclaimed",
    "test_explain_and_add_refuse_a_misspelled_action_naming_the_right_one",
    "test_workers_racing_for_one_session_never_both_get_it",
    "test_a_unique_prefix_names_a_session_everywhere_and_an_ambiguous_one_lists_candidates",
    "test_sessions_owners_lists_a_live_holder_and_forgets_a_killed_one",
    "test_an_unreachable_store_in_the_config_is_a_clear_usage_error",
    "test_permissions_add_list_explain_remove",
    # hypothesis over the stores' codecs
    "test_a_large_tool_input_is_left_out_of_the_row_and_the_rest_round_trips",
    "test_the_writers_per_kind_serializer_writes_what_the_parts_codec_writes",
)
"""The longest tests of a full run, longest first (by name, which survives a file's move): they start first."""


SHARED_SERVER = Path(__file__).parent / "temporal"
"""Tests that share this process's Temporal dev server: collected together, so it stops when they are done."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests start first, and the tests of the shared Temporal dev server come together: those of
    :data:`FIRST` in tests/temporal/ (in its order), the rest of tests/temporal/, the other tests of :data:`FIRST`, any
    marked ``slow``, then everything else in its usual order.

    ``pytest-xdist`` hands tests out in collection order: a long test collected last would run alone at the end while
    the other workers sit idle (tests/temporal/ sorts late). Started first, it runs beside the many short ones. Each
    worker gets its tests in collection order too, so once its next test needs no dev server, none will
    (tests/temporal/conftest.py stops it then).
    """
    rank = {name: n for n, name in enumerate(FIRST)}
    last = len(FIRST)

    def key(item: pytest.Item) -> tuple[int, int]:
        first = rank.get(getattr(item, "originalname", item.name), last)
        shared = item.path.is_relative_to(SHARED_SERVER)
        if shared:
            return (0, first) if first < last else (1, 0)
        if first < last:
            return (2, first)
        return (3, 0) if item.get_closest_marker("slow") else (4, 0)

    items.sort(key=key)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def counted_hand_offs(monkeypatch: pytest.MonkeyPatch) -> Callable[[], AbstractContextManager[list[object]]]:
    """``with counted_hand_offs() as hand_offs:`` records each worker-thread hand-off made inside the block (through
    ``anyio.to_thread.run_sync`` or the environment's ``tether._blocking.hand_off``); each still runs."""
    import anyio.to_thread

    from tether import _blocking
    from tether.prompts import _environment

    run_sync = anyio.to_thread.run_sync
    hand_off = _blocking.hand_off

    @contextlib.contextmanager
    def counting() -> Generator[list[object]]:
        hand_offs: list[object] = []

        async def counted(func: Any, *args: Any, **kwargs: Any) -> Any:
            hand_offs.append(func)
            return await run_sync(func, *args, **kwargs)

        async def counted_hand_off(func: Any, *args: Any) -> Any:
            hand_offs.append(func)
            return await hand_off(func, *args)

        with monkeypatch.context() as patch:
            patch.setattr(anyio.to_thread, "run_sync", counted)
            patch.setattr(_environment, "hand_off", counted_hand_off)  # the environment's own hand-off
            yield hand_offs

    return counting


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:  # gone meanwhile, or not ours to read
        return None


def survivors(root: int, mark: str) -> dict[int, str]:
    """Live processes (zombies aside) that descend from ``root`` or carry ``mark`` among the ids of their ``MARK``:
    pid -> command line."""
    parents: dict[int, int] = {}
    marked: set[int] = set()
    prefix = f"{MARK}=".encode()
    ours = mark.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == root:
            continue
        stat = _read(entry / "stat")
        if stat is None:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after its last ')'
        state, ppid = stat[stat.rindex(b")") + 2 :].split()[:2]
        if state == b"Z":
            continue
        pid = int(entry.name)
        parents[pid] = int(ppid)
        environ = _read(entry / "environ")
        if environ is not None and any(
            ours in v.removeprefix(prefix).split(b":") for v in environ.split(b"\0") if v.startswith(prefix)
        ):
            marked.add(pid)
    found = set(marked)
    for pid in parents:
        ancestor = parents.get(pid)
        seen: set[int] = set()
        while ancestor is not None and ancestor not in seen:
            if ancestor == root:
                found.add(pid)
                break
            seen.add(ancestor)
            ancestor = parents.get(ancestor)
    out: dict[int, str] = {}
    for pid in sorted(found):
        cmdline = _read(Path(f"/proc/{pid}/cmdline"))
        if cmdline is not None:
            out[pid] = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
    return out


@pytest.fixture(scope="session", autouse=True)
def _no_process_survives() -> Iterator[None]:
    """Set up before every other fixture, so torn down after them all (session servers included)."""
    yield
    # The bash tool's guard server lives as long as the process that started it (it stops at exit, atexit): stop it
    # now, as the process's exit would, so that only what outlives that counts.
    shell_run = sys.modules.get("tether.builtins._shell_run")
    if shell_run is not None:
        shell_run._stop_server()
    # The tests' fork server (tests/cli/_forkserver.py) serves until the tests are done: stop it the same way.
    for name, module in list(sys.modules.items()):
        if name.endswith("cli._forkserver"):
            module.close()
    mark = os.environ[MARK].rpartition(":")[2]
    deadline = time.monotonic() + GRACE
    left = survivors(os.getpid(), mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)  # polling /proc: a process exiting raises no event here
        left = survivors(os.getpid(), mark)
    if not left:
        return
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    listing = "\n".join(f"  {pid}: {cmdline}" for pid, cmdline in left.items())
    pytest.fail(
        f"{len(left)} process(es) started by the tests outlived them (now killed):\n{listing}", pytrace=False
    )
