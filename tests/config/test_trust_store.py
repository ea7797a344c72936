"""The trust store: exact project roots (symlinks resolved), one 0600 file written whole."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tether.config import TRUST_FILE, TrustStore
from tether.errors import ConfigError


@pytest.fixture
def store(tmp_path: Path) -> TrustStore:
    return TrustStore(tmp_path / "data")


def test_trusting_a_project_trusts_exactly_that_root(store: TrustStore, tmp_path: Path) -> None:
    parent = tmp_path / "src"
    child = parent / "cloned"
    child.mkdir(parents=True)
    sibling = tmp_path / "src-evil"
    sibling.mkdir()
    store.trust(parent)
    assert store.is_trusted(parent)
    assert not store.is_trusted(child)
    assert not store.is_trusted(sibling)
    assert store.trusted() == (parent.resolve(),)


def test_a_symlink_to_a_trusted_project_is_that_project(store: TrustStore, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    store.trust(link)
    assert store.trusted() == (real.resolve(),)
    assert store.is_trusted(real)


def test_trust_list_remove_round_trip(store: TrustStore, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    store.trust(a)
    store.trust(b)
    store.trust(a)
    assert store.trusted() == (a.resolve(), b.resolve())
    assert store.remove(a)
    assert not store.remove(a)
    assert store.trusted() == (b.resolve(),)
    b.rmdir()  # a project deleted since can still be removed by its path
    assert store.remove(b)
    assert store.trusted() == ()


def test_the_file_is_private_and_written_whole(store: TrustStore, tmp_path: Path) -> None:
    store.trust(tmp_path)
    assert store.path.name == TRUST_FILE
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    # no temporary file left behind; the lock file beside the store is empty and stays
    assert sorted(p.name for p in store.path.parent.iterdir()) == [TRUST_FILE, TRUST_FILE + ".lock"]


def test_a_declined_project_is_remembered_until_trusted(store: TrustStore, tmp_path: Path) -> None:
    store.decline(tmp_path)
    assert store.declined(tmp_path)
    assert not store.is_trusted(tmp_path)
    store.trust(tmp_path)
    assert not store.declined(tmp_path)
    assert store.is_trusted(tmp_path)


def test_a_broken_trust_file_is_a_config_error_naming_it(store: TrustStore, tmp_path: Path) -> None:
    store.path.parent.mkdir(parents=True)
    store.path.write_text('{"trusted": "/"}', encoding="utf-8")
    with pytest.raises(ConfigError, match=TRUST_FILE):
        store.is_trusted(tmp_path)


def test_two_processes_trusting_at_once_lose_no_project(tmp_path: Path) -> None:
    import subprocess
    import sys

    data = tmp_path / "data"
    projects = [tmp_path / f"p{i}" for i in range(40)]
    for project in projects:
        project.mkdir()
    script = (
        "import sys\n"
        "from tether.config import TrustStore\n"
        "store = TrustStore(sys.argv[1])\n"
        "for p in sys.argv[2:]:\n"
        "    store.trust(p)\n"
    )
    halves = [projects[0::2], projects[1::2]]
    procs = [subprocess.Popen([sys.executable, "-c", script, str(data), *map(str, half)]) for half in halves]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    assert set(TrustStore(data).trusted()) == {p.resolve() for p in projects}
