"""The network of a sandboxed bash call, probed for real against a canary server on the machine's loopback.

Each probe is a bash tool call under bubblewrap with the network ``proxy`` (the default): curl and Python's urllib
through the proxy variables (``NO_PROXY`` cleared: it names the sandbox's own loopback), the same clients directly,
``/dev/tcp``, a raw socket, and SOCKS5 (curl's ``--socks5-hostname`` and a hand-written client). With ``network``
denied nothing reaches the canary; allowed for its address, the proxied clients reach it (the decision recorded on
the call) while direct sockets still reach nothing; an "always" in a real turn saves the destination.

Every test here fails with the proxy out of the way: ``TETHER_TEST_NETWORK=host pytest tests/sandbox/
test_network_sandbox.py`` runs them with the machine's network (``none`` fails the allowed ones).
"""

from __future__ import annotations

import http.server
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.builtins import BuiltinDeps, builtin_tools
from tether.bus import Bus
from tether.config import Config
from tether.content import text_of
from tether.location import Location
from tether.output import OutputStore
from tether.permissions import Agent, PermissionAsked, PermissionService, SavedApprovals, StaticRules
from tether.rules import Rule
from tether.sandbox import Sandbox, SandboxSettings, detect
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call
from tether.tools import Completed, ToolCall, ToolContext, ToolRegistry
from tether.tools.internal import PermissionRecord

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(detect("bwrap").mechanism != "bwrap", reason="the network proxy needs bubblewrap"),
]

NETWORK: Any = os.environ.get("TETHER_TEST_NETWORK", "proxy")
TMP = Path(os.path.realpath(tempfile.gettempdir()))
CURL = shutil.which("curl") is not None
VIA = "NO_PROXY= no_proxy= "  # through the proxy: NO_PROXY names the sandbox's own loopback

URLLIB = "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:{port}/{path}', timeout=10).read())\""
SOCKS5 = (
    "python3 -c \"import os, socket; h, p = os.environ['TETHER_PROXY'].split(':'); s = socket.create_connection((h, "
    "int(p)), 10); s.sendall(b'\\x05\\x01\\x00'); assert s.recv(2) == b'\\x05\\x00'; s.sendall(b'\\x05\\x01\\x00\\x01"
    "\\x7f\\x00\\x00\\x01' + ({port}).to_bytes(2, 'big')); r = s.recv(10); print('reply', r[1]); r[1] == 0 and "
    "(s.sendall(b'GET /{path} HTTP/1.0\\r\\n\\r\\n'), print(s.recv(1000)))\""
)
DEV_TCP = "exec 3<>/dev/tcp/127.0.0.1/{port}; printf 'GET /{path} HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3"
RAW = (
    "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), 5); "
    "s.sendall(b'GET /{path} HTTP/1.0\\r\\n\\r\\n'); print(s.recv(100))\""
)
CURL_VIA = VIA + "curl -sS --max-time 10 http://127.0.0.1:{port}/{path}"
CURL_DIRECT = "curl -sS --max-time 10 http://127.0.0.1:{port}/{path}"
CURL_SOCKS = VIA + 'curl -sS --max-time 10 --socks5-hostname "$TETHER_PROXY" http://127.0.0.1:{port}/{path}'

PROXIED = {"urllib-via": VIA + URLLIB, "socks5": SOCKS5}
DIRECT = {"urllib-direct": URLLIB, "devtcp": DEV_TCP, "raw": RAW}
if CURL:
    PROXIED |= {"curl-via": CURL_VIA, "curl-socks": CURL_SOCKS}
    DIRECT |= {"curl-direct": CURL_DIRECT}


