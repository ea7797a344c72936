"""Retained outputs are private (a shared ``output_dir`` must not show one user's outputs to another): directories
0700, files 0600 created exclusively without following a symlink; a directory another user owns or may write into
is refused when the store opens; a relative ``output_dir`` is taken from its config file's directory."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tether import Runtime
from tether.config import load_config
from tether.content import Text
from tether.errors import OutputStoreError
from tether.output import OutputStore

pytestmark = pytest.mark.anyio

MALLORY = 65534  # nobody: a real second uid
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")


@pytest.fixture
def open_umask():
    old = os.umask(0)  # the loosest umask: the modes below must come from tether, not from the umask
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_review3_retained_outputs_are_private_whatever_the_umask(tmp_path: Path, open_umask: None) -> None:
    store = OutputStore(tmp_path / "shared" / "out", max_lines=2)
    (path,) = store.bound_sync([Text("secret\n" * 10)], session="ses_abc").output_paths
    top_level = store.retain_text("secret")
    assert mode(tmp_path / "shared" / "out") == 0o700
    assert mode(Path(path).parent) == 0o700
    assert mode(Path(path)) == 0o600 and mode(top_level) == 0o600
    assert Path(path).read_text() == "secret\n" * 10


def test_review3_a_directory_others_may_write_is_refused_at_open(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(
        OutputStoreError, match=r"writable by other users \(mode 777\) without the sticky bit"
    ):
        OutputStore(shared).open_sync()
    with pytest.raises(OutputStoreError, match="chmod 1777"):
        OutputStore(shared).retain_text(
            "secret"
        )  # without open: refused at the first output, nothing written
    assert list(shared.iterdir()) == []
    shared.chmod(0o1777)  # /tmp-like: others may create entries, never replace ours
    OutputStore(shared).open_sync()


@needs_root
def test_review3_another_users_directory_is_refused_at_open(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, MALLORY, MALLORY)
    with pytest.raises(OutputStoreError, match=f"belongs to another user \\(uid {MALLORY}\\)"):
        OutputStore(theirs).open_sync()


@needs_root
def test_review3_a_session_directory_planted_in_a_shared_output_dir_is_not_written(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    loot = tmp_path / "loot"
    loot.mkdir()
    (shared / "ses_victim").symlink_to(loot)  # planted before the victim's first output
    (shared / "ses_other").mkdir()
    os.chown(shared / "ses_other", MALLORY, MALLORY)
    store = OutputStore(shared)
    for session in ("ses_victim", "ses_other"):
        with pytest.raises(OutputStoreError, match="is not a directory of this user's"):
            store.retain_text("secret", session)
    assert list(loot.iterdir()) == [] and list((shared / "ses_other").iterdir()) == []


async def test_review3_a_relative_output_dir_is_taken_from_its_config_files_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    user_file = home / "tether.json"
    user_file.write_text(json.dumps({"output_dir": "outputs"}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_config(user_file=user_file, environ={})
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        assert rt.output.directory == home / "outputs"
        assert (home / "outputs").is_dir() and not (elsewhere / "outputs").exists()


async def test_review3_the_runtime_refuses_an_output_dir_others_may_write(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    config = load_config(user_file=_write(tmp_path / "tether.json", {"output_dir": str(shared)}), environ={})
    with pytest.raises(OutputStoreError, match="Refusing the tool output directory"):
        async with Runtime(data_dir=tmp_path / "data", config=config):
            pass


def _write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value))
    return path
