"""``tether mcp list`` and ``tether mcp tools``, and the trust rule: a cloned repository's servers never start."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ..cli.conftest import Cli
from .conftest import VENV_BIN, broken


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def configure(project: Path, config: dict[str, object]) -> None:
    Cli.configure(project, config)


def trusted_broken(cli: Cli, project: Path, tmp_path: Path) -> None:
    """The project configures the broken server (serving) and the commands trust it."""
    configure(project, {"mcp": {"broken": broken(tmp_path / "b")}})
    cli.env["TETHER_TRUST"] = "1"


def test_mcp_list_shows_each_server_state_and_tools(cli: Cli, project: Path, tmp_path: Path) -> None:
    configure(
        project,
        {
            "mcp": {
                "time": {"type": "local", "command": [str(VENV_BIN / "mcp-server-time")]},
                "gone": {"type": "local", "command": [str(tmp_path / "no-such-program")]},
                "off": {"type": "local", "command": ["x"], "enabled": False},
            }
        },
    )
    cli.env["TETHER_TRUST"] = "1"
    result = cli.run("mcp", "list", "--format", "json", cwd=project)
    assert result.code == 1, result.output  # a server failed
    rows = {row["name"]: row for row in json.loads(result.stdout)["servers"]}
    assert rows["time"]["state"] == "connected" and rows["time"]["tools"] == 2
    assert rows["gone"]["state"] == "failed" and "the command was not found" in rows["gone"]["error"]
    assert rows["off"]["state"] == "disabled"
    table = cli.run("mcp", "list", cwd=project)
    assert "time" in table.stdout and "connected" in table.stdout and "failed" in table.stdout
    tools = cli.run("mcp", "tools", "time", cwd=project)
    assert tools.code == 0, tools.output
    assert "time_get_current_time" in tools.stdout and "get_current_time" in tools.stdout
    assert cli.run("mcp", "tools", "nope", cwd=project).code != 0


@pytest.mark.parametrize("key", ["mcp", "mcpServers"])
def test_an_untrusted_repository_never_starts_its_servers(
    cli: Cli, project: Path, tmp_path: Path, key: str
) -> None:
    canary = tmp_path / "canary"
    # a cloned repository whose server would write a canary (it is also a real server, so trusting it works)
    command = [sys.executable, "-c", f"open({str(canary)!r}, 'w').write('ran')"]
    entry = (
        {"command": command[0], "args": command[1:]}
        if key == "mcpServers"
        else {"type": "local", "command": command}
    )
    configure(project, {key: {"evil": entry}})
    for args in (("mcp", "list"), ("tools",)):
        result = cli.run(*args, cwd=project)
        assert f"ignored {key}" in result.stderr and "not trusted" in result.stderr, result.output
        assert not canary.exists()
    cli.env["TETHER_TRUST"] = (
        "1"  # the same file, trusted: the server starts (the canary proves the test can fail)
    )
    cli.run("mcp", "list", cwd=project)
    assert canary.read_text() == "ran"


def test_tether_tools_lists_mcp_tools_with_their_origin(cli: Cli, project: Path, tmp_path: Path) -> None:
    trusted_broken(cli, project, tmp_path)
    result = cli.run("tools", "--format", "json", cwd=project)
    assert result.code == 0, result.output
    found = json.loads(result.stdout)
    rows = {row["name"]: row for row in found["tools"]}
    assert rows["broken_echo"]["origin"] == "mcp:broken" and rows["broken_echo"]["visible"]
    assert rows["broken___book_meeting_room"]["origin"] == "mcp:broken"


def test_server_instructions_are_in_the_run_system_texts(cli: Cli, project: Path, tmp_path: Path) -> None:
    trusted_broken(cli, project, tmp_path)
    result = cli.run("run", "--show-prompt", "-m", "openai/gpt-5", cwd=project)
    assert result.code == 0, result.output
    assert 'Instructions from the MCP server "broken"' in result.stdout and "Use broken_echo" in result.stdout
