"""``tether serve`` as a user starts it: the URL and the token printed once, the token file 0600, a warning for a
non-loopback host, a wildcard origin refused, a prompt that runs, the token never written again, and a service
manager's SIGTERM stopping it in order (a second one at once)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.client import ApiError, Client

from ..telemetry import conftest as telemetry
from ..telemetry.conftest import Collector

collector = telemetry.collector  # tests/telemetry's OTLP/HTTP receiver on 127.0.0.1, as a fixture here
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


def stored_tool_parts(data_dir: Path) -> list[dict[str, Any]]:
    """The tool parts as the store holds them, read without opening a runtime (which would recover them), once the
    process that wrote them has released the store (no owner row left)."""
    with contextlib.closing(sqlite3.connect(f"file:{data_dir / 'tether.db'}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT data FROM parts WHERE type = 'tool'").fetchall()
        owners = db.execute("SELECT count(*) FROM owners").fetchone()[0]
    assert owners == 0, "the store's owner row was not released"
    return [json.loads(row[0]) for row in rows]


def _start_a_sleeping_call(tmp: Path, telemetry: dict[str, Any]) -> tuple[Served, str]:
    """``tether serve`` with a turn whose bash call is running (a 60 s sleep); the session id."""
    script = tmp / "sleep.json"
    command = {"command": "sleep 60", "description": "wait"}
    script.write_text(
        json.dumps([{"tool_calls": [{"name": "bash", "arguments": command}]}, {"text": "slept"}])
    )
    (tmp / "config").mkdir(exist_ok=True)
    config = {"permission": {"bash": "allow"}, "telemetry": telemetry}
    (tmp / "config" / "tether.json").write_text(json.dumps(config))
    server = Served(tmp, "--model", f"scripted:{script}")
    with Client(server.url, server.token) as api:
        session = api.create_session()["id"]
        with api.events(session=session, read_timeout=30) as events:
            api.prompt(session, "wait a minute")
            for event in events:
                part = event.data.get("part") or {}
                if part.get("tool") == "bash" and part.get("state") == "running":
                    break
    return server, session


def test_sigterm_stops_in_order_the_running_call_is_recorded_aborted_and_its_spans_are_exported(
    tmp_path: Path,
    collector: Collector,
) -> None:
    server, session = _start_a_sleeping_call(tmp_path, {"otlp_endpoint": collector.endpoint})
    try:
        server.process.send_signal(signal.SIGTERM)
        _, rest = server.process.communicate(timeout=30)  # the bound: STOP_GRACE is 10 s, the sleep 60 s
    finally:
        if server.process.poll() is None:
            server.process.kill()
    assert server.process.returncode == 0, rest
    assert "SIGTERM, stopping" in rest and "tether serve: stopped" in rest
    [part] = stored_tool_parts(tmp_path / "data")
    assert part["state"] == "error" and part["error_kind"] == "aborted" and part["interrupted"]
    spans = {str(s["name"]): s for s in collector.spans()}
    assert {"invoke_agent build", "execute_tool bash"} <= set(spans)
    call = spans["execute_tool bash"]["attributes"]
    assert isinstance(call, dict) and call["tether.tool.error_kind"] == "aborted"
    assert spans["invoke_agent build"]["attributes"]["gen_ai.conversation.id"] == session  # type: ignore[index]


def test_a_second_sigterm_while_stopping_exits_at_once(tmp_path: Path) -> None:
    # a collector that takes the connection and never answers holds the last flush for its minute-long timeout
    with socket.socket() as hanging:
        hanging.bind(("127.0.0.1", 0))
        hanging.listen(8)
        endpoint = f"http://127.0.0.1:{hanging.getsockname()[1]}/v1/traces"
        server, _ = _start_a_sleeping_call(tmp_path, {"otlp_endpoint": endpoint, "timeout": 60_000})
        try:
            assert server.process.stderr is not None
            server.process.send_signal(signal.SIGTERM)
            seen = ""
            # without the second signal the stop would take a minute (the flush's timeout): communicate would time out
            for line in server.process.stderr:
                seen += line
                if "stopping" in line:
                    break
            server.process.send_signal(signal.SIGTERM)
            _, rest = server.process.communicate(timeout=30)
        finally:
            if server.process.poll() is None:
                server.process.kill()
    assert server.process.returncode == 130, seen + rest
    assert "SIGTERM again, exiting at once" in rest


def test_a_stop_that_does_not_end_is_cut_by_the_grace_deadline(tmp_path: Path) -> None:
    # the helper serve and mcp serve stop through, with a short grace and a stop that never ends
    probe = (
        "import anyio, os, signal\n"
        "from tether.cli._stop import stop_on_signals\n"
        "async def main():\n"
        "    async with stop_on_signals('probe', grace=0.5) as stop:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        await stop.event.wait()\n"
        "        await anyio.sleep_forever()\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, done.stderr
    assert "probe: SIGTERM, stopping" in done.stderr
    assert "probe: not stopped within 0.5 s, exiting at once" in done.stderr
