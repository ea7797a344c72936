"""Running shell commands: exit codes, interleaving, no survivors (timeout, cancellation, exit, SIGKILL of tether), capture,
memory, and what a cancelled call keeps."""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether.builtins._shell_run import CAPTURE_LIMIT, PROGRESS_INTERVAL, ShellRun, _Throttle, run_shell
from tether.output import OutputStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def store(tmp_path: Path) -> OutputStore:
    return OutputStore(tmp_path / "tool-output")


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "w"
    path.mkdir()
    return path


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (absent, or a zombie waiting for a reaper outside our control)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return True
    return stat[stat.rfind(b")") + 2 :].split()[0] in (b"Z", b"X")


class Tail:
    """A progress sink that lets a test wait, without sleeping, until the output matches a pattern."""

    def __init__(self) -> None:
        self.updates: list[Mapping[str, Any]] = []
        self._changed = anyio.Event()
        self._token = anyio.lowlevel.current_token()

    def __call__(self, update: Mapping[str, Any]) -> None:
        # Called from the runner's worker thread.
        self.updates.append(update)
        anyio.from_thread.run_sync(self._changed.set, token=self._token)

    async def wait_until(self, predicate: Callable[[Mapping[str, Any]], bool]) -> Mapping[str, Any]:
        with anyio.fail_after(5):
            while True:
                for update in reversed(self.updates):
                    if predicate(update):
                        return update
                await self._changed.wait()
                self._changed = anyio.Event()

    async def wait_for(self, pattern: str) -> re.Match[str]:
        with anyio.fail_after(5):
            while True:
                for update in reversed(self.updates):
                    found = re.search(pattern, update["output"])
                    if found:
                        return found
                await self._changed.wait()
                self._changed = anyio.Event()


async def run(command: str, store: OutputStore, cwd: Path, **kwargs: Any) -> ShellRun:
    kwargs.setdefault("time_limit", 10)
    return await run_shell(command, cwd=cwd, spill=store.open_managed, **kwargs)


def managed_files(store: OutputStore) -> list[str]:
    return sorted(os.listdir(store.directory)) if store.directory.exists() else []


async def test_exit_codes_and_signals(store: OutputStore, cwd: Path) -> None:
    assert (await run("true", store, cwd)).exit_code == 0
    assert (await run("exit 7", store, cwd)).exit_code == 7
    killed = await run("kill -9 $$", store, cwd)
    assert killed.exit_code == 137
    assert not killed.timed_out


async def test_stdout_and_stderr_interleave_in_arrival_order(store: OutputStore, cwd: Path) -> None:
    result = await run("echo one; echo two >&2; echo three; echo four >&2", store, cwd)
    assert result.output == "one\ntwo\nthree\nfour\n"
    assert result.total_bytes == result.captured_bytes == len(result.output)
    assert result.output_path is None
    assert managed_files(store) == []


async def test_environment_stdin_and_working_directory(store: OutputStore, cwd: Path) -> None:
    result = await run('echo "$TETHER"; cat; pwd; echo "$PWD"', store, cwd)
    assert result.output == f"1\n{cwd}\n{cwd}\n"


async def test_non_utf8_bytes_are_replaced(store: OutputStore, cwd: Path) -> None:
    result = await run(r"printf 'ok \xff\xfe end \xc3\xa9\n'", store, cwd)
    assert result.output == "ok \ufffd\ufffd end é\n"


async def test_empty_output(store: OutputStore, cwd: Path) -> None:
    result = await run(":", store, cwd)
    assert (result.output, result.total_bytes, result.truncated) == ("", 0, False)


async def test_timeout_kills_the_whole_group_including_background_jobs(store: OutputStore, cwd: Path) -> None:
    result = await run(
        "sleep 1000 & echo bg=$!; echo sh=$$; sleep 1000", store, cwd, time_limit=3.0
    )  # generous: the pids must be printed before it
    assert result.timed_out
    assert result.exit_code is None
    pids = [int(p) for p in re.findall(r"=(\d+)", result.output)]
    assert len(pids) == 2
    assert all(gone(pid) for pid in pids)


