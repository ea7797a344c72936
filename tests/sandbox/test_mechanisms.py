"""Detection (a real probe of bubblewrap, a broken one on PATH), and the Landlock fallback run through the guard."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.builtins._shell_run import run_shell
from tether.output import OutputStore
from tether.sandbox import Sandbox, SandboxSettings, detect, reset
from tether.sandbox._landlock import abi_version

pytestmark = pytest.mark.anyio


@pytest.fixture
def fresh() -> Iterator[None]:
    reset()
    yield
    reset()


def test_a_bwrap_that_cannot_start_a_sandbox_falls_back_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    found = detect("auto")
    assert found.mechanism == ("landlock" if abi_version() else "none")
    assert any("No permissions to create new namespace" in reason for reason in found.reasons)
    assert detect("auto") is found  # cached


def test_no_bwrap_on_path_is_said_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    found = detect("bwrap")
    assert found.mechanism == "none" and "not installed" in found.reasons[0]
    assert detect("off").reasons == ("sandbox.mode is off",)


needs_landlock = pytest.mark.skipif(
    abi_version() < 4, reason="the kernel has no Landlock with TCP rules (ABI >= 4)"
)


@needs_landlock
async def test_landlock_confines_writes_to_the_project_and_temp_and_blocks_tcp(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    # a connection that got through would wait in the listener's backlog (the kernel completes the handshake with
    # no accept), so after the command a non-blocking accept tells, with no wait for one that never comes
    listener = socket.create_server(("127.0.0.1", 0))
    sandbox = Sandbox.make(SandboxSettings(mode="landlock"), detect("landlock"), tmp_path / "tmp", ())
    (tmp_path / "tmp").mkdir()
    policy = sandbox.policy(str(project), "ses_ll")
    store = OutputStore(tmp_path / "out")
    port = listener.getsockname()[1]
    run = await run_shell(
        f"echo in > inside && echo t > $TMPDIR/t && cat $TMPDIR/t; echo out > {outside}/x; "
        f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED",
        cwd=project,
        time_limit=60,
        spill=lambda: store.open_managed("s"),
        sandbox=sandbox,
        policy=policy,
    )
    listener.setblocking(False)
    with pytest.raises(BlockingIOError):
        listener.accept()[0].close()
    listener.close()
    assert (project / "inside").exists() and "t\n" in run.output
    assert not (outside / "x").exists() and "Permission denied" in run.output
    assert "CONNECTED" not in run.output
