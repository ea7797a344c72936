"""The CLI's long-lived commands keep start-up's objects out of later garbage collections (issue 14)."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.cli import _common


def _tracked(value: object) -> bool:
    """Whether a collection would look at ``value`` (it is in one of the three generations)."""
    return any(o is value for generation in range(3) for o in gc.get_objects(generation))


@pytest.fixture
def unfrozen(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    gc.unfreeze()
    threshold = gc.get_threshold()
    monkeypatch.setattr(_common, "_frozen", False)
    yield
    gc.unfreeze()  # the test process collects as before
    gc.set_threshold(*threshold)


def test_freeze_startup_moves_what_exists_out_of_collections_once(unfrozen: None) -> None:
    before = [object()]  # a tracked container that exists at start-up
    assert gc.get_freeze_count() == 0
    _common.freeze_startup()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    assert not _tracked(before)

    later = [object()]  # made after start-up: collected as usual
    _common.freeze_startup()  # once per process: a later call freezes nothing more
    assert gc.get_freeze_count() == frozen
    assert _tracked(later)


def test_freeze_startup_collects_the_young_generation_less_often(unfrozen: None) -> None:
    gc.set_threshold(700, 10, 10)  # Python 3.11's default
    _common.freeze_startup()
    assert gc.get_threshold() == (_common.YOUNG, 10, 10)


def test_freeze_startup_turns_the_collector_back_on(unfrozen: None) -> None:
    gc.disable()  # as tether.cli.main leaves it while a command starts
    try:
        _common.freeze_startup()
        assert gc.isenabled()
    finally:
        gc.enable()


_REPORT = (
    "import atexit, gc, sys\n"
    "atexit.register(lambda: print('collector', gc.isenabled(), gc.get_freeze_count() > 0, gc.get_threshold()[0],"
    " flush=True))\n"
    "from tether.cli import main\n"
    "main(sys.argv[1:])\n"
)


def test_cli_starts_without_the_collector_and_a_run_turns_it_on_once_open(cli: Any, project: Path) -> None:
    short = subprocess.run(
        [sys.executable, "-c", _REPORT, "--version"], env=cli.env, capture_output=True, text=True, timeout=60
    )
    assert short.returncode == 0, short.stderr
    # a short command ends before any collection was needed, and with Python's own young generation
    assert "collector False False " in short.stdout and f" {_common.YOUNG}" not in short.stdout
    model = cli.script([{"text": "done"}])
    argv = [sys.executable, "-c", _REPORT, "run", "go", "--model", model, "--dir", str(project)]
    run = subprocess.run(argv, env=cli.env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert f"collector True True {_common.YOUNG}" in run.stdout  # start-up frozen, later objects collected