async def test_background_job_does_not_outlive_a_finished_command(store: OutputStore, cwd: Path) -> None:
    result = await run("sleep 1000 & echo $!", store, cwd)
    assert result.exit_code == 0
    assert not result.timed_out
    assert gone(int(result.output))


async def test_a_process_ignoring_sigterm_is_killed_after_the_grace_period(
    store: OutputStore, cwd: Path
) -> None:
    command = "trap '' TERM; (trap '' TERM; while :; do :; done) & echo child=$!; while :; do :; done"
    result = await run(command, store, cwd, time_limit=2.0, kill_grace=0.2)  # generous for loaded machines
    assert result.timed_out
    assert gone(int(re.findall(r"child=(\d+)", result.output)[0]))


async def test_cancellation_kills_the_group_and_propagates(store: OutputStore, cwd: Path) -> None:
    tail = Tail()
    pids: list[int] = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                found = await tail.wait_for(r"sh=(\d+) bg=(\d+)")
                pids.extend(int(p) for p in found.groups())
                scope.cancel()

            tg.start_soon(watch)
            await run("sleep 1000 & echo sh=$$ bg=$!; sleep 1000", store, cwd, progress=tail)
            pytest.fail("the run should have been cancelled")
    assert scope.cancelled_caught
    assert len(pids) == 2
    assert all(gone(pid) for pid in pids)
    assert managed_files(store) == []


def test_progress_is_throttled_to_ten_updates_a_second() -> None:
    throttle = _Throttle(interval=PROGRESS_INTERVAL)
    assert PROGRESS_INTERVAL == 0.1
    assert throttle.wait(5.0) == 0.0
    times = [5.0 + i / 1000 for i in range(0, 2000, 7)]  # a chunk every 7 ms for 2 s
    sent = [now for now in times if throttle.due(now)]
    assert sent[0] == 5.0
    assert all(later - earlier >= PROGRESS_INTERVAL for earlier, later in itertools.pairwise(sent))
    assert len(sent) >= 19  # and none of them is held back longer than needed
    assert throttle.wait(sent[-1]) == pytest.approx(PROGRESS_INTERVAL)


async def test_progress_streams_the_tail(store: OutputStore, cwd: Path) -> None:
    tail = Tail()
    result = await run("for i in $(seq 1 40); do echo line $i; done", store, cwd, progress=tail)
    assert result.exit_code == 0
    assert tail.updates
    last = tail.updates[-1]
    assert last["output"].endswith("\n")
    assert last["bytes"] <= result.total_bytes
    assert all(u["output"] for u in tail.updates)


async def test_output_up_to_the_capture_limit_is_kept_whole(store: OutputStore, cwd: Path) -> None:
    result = await run(f"head -c {CAPTURE_LIMIT} /dev/zero | tr '\\0' x", store, cwd)
    assert result.total_bytes == CAPTURE_LIMIT
    assert not result.truncated
    assert result.output == "x" * CAPTURE_LIMIT
    assert result.output_path is None
    assert managed_files(store) == []


async def test_output_over_the_capture_limit_keeps_head_and_tail_and_the_full_file(
    store: OutputStore, cwd: Path
) -> None:
    total = CAPTURE_LIMIT + 1
    result = await run(f"seq 1 200000 | head -c {total}", store, cwd)
    assert result.total_bytes == total
    assert result.truncated
    assert result.captured_bytes <= CAPTURE_LIMIT
    assert result.output.startswith("1\n2\n3\n")
    assert result.output_path is not None
    assert result.output_path.stat().st_size == total
    assert f"full output saved to {result.output_path}" in result.output
    full = result.output_path.read_text()
    head, _, tail = result.output.partition("\n\n[... ")
    assert full.startswith(head)
    assert full.endswith(tail.split(" ...]\n\n", 1)[1])


