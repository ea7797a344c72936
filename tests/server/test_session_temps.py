"""A server is a long-running runtime: deleting a session removes its sandbox temp directory at once, not when the
server stops."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tether.client import Client
from tether.config import Config
from tether.rules import Rule
from tether.sandbox import detect
from tether.testing import tool_call

from .conftest import Live, start

pytestmark = pytest.mark.skipif(
    detect("auto").mechanism != "bwrap", reason=f"bubblewrap cannot run here: {detect('auto').reasons}"
)


def scratch_session(live: Live, api: Client) -> str:
    """A session whose one bash call wrote a file in its /tmp (the sandbox's session temp directory)."""
    session = api.create_session()
    live.script([tool_call("bash", {"command": "touch /tmp/scratch", "description": "scratch"})], ["ok"])
    stream = api.events(session=session["id"], read_timeout=30)
    api.prompt(session["id"], "make a scratch file")
    for event in stream:
        if event.type == "status" and event.data["status"] == "idle":
            break
    stream.close()
    return session["id"]


def test_deleting_a_session_removes_its_temp_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "tmp"
    base.mkdir()
    os.chmod(base, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(base))  # the server's runtime runs in this process
    parent = base / f"tether-sandbox-{os.getuid()}"
    # /tmp is not the runtime's temp directory here (``base`` is): its paths would ask external_directory
    served = start(tmp_path, config=Config(permission=(Rule("external_directory", "*", "allow"),)))
    live = next(served)
    try:
        with live.client() as api:
            gone, kept = scratch_session(live, api), scratch_session(live, api)
            assert (parent / gone / "scratch").is_file() and (parent / kept / "scratch").is_file()
            assert api.delete(gone) == [gone]
            assert not (parent / gone).exists()
            assert (
                parent / kept / "scratch"
            ).is_file()  # another session's directory stays while the server runs
    finally:
        served.close()
    assert not (parent / kept).exists()  # and goes when the server stops
