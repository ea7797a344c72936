"""Fault injection (``_faults.py``) and a follower's patience (``_client._Retry``), without a server.

A fault point kills its process with SIGKILL (a real child process here), only when ``$TETHER_TEMPORAL_FAULT`` names
it and its chance comes up; a malformed value is refused when a worker starts. A follower's read that keeps failing is
retried, each failure reported, until its patience is spent; a read that succeeds starts the count again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import anyio
import pytest

from tether.errors import NotFoundError
from tether.temporal import TurnUnreadable
from tether.temporal._client import _Retry  # pyright: ignore[reportPrivateUsage]
from tether.temporal._faults import FAULT_ENV, POINTS, check_faults, fault


def at_point(point: str, value: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    if value is not None:
        env[FAULT_ENV] = value
    code = f"from tether.temporal._faults import fault\nfault({point!r})\nprint('alive')"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60).returncode


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("step-stored", -signal.SIGKILL),
        ("call-ran, step-stored@1", -signal.SIGKILL),
        ("step-stored@0", 0),
        ("call-ran", 0),
        (None, 0),
    ],
)
def test_a_fault_point_kills_its_process_only_when_named_and_its_chance_comes_up(
    value: str | None, code: int
) -> None:
    assert at_point("step-stored", value) == code


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("step-sorted", "no fault point 'step-sorted'"),
        ("step-stored@often", "a number from 0 to 1"),
        ("step-stored@2", "a number from 0 to 1"),
    ],
)
def test_a_malformed_fault_setting_is_refused_naming_the_points(
    value: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAULT_ENV, value)
    with pytest.raises(ValueError, match=message) as raised:
        check_faults()
    if "no fault point" in message:
        assert all(point in str(raised.value) for point in POINTS)


def test_a_well_formed_or_absent_fault_setting_passes_and_does_nothing_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(FAULT_ENV, raising=False)
    check_faults()
    fault("begin-stored")
    monkeypatch.setenv(FAULT_ENV, "begin-stored@0.5, call-stored")
    check_faults()
    fault("call-ran")  # not named: this process lives on


@pytest.mark.anyio
async def test_a_failing_read_is_retried_and_reported_until_the_patience_is_spent() -> None:
    heard: list[Exception] = []
    attempts = 0

    async def flaky() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise TurnUnreadable("cannot be read now")
        return "read"

    assert await _Retry(60.0, heard.append)(flaky) == "read"
    assert [str(e) for e in heard] == ["cannot be read now"] * 2

    async def never() -> str:
        raise TurnUnreadable("the server is gone")

    with anyio.fail_after(30), pytest.raises(TurnUnreadable, match="the server is gone"):
        await _Retry(0.5, None)(never)

    async def missing() -> str:
        raise NotFoundError("No turn x on the Temporal server")

    with pytest.raises(NotFoundError):  # not a hiccup: raised at once
        await _Retry(60.0, heard.append)(missing)
    assert len(heard) == 2
