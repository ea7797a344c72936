"""``tether doctor`` and ``--explain bash`` show the sandbox that holds commands here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tether.sandbox import detect
from tether.sandbox._seccomp import supported as seccomp_supported


def user_config(cli: Any, config: dict[str, Any]) -> None:
    path = cli.tmp / "config" / "tether.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config), encoding="utf-8")


def test_doctor_reports_the_mechanism_roots_network_rg_and_keys(cli: Any, project: Path) -> None:
    result = cli.run("doctor", "--dir", str(project))
    assert result.code == 0, result.output
    mechanism = detect("auto").mechanism
    assert {"bwrap": "sandbox: bubblewrap", "landlock": "sandbox: Landlock", "none": "sandbox: none"}[
        mechanism
    ] in result.stdout
    assert f"writable:  {project.resolve()}" in result.stdout or mechanism == "none"
    assert "rg: " in result.stdout and "provider openai: key missing (OPENAI_API_KEY)" in result.stdout
    data = json.loads(cli.run("doctor", "--json", "--dir", str(project)).stdout)
    assert data["ready"] is True and data["sandbox"]["mechanism"] == mechanism
    assert not (project / ".tether").exists()  # doctor only looks
    held = mechanism != "none" and seccomp_supported()
    assert data["sandbox"]["unix_sockets"] is not held
    assert ("unix sockets: refused (seccomp" in result.stdout) is held
    user_config(cli, {"sandbox": {"unix_sockets": True}})
    assert "unix sockets: allowed" in cli.run("doctor", "--dir", str(project)).stdout


def test_doctor_fails_when_a_required_sandbox_is_off(cli: Any, project: Path) -> None:
    user_config(cli, {"sandbox": {"mode": "off", "required": True}})
    result = cli.run("doctor", "--dir", str(project))
    assert result.code == 1
    assert "NOT READY" in result.stdout and "sandbox.mode is off" in result.stdout
    assert "required but unavailable" in result.stdout


def test_explain_bash_shows_the_sandbox_that_would_hold_the_command(cli: Any, project: Path) -> None:
    result = cli.run("permissions", "--explain", "bash", "make", "--dir", str(project))
    assert result.code == 0, result.output
    if detect("auto").mechanism == "bwrap":
        assert f"sandbox: bwrap; network proxy; writable: {project.resolve()}" in result.stdout
    user_config(cli, {"sandbox": {"mode": "off"}})
    result = cli.run("permissions", "--explain", "bash", "make", "--dir", str(project))
    assert "sandbox: none, the command would run unconfined" in result.stdout
