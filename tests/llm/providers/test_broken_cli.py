"""``tether run`` against a broken provider: a clear error, exit 1, no traceback, the error recorded (issue 13 §3).

A real ``tether`` subprocess talks to a real HTTP server on 127.0.0.1 configured as a custom provider in the user's
``tether.json``. Attempts are counted at the server, never timed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ...cli import _forkserver
from ._broken import BrokenServer, body, broken_server, error, hang_up, sse, then_forever

CHUNK = {
    "id": "c1",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}, "finish_reason": None}],
}


class Run:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.project = tmp / "proj"
        self.project.mkdir()
        self.config_dir = tmp / "config"
        self.config_dir.mkdir()
        self.env = {
            **os.environ,
            "TETHER_DATA_DIR": str(tmp / "data"),
            "TETHER_CONFIG_DIR": str(self.config_dir),
            "XDG_CONFIG_HOME": str(tmp / "xdg-config"),
            "NO_COLOR": "1",
            "COLUMNS": "200",
        }
        self.env.pop("TETHER_PERMISSION", None)

    def provider(self, entry: dict[str, Any]) -> None:
        config = {"provider": {"broken": entry}}
        (self.config_dir / "tether.json").write_text(json.dumps(config), encoding="utf-8")

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return _forkserver.tether(*args, env=self.env, cwd=self.project, timeout=120)

    def run(self, server: BrokenServer, **entry: Any) -> subprocess.CompletedProcess[str]:
        self.provider({"api": "openai-chat", "base_url": f"{server.url}/v1", **entry})
        return self("run", "hi", "--model", "broken/m", "--dir", str(self.project))


@pytest.fixture
def tether(tmp_path: Path) -> Run:
    return Run(tmp_path)


def _errors(value: Any) -> list[dict[str, Any]]:
    """Every non-null ``error`` object in a timeline."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "error" and isinstance(item, dict):
                found.append(item)
            else:
                found.extend(_errors(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_errors(item))
    return found


def test_a_malformed_stream_fails_the_run_with_exit_1_and_is_recorded(tether: Run) -> None:
    with broken_server(body(sse(CHUNK) + b"data: {not json\n\n")) as server:
        done = tether.run(server, retry={"max_attempts": 1})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "the turn failed" in done.stderr and "not JSON" in done.stderr
    assert f"{server.url}/v1/chat/completions" in done.stderr
    session_id = done.stderr.split("session ", 1)[1].split()[0]
    shown = tether("session", "show", session_id, "--json")
    (recorded,) = _errors(json.loads(shown.stdout))
    assert recorded["kind"] == "provider" and "not JSON" in recorded["message"]


def test_a_huge_retry_after_is_capped_and_retries_stop_at_max_attempts(tether: Run) -> None:
    with broken_server(error(429, {"error": {"message": "slow down"}}, retry_after="99999999")) as server:
        done = tether.run(server, retry={"max_attempts": 3, "max_retry_after": 0.01})
        assert server.requests == 3
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "slow down" in done.stderr


def test_a_server_that_hangs_up_is_tried_max_attempts_times_no_sdk_retries(tether: Run) -> None:
    with broken_server(hang_up) as server:
        done = tether.run(server, retry={"max_attempts": 2, "max_retry_after": 0})
        assert server.connections == 2
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{server.url}/v1/chat/completions" in done.stderr


def test_the_idle_deadline_ends_the_run_with_a_message_naming_it(tether: Run) -> None:
    with broken_server(then_forever(sse(CHUNK))) as server:
        done = tether.run(server, retry={"max_attempts": 1}, timeouts={"idle": 0.3})
    assert done.returncode == 1, done.stderr
    assert "no stream event for 0.3 s" in done.stderr and "timeouts.idle" in done.stderr
    assert done.stderr.count(server.url) == 1
    assert "Traceback" not in done.stderr


def test_a_custom_provider_without_base_url_is_a_config_error_exit_2(tether: Run) -> None:
    tether.provider({"api": "openai-chat"})
    done = tether("run", "hi", "--model", "broken/m", "--dir", str(tether.project))
    assert done.returncode == 2, done.stderr
    assert "provider.broken.base_url" in done.stderr and "Traceback" not in done.stderr


def test_a_bad_retry_entry_is_a_config_error_naming_the_key(tether: Run) -> None:
    tether.provider({"base_url": "http://127.0.0.1:9/v1", "retry": {"max_attempts": 0}})
    done = tether("run", "hi", "--model", "broken/m", "--dir", str(tether.project))
    assert done.returncode == 2, done.stderr
    assert "provider.broken.retry.max_attempts" in done.stderr
