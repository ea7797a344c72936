"""docs/temporal.md "Operating it", followed step by step on one machine: two data directories stand for the two
hosts, which share one PostgreSQL store (``TETHER_STORE_URL``) and one key (``TETHER_TEMPORAL_KEY``).

Two hosts: ``tether worker`` on each, ``tether run --temporal`` from a third place, ``tether sessions --owners``
lists both workers. A worker crash: the worker running the turn's call is SIGKILLed; the follower keeps following,
the turn finishes on the other host, the call is reported interrupted, and the dead store is gone from the owners.
An upgrade: the surviving worker is restarted (SIGTERM, as ``systemctl restart`` does) and the next turn of the
session runs on it. (The docs use a real model; the test a script, with ``--allow-test-models``.)
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest


def tether(*args: str) -> list[str]:
    return [sys.executable, "-m", "tether.cli", *args]


@contextmanager
def host_worker(
    target: str, queue: str, project: Path, env: dict[str, str]
) -> Iterator[subprocess.Popen[str]]:
    log = (Path(env["TETHER_DATA_DIR"]) / "worker.log").open("a")
    process = subprocess.Popen(
        tether("worker", "--temporal", target, "--task-queue", queue, "--dir", str(project), "--allow-test-models"),
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while "serving task queue" not in Path(log.name).read_text():  # the worker says so once it polls
            assert process.poll() is None, Path(log.name).read_text()
            assert time.monotonic() < deadline, "the worker never served its queue"
            time.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(60)
        log.close()


def owners(env: dict[str, str]) -> list[dict[str, object]]:
    done = subprocess.run(
        tether("sessions", "--owners", "--json"), env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def interrupted(value: object) -> bool:
    """Whether the ``session show --json`` document holds a part marked ``interrupted``."""
    if isinstance(value, dict):
        return value.get("interrupted") is True or any(interrupted(v) for v in value.values())
    if isinstance(value, list):
        return any(interrupted(v) for v in value)
    return False


def test_two_hosts_a_worker_crash_and_an_upgrade_as_the_docs_walk_through(
    temporal_server: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = request.getfixturevalue("postgres").database()
    project = tmp_path / "srv-app"
    project.mkdir()
    config = tmp_path / "config"
    config.mkdir()
    (config / "tether.json").write_text(json.dumps({"permission": {"bash": "allow"}}))
    base = {k: v for k, v in os.environ.items() if k not in ("TETHER_TEMPORAL_FAULT", "TETHER_PERMISSION")}
    key = secrets.token_hex(32)
    monkeypatch.setenv("TETHER_TEMPORAL_KEY", key)  # the hosts' secret store (and what the turns replay with)
    shared = {**base, "TETHER_STORE_URL": url, "TETHER_TEMPORAL_KEY": key, "NO_COLOR": "1"}
    shared["TETHER_CONFIG_DIR"] = str(config)
    hosts = []
    for name in ("app-1", "app-2", "laptop"):
        data = tmp_path / name
        data.mkdir(mode=0o700)
        hosts.append({**shared, "TETHER_DATA_DIR": str(data)})
    app1, app2, laptop = hosts
    queue = f"q-{uuid.uuid4().hex}"
    wait = "touch started; while [ ! -f release ]; do sleep 0.1; done; echo done"
    call = {"name": "bash", "arguments": {"command": wait, "description": "wait for the test"}}
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [call]}, {"text": "Finished."}]))
    with ExitStack() as stack:
        workers = {
            name: stack.enter_context(host_worker(temporal_server, queue, project, env))
            for name, env in (("app-1", app1), ("app-2", app2))
        }
        # two hosts: both workers' stores are owners of the one database
        listed = {row["pid"] for row in owners(laptop) if not row["this"]}
        assert {p.pid for p in workers.values()} <= listed
        follower = subprocess.Popen(
            tether("run", "--temporal", temporal_server, "--task-queue", queue, "--model", f"scripted:{script}",
                   "--dir", str(project), "fix the failing test"),
            env=laptop, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            # a worker crash: the worker running the call (its store wrote the running part) dies
            wait_for(project / "started")
            [pid] = [row["pid"] for row in owners(laptop) if row["unfinished"] and not row["this"]]
            [crashed] = [name for name, p in workers.items() if p.pid == pid]
            os.kill(pid, signal.SIGKILL)
            workers[crashed].wait(30)
            (project / "release").touch()
            out, err = follower.communicate(timeout=180)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.communicate()
        assert follower.returncode == 0, err
        assert "Finished." in out and "✗ bash: Tool execution interrupted" in err and "Traceback" not in err
        session = re.search(r"session (ses_\w+)", err)
        assert session is not None, err
        alive = [row["pid"] for row in owners(laptop) if not row["this"]]
        assert pid not in alive and workers["app-2" if crashed == "app-1" else "app-1"].pid in alive
        shown = subprocess.run(
            tether("session", "show", session.group(1), "--json"), env=laptop, capture_output=True, text=True
        )
        assert shown.returncode == 0 and interrupted(json.loads(shown.stdout)), shown.stderr
        # an upgrade: the surviving host restarts its worker (SIGTERM, in order); the session's next turn runs on it
        survivor = "app-2" if crashed == "app-1" else "app-1"
        workers[survivor].terminate()
        assert workers[survivor].wait(60) == 0
        stack.enter_context(
            host_worker(temporal_server, queue, project, app1 if survivor == "app-1" else app2)
        )
        script.write_text(
            json.dumps([{"text": "Upgraded."}] * 10)
        )  # whatever step the session's history is at
        again = subprocess.run(
            tether("run", "--temporal", temporal_server, "--task-queue", queue, "--model", f"scripted:{script}",
                   "--dir", str(project), "--session", session.group(1), "go on"),
            env=laptop, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert "Upgraded." in again.stdout
