"""Session temp directories: private, removed when their runtime closes, swept when their process died, and never
made in a parent another user prepared."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tether import Runtime
from tether.config import Config
from tether.rules import Rule
from tether.sandbox import Detection, Sandbox, SandboxSettings, SessionTemps, detect, sweep
from tether.testing import ScriptedModel, tool_call

needs_bwrap = pytest.mark.skipif(
    detect("auto").mechanism != "bwrap", reason=f"bubblewrap cannot run here: {detect('auto').reasons}"
)
as_root = pytest.mark.skipif(os.getuid() != 0, reason="making a directory another user owns needs root")
PARENT = f"tether-sandbox-{os.getuid()}"
NOBODY = 65534
TMP_MODULE = Path(__file__).parents[2] / "src" / "tether" / "sandbox" / "_tmp.py"


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A system temp directory of the test's own (what ``tempfile.gettempdir()`` returns to the runtime)."""
    made = tmp_path / "tmp"
    made.mkdir()
    os.chmod(made, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(made))
    return made


def owners(parent: Path) -> list[str]:
    """The owner entries of live or dead runtimes (a planted link is none)."""
    return sorted(n for n in os.listdir(parent) if n.startswith(".owner-") and not (parent / n).is_symlink())


@needs_bwrap
@pytest.mark.anyio
async def test_a_sessions_temp_directory_goes_when_its_runtime_closes(tmp_path: Path, base: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    # /tmp is not the runtime's temp directory here (``base`` is): its paths would ask external_directory
    config = Config(permission=(Rule("external_directory", "*", "allow"),))
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        session = await rt.sessions.create(project)
        model = ScriptedModel([[tool_call("bash", {"command": "touch /tmp/scratch && echo made"})], "done"])
        with model, anyio.fail_after(60):
            result = await session.prompt("make a scratch file", model=model)
        assert result.stop == "done"
        made = base / PARENT / session.id
        assert (made / "scratch").is_file()  # the session's /tmp inside the sandbox
        assert made.stat().st_mode & 0o777 == 0o700
        assert len(owners(base / PARENT)) == 1
    assert not made.exists()
    assert owners(base / PARENT) == []


def test_a_directory_two_runtimes_use_stays_until_the_last_closes(base: Path) -> None:
    first, second = SessionTemps(base), SessionTemps(base)
    shared = first.session("ses_1/../x")
    assert shared == base / PARENT / "ses_1x" and shared.stat().st_mode & 0o777 == 0o700
    assert second.session("ses_1/../x") == shared
    own = first.session("ses_2")
    assert first.session("ses_2") == own  # made once, kept for the session's calls
    assert first.close() == [own]
    assert shared.is_dir() and not own.exists()
    assert second.close() == [shared]
    assert os.listdir(base / PARENT) == [".lock"]
    assert first.close() == []  # closing twice removes nothing


def test_a_deleted_sessions_directory_goes_when_no_other_runtime_uses_it(base: Path) -> None:
    first, second = SessionTemps(base), SessionTemps(base)
    shared, own = first.session("ses_1"), first.session("ses_2")
    (own / "scratch").write_text("x")
    assert second.session("ses_1") == shared
    assert first.release("ses_2") is True and not own.exists()
    assert first.release("ses_1") is False and shared.is_dir()  # the second runtime still uses it
    assert second.release("ses_1") is True and not shared.exists()
    assert (
        first.release("ses_1") is False and first.release("ses_9") is False
    )  # released already, never claimed
    assert first.session("ses_2") == own and own.is_dir()  # claimed again on its next use
    assert first.close() == [own] and second.close() == []
    assert SessionTemps(base).release("ses_1") is False  # never opened: nothing to drop


_RUNTIME = """
import sys
from pathlib import Path
from tether.sandbox import SessionTemps
temps = SessionTemps(Path(sys.argv[1]))
made = temps.session(sys.argv[2])
(made / "work.txt").write_text("x")
(made / "deep").mkdir()
(made / "deep" / "outside").symlink_to(sys.argv[3])
print("ready", flush=True)
sys.stdin.read()  # until the test closes stdin
temps.close()
"""


@pytest.fixture
def runtimes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        process.stdout.close()


def start(
    runtimes: list[subprocess.Popen[str]], base: Path, session: str, outside: Path
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", _RUNTIME, str(base), session, str(outside)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    runtimes.append(process)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    return process


def test_a_dead_processes_directories_are_swept_and_a_live_ones_kept(
    tmp_path: Path, base: Path, runtimes: list[subprocess.Popen[str]]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary").write_text("keep")
    dead = start(runtimes, base, "ses_dead", outside)
    live = start(runtimes, base, "ses_live", outside)
    dead.send_signal(signal.SIGKILL)
    dead.wait(timeout=60)
    parent = base / PARENT
    (parent / "ses_link").symlink_to(outside)  # an entry that is no directory of ours is left alone
    (parent / "notes").write_text("a file")
    (parent / ".owner-planted").symlink_to(outside)  # no owner: never opened through the link
    assert sweep(base) == [parent / "ses_dead"]
    assert (outside / "canary").read_text() == "keep"  # the link inside was removed, not followed
    assert (parent / "ses_live" / "work.txt").is_file() and len(owners(parent)) == 1
    assert (parent / "ses_link").is_symlink() and (parent / "notes").is_file()
    assert (parent / ".owner-planted").is_symlink() and os.listdir(outside) == ["canary"]
    assert live.stdin is not None
    live.stdin.close()  # the live runtime closes: its directory goes with it
    assert live.wait(timeout=60) == 0
    assert not (parent / "ses_live").exists() and owners(parent) == []
    assert (outside / "canary").read_text() == "keep"


@pytest.mark.anyio
async def test_a_runtime_sweeps_when_it_starts_and_closes_only_its_own(
    tmp_path: Path, base: Path, runtimes: list[subprocess.Popen[str]]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dead = start(runtimes, base, "ses_dead", outside)
    dead.send_signal(signal.SIGKILL)
    dead.wait(timeout=60)
    left = base / PARENT / "ses_before"  # made by a tether without owners, or by hand: nobody uses it
    left.mkdir()
    config = Config(data={"sandbox": {"mode": "landlock"}})
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        assert sorted(os.listdir(base / PARENT)) == [".lock", *owners(base / PARENT)]
        assert rt.sandbox.temps.parent == base / PARENT


@pytest.mark.parametrize("made", ["symlink", "loose", pytest.param("other user", marks=as_root)])
def test_a_parent_someone_else_prepared_is_never_used(tmp_path: Path, base: Path, made: str) -> None:
    usual = base / PARENT
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    match made:
        case "symlink":  # to a directory of this user, private: what it names must still not be used
            usual.symlink_to(mine)
        case "loose":
            usual.mkdir()
            os.chmod(usual, 0o777)
        case _:
            usual.mkdir(mode=0o700)
            os.chown(usual, NOBODY, NOBODY)
    before = sorted(os.listdir(usual))
    temps = SessionTemps(base)
    made_dir = temps.session("ses_1")
    fallback = made_dir.parent
    assert fallback != usual and fallback.name.startswith(PARENT + "-")
    assert fallback.stat().st_uid == os.getuid() and fallback.stat().st_mode & 0o777 == 0o700
    assert sorted(os.listdir(usual)) == before and os.listdir(mine) == []
    again = SessionTemps(base)
    assert again.session("ses_2").parent == fallback  # the private fallback is found again, not made anew
    assert temps.close() == [made_dir]
    assert again.close() == [fallback / "ses_2"]


@as_root
def test_a_temp_directory_others_may_write_without_the_sticky_bit_is_refused(
    base: Path, caplog: pytest.LogCaptureFixture
) -> None:
    os.chmod(base, 0o777)
    os.chown(base, NOBODY, NOBODY)
    with pytest.raises(OSError, match="sticky"):
        SessionTemps(base).session("ses_1")
    sandbox = Sandbox.make(
        SandboxSettings(mode="bwrap"), Detection(mechanism="bwrap", bwrap="bwrap"), base, ()
    )
    sandbox.open()  # a runtime still starts: the first command reports it
    assert "sticky" in caplog.text
    with pytest.raises(OSError, match="sticky"):
        sandbox.policy(str(base), "ses_1")
    assert os.listdir(base) == []


def test_planted_entries_in_the_parent_are_never_followed(
    tmp_path: Path, base: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    parent = base / PARENT
    parent.mkdir(mode=0o700)
    (parent / "ses_1").symlink_to(outside)  # a session's name taken by a link
    with pytest.raises(OSError, match="not a private directory"):
        SessionTemps(base).session("ses_1")
    (parent / ".lock").unlink()
    (parent / ".lock").symlink_to(outside / "lock")  # the lock file: opened with O_NOFOLLOW
    assert sweep(base) == [] and "could not sweep" in caplog.text
    with pytest.raises(OSError):
        SessionTemps(base).session("ses_2")
    assert os.listdir(outside) == []


def test_a_parent_removed_by_hand_does_not_fail_the_close(
    base: Path, caplog: pytest.LogCaptureFixture
) -> None:
    temps = SessionTemps(base)
    made = temps.session("ses_1")
    shutil.rmtree(made.parent)
    assert temps.close() == [] and "could not remove" in caplog.text
    assert temps.session("ses_1").is_dir()  # usable again: a new parent and owner
    assert temps.close() == [base / PARENT / "ses_1"]


_UNWRITABLE = """
import importlib.util, os, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("tmp", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
temps = module.SessionTemps(Path(sys.argv[2]))
made = temps.session("ses_go")
cache = made / "mod" / "pkg@v1"
cache.mkdir(parents=True)
(cache / "go.mod").write_text("module pkg")
os.chmod(cache, 0o555)  # Go's module cache is read-only
locked = made / "locked"
locked.mkdir()
(locked / "inner").mkdir()
os.chmod(locked, 0)
print(temps.close() == [made] and not made.exists())
"""


def _others_may_read(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IROTH) and all(
        parent.stat().st_mode & stat.S_IXOTH for parent in path.parents
    )


def test_directories_a_command_made_read_only_are_removed_too(base: Path) -> None:
    if os.getuid() != 0:  # as this user: the permissions apply
        result = subprocess.run(
            [sys.executable, "-c", _UNWRITABLE, str(TMP_MODULE), str(base)], capture_output=True, text=True
        )
    else:  # root ignores file modes: run as nobody, with the system's Python (the module is stdlib only)
        python = shutil.which("python3", path="/usr/bin")
        if python is None or not _others_may_read(TMP_MODULE):
            pytest.skip("no /usr/bin/python3, or the checkout is not readable, to run as another user")
        shared = Path(tempfile.mkdtemp(dir="/tmp"))
        try:
            os.chown(shared, NOBODY, NOBODY)
            result = subprocess.run(
                [python, "-I", "-c", _UNWRITABLE, str(TMP_MODULE), str(shared)],
                capture_output=True,
                text=True,
                user=NOBODY,
                group=NOBODY,
                extra_groups=[],
            )
        finally:
            shutil.rmtree(shared)
    assert result.stdout == "True\n", result.stderr