async def test_a_missing_working_directory_fails_to_start(store: OutputStore, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await run("true", store, tmp_path / "missing")
    assert managed_files(store) == []


async def test_a_command_may_remove_its_own_working_directory(store: OutputStore, cwd: Path) -> None:
    result = await run('rm -rf "$PWD" && echo still here', store, cwd)
    assert (result.exit_code, result.output) == (0, "still here\n")
    assert not cwd.exists()


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(field)


@pytest.fixture
def big_store(tmp_path: Path) -> Iterator[OutputStore]:
    """A store for gigabytes: on tmpfs when there is room (the test is about our memory, not the disk's speed)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 4 << 30:
        directory = Path(tempfile.mkdtemp(prefix="tether-bash-", dir=shm))
        try:
            yield OutputStore(directory)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    else:
        yield OutputStore(tmp_path / "big-output")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc")
async def test_gigabytes_of_output_use_bounded_memory(big_store: OutputStore, cwd: Path) -> None:
    size = 2 << 30
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset the peak RSS (VmHWM) to the current RSS
    before = _rss_kib("VmRSS")
    result = await run(f"yes | head -c {size}", big_store, cwd, time_limit=120)
    growth_mib = (_rss_kib("VmHWM") - before) / 1024
    try:
        assert result.exit_code == 0
        assert result.total_bytes == size
        assert result.truncated
        assert result.output_path is not None
        assert result.output_path.stat().st_size == size
        assert result.output.startswith("y\ny\n")
        assert growth_mib < 64, f"peak memory grew by {growth_mib:.1f} MiB"
        print(f"2 GiB of output: peak memory growth {growth_mib:.1f} MiB")
    finally:
        if result.output_path is not None:
            result.output_path.unlink()


async def test_progress_tail_comes_from_the_spill_file_past_the_capture_limit(
    store: OutputStore, cwd: Path
) -> None:
    tail = Tail()
    gate = cwd / "gate"
    os.mkfifo(gate)
    # The command holds still on a FIFO after its output, until the trailing progress update has been seen.
    command = f"head -c 2000000 /dev/zero | tr '\\0' x; cat {gate} > /dev/null"
    async with anyio.create_task_group() as tg:

        async def release() -> None:
            await tail.wait_until(lambda update: update["bytes"] == 2_000_000)
            await anyio.to_thread.run_sync(lambda: os.close(os.open(gate, os.O_WRONLY)))

        tg.start_soon(release)
        result = await run(command, store, cwd, progress=tail)
    assert result.truncated
    final = [u for u in tail.updates if u["bytes"] == 2_000_000]
    assert final and final[-1]["output"] == "x" * 30_000


async def test_live_groups_lists_a_running_shell_until_its_group_is_ended(
    store: OutputStore, cwd: Path
) -> None:
    from tether.builtins._shell_run import live_groups

    tail = Tail()
    seen: list[frozenset[int]] = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                found = await tail.wait_for(r"sh=(\d+)")
                seen.append(live_groups())
                seen.append(frozenset({int(found.group(1))}))
                scope.cancel()

            tg.start_soon(watch)
            await run("echo sh=$$; sleep 1000", store, cwd, progress=tail)
    assert seen[1] <= seen[0]
    assert not (seen[1] & live_groups())


# --- no survivors: processes that leave the shell's session end with the call ------------------------------------


def marker() -> str:
    """A ``sleep`` argument no other process on the machine has: ``1000.<random digits>``."""
    return f"1000.{secrets.randbelow(10**9):09d}"


def running(argument: str) -> list[int]:
    """Live (non-zombie) processes whose command line holds ``argument``."""
    found: list[int] = []
    needle = argument.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if needle in argv and not gone(int(name)):
            found.append(int(name))
    return found


def escaping(argument: str) -> str:
    """Start two processes that leave the shell's session (``setsid &``, and a double fork), then print ``started``.

    Each writes its pid to a file (``a``, ``b``) before it becomes ``sleep <argument>``; the command goes on only
    when both run, so a test that finds them gone knows they existed.
    """
    return (
        f"setsid sh -c 'echo $$ > a; exec sleep {argument}' > /dev/null 2>&1 & "
        f"(setsid sh -c 'echo $$ > b; exec sleep {argument}' > /dev/null 2>&1 &); "
        "while [ ! -s a ] || [ ! -s b ]; do sleep 0.01; done; echo started"
    )


def escaped_pids(cwd: Path) -> list[int]:
    return [int((cwd / name).read_text()) for name in ("a", "b")]


async def test_processes_that_left_the_session_end_when_the_command_finishes(
    store: OutputStore, cwd: Path
) -> None:
    argument = marker()
    result = await run(escaping(argument), store, cwd)
    assert (result.exit_code, result.output) == (0, "started\n")
    assert all(gone(pid) for pid in escaped_pids(cwd))
    assert running(argument) == []


async def test_processes_that_left_the_session_end_when_the_command_times_out(
    store: OutputStore, cwd: Path
) -> None:
    argument = marker()
    result = await run(
        f"{escaping(argument)}; sleep {argument}", store, cwd, time_limit=3.0
    )  # generous: see above
    assert result.timed_out
    assert result.output == "started\n"
    assert all(gone(pid) for pid in escaped_pids(cwd))
    assert running(argument) == []


async def test_processes_that_left_the_session_end_when_the_call_is_cancelled(
    store: OutputStore, cwd: Path
) -> None:
    argument = marker()
    tail = Tail()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                await tail.wait_for("started")
                scope.cancel()

            tg.start_soon(watch)
            await run(f"{escaping(argument)}; sleep {argument}", store, cwd, progress=tail)
            pytest.fail("the run should have been cancelled")
    assert scope.cancelled_caught
    assert all(gone(pid) for pid in escaped_pids(cwd))
    assert running(argument) == []


async def test_a_shell_that_cannot_be_started_is_an_os_error(store: OutputStore, cwd: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        await run("true", store, cwd, shell=str(cwd / "no-such-shell"))
    assert caught.value.filename == str(cwd / "no-such-shell")
    assert managed_files(store) == []


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 120) -> None:
    """Poll ``predicate`` (it reads /proc or files) until it holds, for at most ``timeout`` seconds (a hang guard: a busy machine starts tether slowly)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.02)


