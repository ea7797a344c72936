"""``tether serve`` as a user starts it: the URL and the token printed once, the token file 0600, a warning for a
non-loopback host, a wildcard origin refused, a prompt that runs, and the token never written again."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.client import ApiError, Client

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scripted_model.json"


def _env(tmp: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "TETHER_DATA_DIR": str(tmp / "data"),
        "TETHER_CONFIG_DIR": str(tmp / "config"),
        "XDG_CONFIG_HOME": str(tmp / "xdg"),
        "NO_COLOR": "1",
        "COLUMNS": "300",
    }
    env.pop("TETHER_SERVER_TOKEN", None)
    return env


class Served:
    def __init__(self, tmp: Path, *args: str) -> None:
        project = tmp / "project"
        project.mkdir(exist_ok=True)
        (project / "notes.txt").write_text("alpha\n")
        self.tmp = tmp
        self.project = project
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tether.cli", "serve", "--port", "0", "--dir", str(project), *args],
            env=_env(tmp),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stderr is not None
        self.head: list[str] = []
        for line in self.process.stderr:  # the start-up lines (each read waits on output, capped by the test)
            self.head.append(line)
            if line.startswith("  (token stored") or line.startswith("token: from"):
                break
        text = "".join(self.head)
        found = re.search(r"tether serve: (http://\S+)", text)
        assert found, text
        self.url = found.group(1)
        token = re.search(r"^token: (\S+)$", text, re.M)
        assert token, text
        self.token = token.group(1)

    def stop(self) -> str:
        self.process.send_signal(signal.SIGINT)
        _, rest = self.process.communicate(timeout=30)
        return rest


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path, "--model", f"scripted:{EXAMPLE}")
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.communicate(timeout=30)


def test_serve_prints_the_token_once_stores_it_privately_and_never_logs_it(served: Served) -> None:
    head = "".join(served.head)
    assert f"{served.url}/#token={served.token}" in head  # the inspector link carries it in the fragment only
    path = served.tmp / "data" / "server.token"
    assert path.read_text().strip() == served.token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with Client(served.url, served.token) as api:
        session = api.create_session()
        with api.events(session=session["id"], read_timeout=30) as events:
            api.prompt(session["id"], "what do the notes say?")
            for event in events:
                if event.type == "status" and event.data["status"] == "idle":
                    break
        texts = [p["text"] for m in api.messages(session["id"]) for p in m["parts"] if p["type"] == "text"]
        assert "The notes say alpha and beta." in texts
        with pytest.raises(ApiError) as scripted:
            api.prompt(session["id"], "again", model=f"scripted:{EXAMPLE}")
        assert scripted.value.status == 400  # a client may not make the server read a file as a script
    with Client(served.url, "wrong-token-but-long-enough") as stranger, pytest.raises(ApiError) as refused:
        stranger.sessions()
    assert refused.value.status == 401
    rest = served.stop()
    assert served.token not in rest


def test_serve_warns_when_it_listens_beyond_loopback(tmp_path: Path) -> None:
    server = Served(tmp_path, "--host", "0.0.0.0")
    try:
        assert "warning: serving on 0.0.0.0" in "".join(server.head)
    finally:
        server.stop()


def test_serve_refuses_a_wildcard_origin_before_listening(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "serve", "--port", "0", "--dir", str(tmp_path / "project"),
         "--cors-origin", "*"],
        env=_env(tmp_path), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0 and "wildcard" in done.stderr
    assert not (tmp_path / "data" / "server.token").exists()
