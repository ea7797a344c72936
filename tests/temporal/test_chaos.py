"""The short form of ``bench/chaos.py`` (issue 36): three workers on PostgreSQL and a Temporal dev server, ten turns
of sequential steps and parallel calls, a worker SIGKILLed every few seconds, PostgreSQL restarted once and the
Temporal server once. Every turn finishes; no call is lost or reported twice; no side effect of a non-idempotent call
happens twice or goes missing; nothing is left ``running``; no stored model step is asked again.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.postgres.server import find_bin

pytestmark = pytest.mark.anyio

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "chaos.py"


def _chaos() -> Any:
    spec = importlib.util.spec_from_file_location("tether_bench_chaos", _BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


async def test_ten_turns_survive_killed_workers_and_a_restart_of_each_server() -> None:
    if find_bin() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL server binaries missing on CI (scripts/bootstrap installs postgresql)")
        pytest.skip("PostgreSQL server binaries not installed (apt-get install postgresql)")
    chaos = _chaos()
    # a hang guard only: the run waits on events (about 45 s on an idle machine), and a busy machine is slow
    with anyio.fail_after(1800):
        report = await chaos.run(10, concurrency=5, kill_every=3.0, seed=7)
    summary = "\n".join(report.lines())
    assert (report.finished, report.failed, report.cancelled) == (10, {}, 0), summary
    assert report.calls_reported == report.calls_planned and report.calls_lost == 0, summary
    assert report.calls_reported_twice == 0, summary
    assert (report.duplicated_side_effects, report.missing_side_effects) == (0, 0), summary
    assert report.parts_left_running == 0, summary
    assert report.stored_steps_asked_again == 0, summary
    assert report.worker_kills >= 2 and report.postgres_restarts == 1 and report.temporal_restarts == 1, (
        summary
    )
    assert report.clean