@pytest.fixture
def canary() -> Iterator[tuple[int, list[str]]]:
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "7")
            self.end_headers()
            self.wfile.write(b"reached")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class Harness:
    """The bash tool under bubblewrap with the real permission service: the rules are the test's."""

    def __init__(
        self,
        root: Path,
        out: Path,
        saved: SavedApprovals,
        rules: list[tuple[str, str, str]],
        shell: str | None = None,
    ) -> None:
        agent = Agent(name="build", rules=tuple(Rule(*r) for r in rules))  # type: ignore[arg-type]
        self.service = PermissionService(
            bus=Bus(), saved=saved, resolve=StaticRules(project="p", agent=agent)
        )
        sandbox = Sandbox.make(SandboxSettings(mode="bwrap", network=NETWORK), detect("bwrap"), TMP, ())
        deps = BuiltinDeps(
            location=Location(root),
            permissions=self.service,
            output=OutputStore(out),
            sandbox=sandbox,
            shell=shell,
        )
        self.registry = ToolRegistry(output=OutputStore(out))
        self.registry.register(builtin_tools(deps))
        self.records: dict[str, list[PermissionRecord]] = {}

    async def bash(self, command: str) -> str:
        call_id = f"call_{len(self.records)}"
        records = self.records[call_id] = []
        ctx = ToolContext(
            session_id="ses_net",
            agent="build",
            message_id="msg_1",
            call_id=call_id,
            record_permission=records.append,
        )
        with anyio.fail_after(120):
            outcome = await self.registry.materialize(rules=[]).settle(
                ToolCall(call_id=call_id, name="bash", input={"command": command}), ctx
            )
        return text_of(outcome.content) if isinstance(outcome, Completed) else outcome.error


@pytest.fixture
async def saved(tmp_path: Path) -> Any:
    async with SavedApprovals(tmp_path / "saved.db") as approvals:
        yield approvals


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def test_with_network_denied_no_probe_reaches_the_canary(
    project: Path, tmp_path: Path, saved: SavedApprovals, canary: tuple[int, list[str]]
) -> None:
    port, hits = canary
    harness = Harness(project, tmp_path / "out", saved, [("*", "*", "allow"), ("network", "*", "deny")])
    outputs = {
        name: await harness.bash(probe.format(port=port, path=name))
        for name, probe in (PROXIED | DIRECT).items()
    }
    assert hits == []
    refused = f"[tether's network proxy refused: 127.0.0.1:{port} (denied by the permission rules)."
    for name in PROXIED:
        assert refused in outputs[name], outputs[name]
    if CURL:
        assert (
            f"tether: network access to 127.0.0.1:{port} is denied" in outputs["curl-via"]
            or "403" in outputs["curl-via"]
        )


async def test_with_the_host_allowed_proxied_clients_reach_it_and_direct_sockets_do_not(
    project: Path, tmp_path: Path, saved: SavedApprovals, canary: tuple[int, list[str]]
) -> None:
    port, hits = canary
    harness = Harness(
        project, tmp_path / "out", saved, [("*", "*", "allow"), ("network", f"127.0.0.1:{port}", "allow")]
    )
    outputs = {
        name: await harness.bash(probe.format(port=port, path=name))
        for name, probe in (PROXIED | DIRECT).items()
    }
    assert sorted(hits) == sorted(f"/{name}" for name in PROXIED), outputs
    for name in PROXIED:
        records = harness.records[f"call_{list(PROXIED | DIRECT).index(name)}"]
        network = [(r.resources, r.effect) for r in records if r.action == "network"]
        assert network == [((f"127.0.0.1:{port}",), "allow")], (name, records)


async def test_a_command_of_offline_programs_runs_without_the_proxy(
    project: Path, tmp_path: Path, saved: SavedApprovals
) -> None:
    harness = Harness(project, tmp_path / "out", saved, [("*", "*", "allow")])
    assert "HTTPS_PROXY" not in await harness.bash(
        "echo start; ls -a; cat /proc/self/environ | tr '\\0' '\\n'"
    )
    assert "HTTPS_PROXY=http://127.0.0.1:" in await harness.bash("env")


async def test_a_command_behind_the_bridge_keeps_its_signals_and_its_status(
    project: Path, tmp_path: Path, saved: SavedApprovals
) -> None:
    # Python ignores SIGPIPE; the bridge execs the shell, which must not inherit that (yes would say "Broken pipe")
    harness = Harness(project, tmp_path / "out", saved, [("*", "*", "allow")])
    output = await harness.bash("printenv TETHER_PROXY >/dev/null && yes | head -c 6")
    assert output.startswith("y\ny\ny\n\nCommand exited with code 0."), output
    # the bridge exits with the command's status, a signal's as 128 + n
    assert (await harness.bash("printenv TETHER_PROXY >/dev/null; exit 7")).endswith(
        "Command exited with code 7."
    )
    killed = await harness.bash("printenv TETHER_PROXY >/dev/null; kill -TERM $$")
    assert killed.endswith("Command exited with code 143."), killed
    # a shell configured by name is looked up on PATH, as bubblewrap would
    named = Harness(project, tmp_path / "out2", saved, [("*", "*", "allow")], shell="bash")
    assert "127.0.0.1:" in await named.bash("printenv TETHER_PROXY")
    missing = Harness(project, tmp_path / "out3", saved, [("*", "*", "allow")], shell="no-such-shell")
    assert "tether sandbox: cannot run no-such-shell: No such file or directory" in await missing.bash(
        "printenv X"
    )


