"""Review 2, hole 4: a server line that is not JSON-RPC is one log line naming the server, never the SDK's
traceback on tether's stderr."""

from __future__ import annotations

from pathlib import Path

from ..cli.conftest import Cli
from .conftest import broken


def test_a_malformed_line_is_one_warning_naming_the_server(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    cli = Cli(tmp_path)
    Cli.configure(project, {"mcp": {"broken": broken(tmp_path / "b")}})
    cli.env["TETHER_TRUST"] = "1"
    result = cli.run("tool", "call", "broken_malformed", "{}", cwd=project)
    assert result.code != 0
    assert "Traceback" not in result.stderr and "Failed to parse JSONRPC" not in result.stderr, result.stderr
    warnings = [
        line for line in result.stderr.splitlines() if line.startswith("MCP server broken wrote a message")
    ]
    assert len(warnings) == 1 and "not JSON-RPC" in warnings[0], result.stderr
