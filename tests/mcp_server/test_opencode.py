"""OpenCode itself (npm ``opencode-ai``) uses tether as a local MCP server: its model calls tether's ``read``.

OpenCode is driven by the scripted OpenAI-compatible server of ``bench/opencode_peer`` (run here, in a thread, on
127.0.0.1): step 1 calls ``tether_read`` (OpenCode names an MCP tool ``<server>_<tool>``), step 2 ends. The text
OpenCode sends back to the model for that call, read from the scripted server's request log, must be what tether's
read produced; and tether recorded the call in the session ``mcp: opencode``.

OpenCode is installed into ``${XDG_CACHE_HOME:-~/.cache}/opencode-peer`` with npm (once; CI has registry access), as
``bench/opencode_peer/run-opencode.sh`` does. This test never skips: without npm it fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .serve_fixtures.served import Served

OPENCODE_VERSION = "1.18.33"
PEER = Path(__file__).resolve().parents[2] / "bench" / "opencode_peer"


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "opencode-peer"


def _opencode() -> Path:
    """The OpenCode binary, installed with npm into the cache when it is not there yet."""
    cache = _cache()
    binary = cache / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
    installed = cache / "node_modules" / "opencode-ai" / "package.json"
    if not binary.exists() or json.loads(installed.read_text()).get("version") != OPENCODE_VERSION:
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", f"opencode-ai@{OPENCODE_VERSION}"],
            cwd=cache,
            check=True,
            timeout=600,
        )
    assert binary.exists(), f"npm installed opencode-ai@{OPENCODE_VERSION} but {binary} is missing"
    return binary


def _peer_server() -> Any:
    """``bench/opencode_peer/scripted_openai_server.py`` as a module: its server classes and ``opencode_config``."""
    spec = importlib.util.spec_from_file_location(
        "scripted_openai_server", PEER / "scripted_openai_server.py"
    )
    assert spec is not None and spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


peer_server = _peer_server()


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """The scripted chat-completions server in a thread: its port and its request log."""
    module = peer_server
    log = tmp_path / "requests.jsonl"
    script = [{"tool_calls": [{"name": "tether_read", "arguments": {"path": "notes.txt"}}]}, {"text": "done"}]
    handler = type("ScriptedHandler", (module.Handler,), {"script": script, "log": str(log)})
    server = module.Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], log
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def test_opencode_calls_tethers_read_through_mcp(tmp_path: Path, scripted: tuple[int, Path]) -> None:
    opencode = _opencode()
    port, log = scripted
    served = Served(tmp_path)
    (served.project / "notes.txt").write_text("the launch code is 0451\n")
    tether = [sys.executable, "-m", "tether.cli", "mcp", "serve", "--dir", str(served.project)]
    keep = ("TETHER_DATA_DIR", "TETHER_CONFIG_DIR", "XDG_CONFIG_HOME", "NO_COLOR")
    config = {
        **peer_server.opencode_config(port),
        "mcp": {
            "tether": {
                "type": "local",
                "command": tether,
                "environment": {name: served.cli.env[name] for name in keep},
                "timeout": 60000,
            }
        },
    }
    (served.project / "opencode.json").write_text(json.dumps(config))
    home = tmp_path / "home"
    env = {
        **served.cli.env,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "PWD": str(served.project),  # OpenCode takes its directory from $PWD, not from the process's cwd
    }
    run = subprocess.run(
        [str(opencode), "run", "go"],
        cwd=served.project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    requests = [json.loads(line)["body"] for line in log.read_text().splitlines()] if log.exists() else []
    results = [m["content"] for body in requests for m in body.get("messages", []) if m.get("role") == "tool"]
    assert results, (
        f"OpenCode sent no tool result (exit {run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    )
    assert any("1: the launch code is 0451" in json.dumps(r) for r in results), results
    advertised = {t["function"]["name"] for body in requests for t in body.get("tools") or []}
    assert "tether_read" in advertised
    [session] = served.sessions()
    assert session["title"].startswith("mcp: opencode")
    assert [(p["tool"], p["state"]) for p in served.timeline(session["id"])] == [("read", "completed")]