def test_sigkill_of_tether_run_leaves_no_process_of_the_call(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    argument = marker()
    script = tmp_path / "script.json"
    command = f"{escaping(argument)}; sleep {argument}"
    script.write_text(
        json.dumps([{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "done"}])
    )
    env = {
        **os.environ,
        "TETHER_DATA_DIR": str(tmp_path / "data"),
        "TETHER_CONFIG_DIR": str(tmp_path / "config"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "NO_COLOR": "1",
    }
    argv = [
        sys.executable,
        "-m",
        "tether.cli",
        "run",
        "go",
        "--model",
        f"scripted:{script}",
        "--dir",
        str(project),
    ]
    tether = subprocess.Popen(
        [*argv, "--yes"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        # The shell's own sleep and the two escaped ones.
        wait_until(lambda: len(running(argument)) == 3 or tether.poll() is not None, "the command runs")
        assert tether.poll() is None, tether.stderr.read() if tether.stderr else ""
        pids = escaped_pids(project)
        tether.kill()
        tether.wait()
    finally:
        if tether.poll() is None:
            tether.kill()
            tether.wait()
        if tether.stderr is not None:
            tether.stderr.close()
    wait_until(lambda: running(argument) == [], "no process of the call is left", timeout=60)
    assert all(gone(pid) for pid in pids)


# --- a cancelled call keeps its output so far ------------------------------------------------------------------------


async def test_a_cancelled_bash_call_keeps_its_output_so_far_on_its_part(tmp_path: Path) -> None:
    from tether import Runtime
    from tether.llm import ToolMessage
    from tether.session import ToolPart, ToolProgress
    from tether.session.internal import ABORTED_ERROR
    from tether.testing import ScriptedModel, tool_call
    from tether.tools import Text

    project = tmp_path / "project"
    project.mkdir()
    argument = marker()
    command = f"for i in 1 2 3; do echo tick $i; done; sleep {argument}"
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project, rules=[("bash", "*", "allow")])
        printed = anyio.Event()

        def on_progress(event: ToolProgress) -> None:
            if "tick 3" in str(event.update.get("output")):
                printed.set()

        rt.bus.subscribe(ToolProgress, on_progress)
        model = ScriptedModel([[tool_call("bash", {"command": command}, id="c1")]])
        with model, anyio.fail_after(20):
            async with anyio.create_task_group() as tg:

                async def prompt() -> None:
                    result = await session.prompt("go", model=model)
                    assert result.stop == "cancelled"

                tg.start_soon(prompt)
                await printed.wait()
                session.cancel()
        (part,) = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
        assert (part.state, part.error, part.interrupted) == ("error", ABORTED_ERROR, True)
        assert part.content == (Text("tick 1\ntick 2\ntick 3\n"),)
        assert running(argument) == []

        # The model reads the output, then that the call was aborted.
        follow = ScriptedModel(["ok"])
        with follow, anyio.fail_after(10):
            await session.prompt("again", model=follow)
        replayed = [m for m in follow.requests[0].messages if isinstance(m, ToolMessage)][-1].results[0]
        assert [getattr(c, "text", None) for c in replayed.content] == [
            "tick 1\ntick 2\ntick 3\n",
            ABORTED_ERROR,
        ]
        assert replayed.is_error


async def test_a_cancelled_bash_call_keeps_only_the_tail_of_long_output_and_says_so(tmp_path: Path) -> None:
    from tether import Runtime
    from tether.session import ToolPart, ToolProgress
    from tether.testing import ScriptedModel, tool_call
    from tether.tools import Text

    project = tmp_path / "project"
    project.mkdir()
    argument = marker()
    command = f"seq 1 20000; echo END; sleep {argument}"  # ~109 KB before it holds still
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project, rules=[("bash", "*", "allow")])
        printed = anyio.Event()

        def on_progress(event: ToolProgress) -> None:
            if str(event.update.get("output")).endswith("END\n"):
                printed.set()

        rt.bus.subscribe(ToolProgress, on_progress)
        model = ScriptedModel([[tool_call("bash", {"command": command})]])
        with model, anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(session.prompt, "go", model=model))
                await printed.wait()
                session.cancel()
        (part,) = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
        (kept,) = part.content
        assert isinstance(kept, Text)
        notice = "[... earlier output not kept ...]\n"
        assert kept.text.startswith(notice)
        assert kept.text.endswith("19999\n20000\nEND\n")
        assert len(kept.text) <= len(notice) + 30_000
        assert running(argument) == []


async def test_the_shell_gets_the_environment_it_was_given_and_nothing_from_the_guard(
    store: OutputStore, cwd: Path
) -> None:
    env = {"PATH": os.environ["PATH"], "ODD": "x y"}
    result = await run("env", store, cwd, env=env)
    names = {line.split("=", 1)[0] for line in result.output.splitlines()}
    assert {"PATH", "ODD", "TETHER", "PWD"} <= names
    assert not names & {"LC_CTYPE", "LC_ALL", "PYTHONPATH"}  # Python's locale coercion stays in the guard


async def test_a_call_starts_a_new_guard_server_when_the_old_one_was_killed(
    store: OutputStore, cwd: Path
) -> None:
    from tether.builtins import _shell_run

    assert (await run("true", store, cwd)).exit_code == 0
    server = _shell_run._server
    assert server is not None
    os.kill(server.process.pid, signal.SIGKILL)
    await anyio.to_thread.run_sync(lambda: wait_until(lambda: gone(server.process.pid), "the server is dead"))
    result = await run("echo ran", store, cwd)
    assert (result.exit_code, result.output) == (0, "ran\n")
    assert server.process.returncode == -signal.SIGKILL  # found dead and reaped
    assert _shell_run._server is not server


async def test_a_command_that_kills_its_own_guard_leaves_no_process_behind(
    store: OutputStore, cwd: Path
) -> None:
    argument = marker()
    command = (
        f"setsid sh -c 'echo $$ > a; exec sleep {argument}' > /dev/null 2>&1 & "
        "while [ ! -s a ]; do sleep 0.01; done; kill -9 $PPID; sleep 5"
    )
    await run(command, store, cwd, time_limit=20)
    escaped = int((cwd / "a").read_text())
    wait_until(lambda: gone(escaped) and running(argument) == [], "the orphan of the killed guard is gone")
