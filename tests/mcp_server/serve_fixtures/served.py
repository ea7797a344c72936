"""A project served by a real ``tether mcp serve`` subprocess, driven by the official ``mcp`` client.

Each test gets its own data directory, user config directory and project (``tests/cli``'s ``Cli`` environment).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.client.stdio import StdioServerParameters

from mcp import Client

from ...cli.conftest import Cli

URL_LINE = re.compile(r"tether mcp serve: (http://\S+/mcp)")
TOKEN_LINE = re.compile(r"bearer token: (\S+)")


class Served:
    """A temp project, its isolated tether environment, and ways to serve it."""

    def __init__(self, tmp: Path) -> None:
        self.cli = Cli(tmp)
        self.project = tmp / "project"
        self.project.mkdir()
        (tmp / "config").mkdir()

    def user_config(self, data: dict[str, Any]) -> None:
        """Write the user's own ``tether.json`` (trusted, unlike the project's)."""
        (self.cli.tmp / "config" / "tether.json").write_text(json.dumps(data))

    def argv(self, *extra: str) -> list[str]:
        return [sys.executable, "-m", "tether.cli", "mcp", "serve", "--dir", str(self.project), *extra]

    @asynccontextmanager
    async def stdio(
        self,
        *,
        name: str = "pytest-client",
        elicit: Any = None,
        mode: str = "legacy",
        extra: Sequence[str] = (),
    ) -> AsyncIterator[Client]:
        params = StdioServerParameters(command=self.argv()[0], args=self.argv(*extra)[1:], env=self.cli.env)
        client = Client(
            params,
            mode=mode,
            client_info=types.Implementation(name=name, version="1"),
            elicitation_callback=elicit,
        )
        async with client:
            yield client

    def sessions(self) -> list[dict[str, Any]]:
        """The served sessions of the project, newest first."""
        return [
            s
            for s in self.cli.json("sessions", "--dir", str(self.project), "--json")
            if s["kind"] == "tool-call"
        ]

    def timeline(self, session_id: str) -> list[dict[str, Any]]:
        """The tool parts ``tether session show --json`` shows for the session, in order."""
        shown = self.cli.json("session", "show", session_id, "--json")
        return [
            p
            for item in shown["timeline"]
            if item["type"] == "step"
            for p in item["parts"]
            if p["type"] == "tool"
        ]


class HttpServer:
    """``tether mcp serve --http`` as a subprocess: its URL and token, read from its stderr."""

    def __init__(
        self, served: Served, *extra: str, env: dict[str, str] | None = None, token_line: bool = True
    ) -> None:
        self.process = subprocess.Popen(
            served.argv("--http", *extra),
            env=env or served.cli.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr: list[str] = []
        self.url = ""
        self.token = ""
        assert self.process.stderr is not None
        for (
            line
        ) in self.process.stderr:  # the server prints its URL, then its token, before it accepts requests
            self.stderr.append(line)
            if found := URL_LINE.search(line):
                self.url = found.group(1)
            if found := TOKEN_LINE.search(line):
                self.token = found.group(1)
                break
        assert self.url and (self.token or not token_line), "".join(self.stderr)

    def close(self) -> str:
        """Stop the server; what it printed on stderr."""
        self.process.terminate()
        try:
            _, rest = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, rest = self.process.communicate()
        return "".join(self.stderr) + (rest or "")
