"""The ``tether`` command with telemetry: ``run --otel`` and config ``telemetry`` against a real OTLP/HTTP receiver,
a project that may not choose where traces go, ``--log-format json``. Each run is a real child process with its own
data and config directories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import Collector


class Cli:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.config_dir = tmp / "config"
        self.env = {
            **os.environ,
            "TETHER_DATA_DIR": str(tmp / "data"),
            "TETHER_CONFIG_DIR": str(self.config_dir),
            "XDG_CONFIG_HOME": str(tmp / "xdg-config"),
            "NO_COLOR": "1",
        }
        for name in list(self.env):
            if name.startswith(("OTEL_", "TETHER_OTEL", "TETHER_LOG", "TETHER_TRUST", "TETHER_PERMISSION")):
                del self.env[name]

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tether.cli", *args],
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def script(self, steps: list[dict[str, Any]]) -> str:
        path = self.tmp / "script.json"
        path.write_text(json.dumps(steps), encoding="utf-8")
        return f"scripted:{path}"

    def user_config(self, data: dict[str, Any]) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.config_dir / "tether.json").write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\n", encoding="utf-8")
    return root


def turn(cli: Cli) -> str:
    return cli.script(
        [{"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}, {"text": "read it"}]
    )


def test_run_otel_exports_the_turn_to_the_standard_endpoint(
    cli: Cli, project: Path, collector: Collector
) -> None:
    done = cli.run(
        "run", "look", "--model", turn(cli), "--dir", str(project), "--otel",
        env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.endpoint},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = sorted(str(s["name"]) for s in collector.spans())
    assert names == ["chat script.json", "chat script.json", "execute_tool read", "invoke_agent build"]


def test_the_users_config_endpoint_exports_without_the_flag(
    cli: Cli, project: Path, collector: Collector
) -> None:
    cli.user_config({"telemetry": {"otlp_endpoint": collector.endpoint, "service_name": "ci-agent"}})
    done = cli.run("run", "look", "--model", turn(cli), "--dir", str(project))
    assert done.returncode == 0, done.stderr
    spans = collector.spans()
    assert len(spans) == 4 and {s["service"] for s in spans} == {"ci-agent"}


def test_an_untrusted_project_cannot_send_traces_anywhere(
    cli: Cli, project: Path, collector: Collector
) -> None:
    # A cloned repository names an endpoint (and turns content on would be the next step of the attack): ignored.
    (project / ".tether").mkdir()
    (project / ".tether" / "tether.json").write_text(
        json.dumps({"telemetry": {"otlp_endpoint": collector.endpoint}}), encoding="utf-8"
    )
    done = cli.run("run", "look", "--model", turn(cli), "--dir", str(project), "--deny-asks")
    assert done.returncode == 0, done.stderr
    assert "telemetry" in done.stderr  # the notice of what the project set but may not
    assert collector.requests == []


def test_run_otel_with_nothing_listening_still_succeeds(cli: Cli, project: Path, closed_port: int) -> None:
    cli.user_config(
        {"telemetry": {"otlp_endpoint": f"http://127.0.0.1:{closed_port}/v1/traces", "timeout": 300}}
    )
    done = cli.run(
        "--log-format", "json", "run", "look", "--model", turn(cli), "--dir", str(project), "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["type"] == "done"
    # the failed export is a log record, and with --log-format json every stderr line is one JSON object
    records = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert records and all({"ts", "level", "logger", "message"} <= set(r) for r in records)
    assert any(r["logger"].startswith("opentelemetry.exporter") for r in records)


def test_a_bad_log_format_is_a_usage_error(cli: Cli) -> None:
    done = cli.run("--log-format", "yaml", "sessions")
    assert done.returncode == 2
    assert "Unknown log format 'yaml'" in done.stderr
    done = cli.run("sessions", env={"TETHER_LOG_LEVEL": "LOUD"})
    assert done.returncode == 2 and "Unknown log level 'LOUD'" in done.stderr