async def test_a_hostile_client_inside_the_sandbox_gets_a_clean_close_and_tether_keeps_working(
    project: Path, tmp_path: Path, saved: SavedApprovals, canary: tuple[int, list[str]]
) -> None:
    port, hits = canary
    harness = Harness(project, tmp_path / "out", saved, [("*", "*", "allow")])
    (project / "hostile.py").write_text(
        "import os, socket\n"
        "host, port = os.environ['TETHER_PROXY'].split(':')\n"
        "for payload in (b'\\x16\\x03\\x01garbage\\r\\n\\r\\n', b'GET http://x/ HTTP/1.1\\r\\nX: ' + b'a' * 100000,"
        " b'\\x05\\x01\\x00\\x05\\x02\\x00\\x01\\x7f\\x00\\x00\\x01\\x00\\x50', bytes(range(256)) * 10):\n"
        "    s = socket.create_connection((host, int(port)), 10)\n"
        "    try:\n"
        "        s.sendall(payload)\n"
        "    except OSError:\n"
        "        pass\n"
        "    s.settimeout(30)\n"
        "    data = b''\n"
        "    while True:\n"
        "        try:\n"
        "            chunk = s.recv(65536)\n"
        "        except OSError:\n"
        "            break\n"
        "        if not chunk:\n"
        "            break\n"
        "        data += chunk\n"
        "    print('answer', data[:12])\n"
    )
    output = await harness.bash(f"python3 hostile.py && {VIA}{URLLIB.format(port=port, path='after')}")
    assert "answer b'HTTP/1.1 400'" in output and "answer b'HTTP/1.1 431'" in output, output
    assert "answer b'\\x05\\x00\\x05\\x07" in output, output
    assert hits == ["/after"]
    assert "reached" in await harness.bash(VIA + URLLIB.format(port=port, path="again"))
    assert hits == ["/after", "/again"]


async def test_an_always_in_a_real_turn_is_recorded_on_the_call_and_saves_the_destination(
    project: Path, tmp_path: Path, canary: tuple[int, list[str]]
) -> None:
    port, hits = canary
    config = Config(data={"sandbox": {"mode": "bwrap", "network": NETWORK}})
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        location = await rt.location(project)
        asked: list[PermissionAsked] = []

        async def always(event: PermissionAsked) -> None:
            asked.append(event)
            await rt.permissions.reply(event.request.id, "always")

        send, receive = anyio.create_memory_object_stream[PermissionAsked](10)
        rt.bus.subscribe(PermissionAsked, send.send_nowait)
        session = await rt.sessions.create(
            location, rules=[("bash", "*", "allow"), ("external_directory", "*", "allow")]
        )
        probe = VIA + URLLIB.format(port=port, path="{path}")
        model = ScriptedModel(
            [
                [tool_call("bash", {"command": probe.format(path="first")}, id="call_first")],
                "one",
                [tool_call("bash", {"command": probe.format(path="second")}, id="call_second")],
                "two",
            ]
        )
        with model, send, receive, anyio.fail_after(120):
            async with anyio.create_task_group() as group:

                async def answer() -> None:
                    async for event in receive:
                        await always(event)

                group.start_soon(answer)
                await session.prompt("fetch", model=model)
                await session.prompt("fetch again", model=model)
                group.cancel_scope.cancel()
        parts = {p.call_id: p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)}
    assert hits == ["/first", "/second"]
    assert [e.request.request.action for e in asked] == ["network"]  # the second call was not asked
    first = [r for r in parts["call_first"].permissions if r["action"] == "network"]
    assert first[-1]["resources"] == [f"127.0.0.1:{port}"] and first[-1]["reply"] == "always", first
    second = [r for r in parts["call_second"].permissions if r["action"] == "network"]
    assert [r["event"] for r in second] == ["permission.decided"], second
    assert second[0]["decision"]["effect"] == "allow"
    assert second[0]["decision"]["verdicts"][0]["source"] == "saved", second
