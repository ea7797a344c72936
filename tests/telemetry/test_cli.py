"""The ``tether`` command with telemetry: ``run --otel`` and config ``telemetry`` against a real OTLP/HTTP receiver,
a project that may not choose where traces go, ``--log-format json``. Each run is a real child process with its own
data and config directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..cli.conftest import Cli
from .conftest import Collector


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """``tests/cli``'s child-process driver, with no OpenTelemetry or logging settings of the machine's."""
    driver = Cli(tmp_path)
    for name in list(driver.env):
        if name.startswith(("OTEL_", "TETHER_OTEL", "TETHER_LOG")):
            del driver.env[name]
    return driver


def user_config(cli: Cli, data: dict[str, Any]) -> None:
    path = cli.tmp / "config" / "tether.json"  # TETHER_CONFIG_DIR of the driver
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


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
    cli.env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = collector.endpoint
    done = cli.run("run", "look", "--model", turn(cli), "--dir", str(project), "--otel")
    assert done.code == 0, done.stderr
    names = sorted(str(s["name"]) for s in collector.spans())
    assert names == ["chat script.json", "chat script.json", "execute_tool read", "invoke_agent build"]


def test_the_users_config_endpoint_exports_without_the_flag(
    cli: Cli, project: Path, collector: Collector
) -> None:
    # written as $OTEL_EXPORTER_OTLP_ENDPOINT is, without the traces path: tether adds it
    base = collector.endpoint.removesuffix("/v1/traces")
    user_config(cli, {"telemetry": {"otlp_endpoint": base, "service_name": "ci-agent"}})
    done = cli.run("run", "look", "--model", turn(cli), "--dir", str(project))
    assert done.code == 0, done.stderr
    spans = collector.spans()
    assert len(spans) == 4 and {s["service"] for s in spans} == {"ci-agent"}
    assert set(collector.paths) == {"/v1/traces"}


def test_an_untrusted_project_cannot_send_traces_anywhere(
    cli: Cli, project: Path, collector: Collector
) -> None:
    # A cloned repository names an endpoint (and turns content on would be the next step of the attack): ignored.
    (project / ".tether").mkdir()
    (project / ".tether" / "tether.json").write_text(
        json.dumps({"telemetry": {"otlp_endpoint": collector.endpoint}}), encoding="utf-8"
    )
    done = cli.run("run", "look", "--model", turn(cli), "--dir", str(project), "--deny-asks")
    assert done.code == 0, done.stderr
    assert "telemetry" in done.stderr  # the notice of what the project set but may not
    assert collector.requests == []


def test_run_otel_with_nothing_listening_still_succeeds(cli: Cli, project: Path, closed_port: int) -> None:
    # the export's first attempt (refused at once) logs; 2 s is the bound for it to run at all, in a thread of a
    # process that exits when shutdown stops waiting (300 ms lost the record to a slow thread): it retries once
    user_config(
        cli, {"telemetry": {"otlp_endpoint": f"http://127.0.0.1:{closed_port}/v1/traces", "timeout": 2000}}
    )
    done = cli.run(
        "--log-format", "json", "run", "look", "--model", turn(cli), "--dir", str(project), "--format", "json"
    )
    assert done.code == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events[-2:]] == ["done", "result"]
    # the failed export is a log record, and with --log-format json every stderr line is one JSON object
    records = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert records and all({"ts", "level", "logger", "message"} <= set(r) for r in records)
    assert any(r["logger"].startswith("opentelemetry.exporter") for r in records)


def test_a_bad_log_format_is_a_usage_error(cli: Cli) -> None:
    done = cli.run("--log-format", "yaml", "sessions")
    assert done.code == 2
    assert "Unknown log format 'yaml'" in done.stderr
    cli.env["TETHER_LOG_LEVEL"] = "LOUD"
    done = cli.run("sessions")
    assert done.code == 2 and "Unknown log level 'LOUD'" in done.stderr


def test_run_otel_without_the_extra_says_what_to_install(cli: Cli, project: Path) -> None:
    # The SDK missing (as without tether[otel]): its import fails, the run stops before the turn with exit code 2.
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['opentelemetry.sdk.trace'] = None; from tether.cli import main; "
        f"sys.argv = ['tether', 'run', 'look', '--model', {turn(cli)!r}, '--dir', {str(project)!r}, '--otel']; main()"
    )
    env = {**cli.env, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "pip install 'tether[otel]'" in done.stderr


def test_review3_otel_without_an_endpoint_refuses_instead_of_sending_to_localhost(
    cli: Cli, project: Path
) -> None:
    # The SDK's fallback is http://localhost:4318, a port any local user may bind to receive the traces.
    done = cli.run("run", "look", "--model", turn(cli), "--dir", str(project), "--otel")
    assert done.code == 2, done.stderr
    assert "telemetry.otlp_endpoint" in done.stderr and "OTEL_EXPORTER_OTLP_ENDPOINT" in done.stderr
    assert cli.run("sessions", "--all").stdout.startswith("No sessions")  # nothing ran
