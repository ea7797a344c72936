"""tether's network proxy on its own: real clients on its unix socket, the real permission service, a canary server.

No sandbox here (tests/sandbox/test_network_sandbox.py runs commands through it): each test speaks HTTP or SOCKS5 to
the socket :func:`tether.sandbox._proxy.open_proxy` listens on, as the bridge inside a sandbox would forward it.
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from tether.bus import Bus
from tether.errors import CorrectedError, DeclinedError
from tether.permissions import (
    Agent,
    PermissionAsked,
    PermissionService,
    SavedApprovals,
    StaticRules,
    evaluate_request,
)
from tether.rules import Rule
from tether.sandbox import (
    PROXY_SOCKET,
    Detection,
    NetworkGate,
    ProxySeam,
    Sandbox,
    SandboxSettings,
    build_policy,
    destination_resource,
)
from tether.sandbox._network import may_use_network, normal_host
from tether.sandbox._proxy import MAX_HEAD, open_proxy, proxy_socket
from tether.sandbox._sandbox import BRIDGE_MODULE, SECCOMP_MODULE
from tether.tools import ToolContext
from tether.tools.internal import PermissionRecord

pytestmark = pytest.mark.anyio


class Canary:
    """A server on the machine's loopback that counts what reaches it."""

    def __init__(self) -> None:
        self.hits: list[tuple[str, dict[str, str]]] = []
        canary = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                canary.hits.append((self.path, dict(self.headers)))
                self.send_response(200)
                self.send_header("Content-Length", "7")
                self.end_headers()
                self.wfile.write(b"reached")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]


@pytest.fixture
def canary() -> Iterator[Canary]:
    found = Canary()
    thread = threading.Thread(target=found.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.server.shutdown()
        found.server.server_close()
        thread.join()


class Proxy:
    def __init__(self, socket_path: str, gate: NetworkGate, bus: Bus, service: PermissionService) -> None:
        self.socket = socket_path
        self.gate = gate
        self.bus = bus
        self.service = service
        self.records: list[PermissionRecord] = []

    async def connect(self) -> anyio.abc.SocketStream:
        return await anyio.connect_unix(self.socket)

    async def exchange(self, data: bytes) -> bytes:
        """Send ``data``, read until the proxy closes."""
        async with await self.connect() as stream:
            await stream.send(data)
            return await read_all(stream)


async def read_all(stream: anyio.abc.ByteReceiveStream) -> bytes:
    chunks: list[bytes] = []
    with anyio.fail_after(30):
        try:
            async for chunk in stream:
                chunks.append(chunk)
        except (anyio.BrokenResourceError, ConnectionResetError):
            pass
    return b"".join(chunks)


def service_for(bus: Bus, saved: SavedApprovals, rules: list[tuple[str, str]]) -> PermissionService:
    agent = Agent(name="build", rules=tuple(Rule("network", r, e) for r, e in rules))  # type: ignore[arg-type]
    return PermissionService(bus=bus, saved=saved, resolve=StaticRules(project="p", agent=agent))


@pytest.fixture
async def make_proxy(tmp_path: Path) -> AsyncIterator[Any]:
    async with anyio.create_task_group() as group, SavedApprovals(tmp_path / "saved.db") as saved:
        opened: list[Proxy] = []

        async def make(rules: list[tuple[str, str]]) -> Proxy:
            bus = Bus()
            service = service_for(bus, saved, rules)
            records: list[PermissionRecord] = []
            ctx = ToolContext(
                session_id="ses_net",
                agent="build",
                message_id="msg_1",
                call_id="call_1",
                record_permission=records.append,
            )
            gate = NetworkGate(service, ctx, {"command": "curl"})
            ready = anyio.Event()
            seam: list[str] = []

            async def serve() -> None:
                path = str(proxy_socket(tmp_path))
                async with open_proxy(path, gate):
                    seam.append(path)
                    ready.set()
                    await anyio.sleep_forever()

            group.start_soon(serve)
            await ready.wait()
            proxy = Proxy(seam[0], gate, bus, service)
            proxy.records = records
            opened.append(proxy)
            return proxy

        yield make
        group.cancel_scope.cancel()


async def test_the_socket_is_private_and_gone_after_the_call(tmp_path: Path) -> None:
    path = proxy_socket(tmp_path)
    assert (tmp_path / ".net").stat().st_mode & 0o777 == 0o700
    async with open_proxy(str(path), None):  # type: ignore[arg-type]
        assert path.stat().st_mode & 0o777 == 0o600
    assert not path.exists()
    (tmp_path / ".net").chmod(0o755)
    with pytest.raises(OSError, match="not a private directory"):
        proxy_socket(tmp_path)


# --- resources and rules -------------------------------------------------------------------------------------------


def test_a_destination_is_its_host_for_the_web_ports_and_host_port_otherwise() -> None:
    assert destination_resource("pypi.org", 443) == "pypi.org"
    assert destination_resource("pypi.org", 80) == "pypi.org"
    assert destination_resource("pypi.org", 8080) == "pypi.org:8080"
    assert normal_host("PyPI.org.") == "pypi.org"
    assert normal_host("2130706433") == "127.0.0.1"  # every spelling of an address is the address
    assert normal_host("0.0.0.0") == "127.0.0.1"  # which reaches the loopback
    assert normal_host("[::1]") == "[::1]"
    assert normal_host("::ffff:127.0.0.1") == "127.0.0.1"
    for bad in ("", "a b", "evil.com/x", "a..b", ".x", "x" * 300, "ex\u00e4mple.com"):
        assert normal_host(bad) is None, bad


def test_a_host_rule_allows_the_web_ports_of_that_host_only() -> None:
    rules = [Rule("network", "*", "ask"), Rule("network", "pypi.org", "allow")]  # the last match wins

    def effect(host: str, port: int) -> str:
        return evaluate_request("network", [destination_resource(host, port)], rules).effect

    assert effect("pypi.org", 443) == "allow"
    assert effect("pypi.org", 80) == "allow"
    assert effect("pypi.org", 8080) == "ask"
    assert effect("files.pypi.org", 443) == "ask"
    assert effect("127.0.0.1", 5432) == "ask"


def test_only_a_command_of_offline_programs_goes_without_the_bridge() -> None:
    def may(*commands: tuple[str, str], certain: bool = True) -> bool:
        return may_use_network(commands, certain=certain)

    assert not may(("true", "true"))
    assert not may(("ls", "ls -la"), ("grep", "grep x"), ("git", "git status --short"))
    assert not may()
    assert may(("curl", "curl x"))
    assert may(("ls", "ls"), ("python3", "python3 x.py"))
    assert may(("git", "git fetch"))
    assert may(("git", "git"))
    assert may(("ls", "ls"), certain=False)  # text the analysis cannot know may run anything


# --- HTTP ----------------------------------------------------------------------------------------------------------


async def test_connect_to_an_allowed_destination_tunnels_to_it_and_is_recorded(
    make_proxy: Any, canary: Canary
) -> None:
    proxy: Proxy = await make_proxy([(f"127.0.0.1:{canary.port}", "allow")])
    async with await proxy.connect() as stream:
        await stream.send(f"CONNECT 127.0.0.1:{canary.port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        with anyio.fail_after(30):
            reply = await stream.receive()
        assert reply.startswith(b"HTTP/1.1 200 ")
        await stream.send(b"GET /tunnel HTTP/1.0\r\n\r\n")
        assert (await read_all(stream)).endswith(b"reached")
    assert [hit[0] for hit in canary.hits] == ["/tunnel"]
    assert [(r.action, r.resources, r.effect) for r in proxy.records] == [
        ("network", (f"127.0.0.1:{canary.port}",), "allow")
    ]


async def test_an_absolute_uri_is_forwarded_in_origin_form_without_proxy_headers(
    make_proxy: Any, canary: Canary
) -> None:
    proxy: Proxy = await make_proxy([("*", "allow")])
    request = (
        f"GET http://127.0.0.1:{canary.port}/plain?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{canary.port}\r\n"
        "Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nX-Keep: yes\r\n\r\n"
    )
    reply = await proxy.exchange(request.encode())
    assert reply.startswith(b"HTTP/1.0 200") and reply.endswith(b"reached")
    (path, headers), *_ = canary.hits
    assert path == "/plain?q=1"
    assert headers["X-Keep"] == "yes" and headers["Connection"] == "close"
    assert not any(name.lower().startswith("proxy-") for name in headers)


async def test_a_denied_destination_gets_403_with_the_reason_and_nothing_connects(
    make_proxy: Any, canary: Canary
) -> None:
    proxy: Proxy = await make_proxy([("*", "deny")])
    connect = await proxy.exchange(f"CONNECT 127.0.0.1:{canary.port} HTTP/1.1\r\n\r\n".encode())
    plain = await proxy.exchange(f"GET http://127.0.0.1:{canary.port}/ HTTP/1.1\r\n\r\n".encode())
    for reply in (connect, plain):
        status, _, body = reply.partition(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 403 tether: network access to 127.0.0.1:")
        assert body.startswith(b"tether: network access to") and body.count(b"\n") == 1
    assert canary.hits == []
    # one decision per destination per call: the second connection was not asked again
    assert [r.effect for r in proxy.records] == ["deny"]
    assert proxy.gate.refused == [f"127.0.0.1:{canary.port} (denied by the permission rules)"]


async def test_ipv6_and_default_ports_are_read_and_asked_in_their_canonical_form(make_proxy: Any) -> None:
    proxy: Proxy = await make_proxy([("*", "deny")])
    for request in (
        b"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n",
        b"GET http://[0:0::1]:8080/ HTTP/1.1\r\n\r\n",
        b"GET http://Example.COM./ HTTP/1.1\r\n\r\n",
        b"GET http://2130706433:99/ HTTP/1.1\r\n\r\n",
    ):
        assert (await proxy.exchange(request)).startswith(b"HTTP/1.1 403 "), request
    assert [r.resources[0] for r in proxy.records] == ["[::1]:8080", "example.com", "127.0.0.1:99"]
    assert (await proxy.exchange(b"GET http://127.0.0.1:8o/ HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
    reply = await proxy.exchange(socks_request(socket.inet_pton(socket.AF_INET6, "::1"), 8080))
    assert reply[2:4] == b"\x05\x02"


async def test_a_name_that_resolves_to_loopback_needs_the_address_allowed_too(
    make_proxy: Any, canary: Canary
) -> None:
    port = canary.port
    named_only: Proxy = await make_proxy([("*", "deny"), (f"localhost:{port}", "allow")])
    reply = await named_only.exchange(f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 403 ")
    assert [r.resources[0] for r in named_only.records] == [f"localhost:{port}", f"127.0.0.1:{port}"]
    assert canary.hits == []
    both: Proxy = await make_proxy(
        [("*", "deny"), (f"localhost:{port}", "allow"), (f"127.0.0.1:{port}", "allow")]
    )
    reply = await both.exchange(f"GET http://localhost:{port}/both HTTP/1.1\r\n\r\n".encode())
    assert reply.endswith(b"reached")


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"\x16\x03\x01\x02\x00garbage", b"400"),
        (b"GET /relative HTTP/1.1\r\n\r\n", b"400"),
        (b"GET https://127.0.0.1/ HTTP/1.1\r\n\r\n", b"400"),
        (b"GET http://user:pw@127.0.0.1/ HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT [::1 HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT a b:1 HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT 127.0.0.1:1 HTTP/1.1\r\nno colon\r\n\r\n", b"400"),
        (b"GET http://\xff/ HTTP/1.1\r\n\r\n", b"400"),
        (b"GET http://127.0.0.1/ HTTP/1.1\r\nX: " + b"a" * MAX_HEAD + b"\r\n\r\n", b"431"),
    ],
)
async def test_a_hostile_client_gets_a_clean_refusal_and_the_proxy_keeps_serving(
    make_proxy: Any, canary: Canary, request_bytes: bytes, status: bytes
) -> None:
    proxy: Proxy = await make_proxy([("*", "allow")])
    reply = await proxy.exchange(request_bytes)
    assert reply.split(b" ")[1] == status, reply[:200]
    assert reply.endswith(b"\n") and b"\r\n\r\ntether: " in reply
    assert canary.hits == []
    after = await proxy.exchange(f"GET http://127.0.0.1:{canary.port}/after HTTP/1.1\r\n\r\n".encode())
    assert after.endswith(b"reached")


async def test_a_client_that_says_nothing_and_leaves_ends_its_connection_only(
    make_proxy: Any, canary: Canary
) -> None:
    proxy: Proxy = await make_proxy([("*", "allow")])
    for partial in (b"", b"GET http://127.0.0.1/ HTTP/1.1\r\nHost", b"\x05", b"\x05\x01\x00\x05\x01"):
        async with await proxy.connect() as stream:
            if partial:
                await stream.send(partial)
            await stream.send_eof()
            await read_all(stream)
    after = await proxy.exchange(f"GET http://127.0.0.1:{canary.port}/after HTTP/1.1\r\n\r\n".encode())
    assert after.endswith(b"reached")


async def test_an_unreachable_destination_gets_502(make_proxy: Any) -> None:
    proxy: Proxy = await make_proxy([("*", "allow")])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # bound, never listening: connections are refused
        reply = await proxy.exchange(f"CONNECT 127.0.0.1:{closed} HTTP/1.1\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 502 tether: cannot connect to 127.0.0.1:")
    unresolved = await proxy.exchange(b"CONNECT does-not-exist.invalid:443 HTTP/1.1\r\n\r\n")
    assert unresolved.startswith(b"HTTP/1.1 502 tether: cannot resolve does-not-exist.invalid")


# --- SOCKS5 --------------------------------------------------------------------------------------------------------


def socks_request(host: str | bytes, port: int, *, command: int = 1) -> bytes:
    if isinstance(host, bytes):
        address = bytes((1,)) + host if len(host) == 4 else bytes((4,)) + host
    else:
        address = bytes((3, len(host))) + host.encode()
    return b"\x05\x01\x00" + bytes((5, command, 0)) + address + port.to_bytes(2, "big")


async def test_socks5_connects_by_name_and_by_address_when_allowed(make_proxy: Any, canary: Canary) -> None:
    proxy: Proxy = await make_proxy([("*", "allow")])
    for host in ("localhost", socket.inet_aton("127.0.0.1")):
        async with await proxy.connect() as stream:
            await stream.send(socks_request(host, canary.port))
            with anyio.fail_after(30):
                greeting = await stream.receive(2)
                assert greeting == b"\x05\x00"
                reply = b""
                while len(reply) < 10:
                    reply += await stream.receive(10 - len(reply))
            assert reply[:2] == b"\x05\x00"
            await stream.send(b"GET /socks HTTP/1.0\r\n\r\n")
            assert (await read_all(stream)).endswith(b"reached")
    assert [hit[0] for hit in canary.hits] == ["/socks", "/socks"]


@pytest.mark.parametrize(
    ("request_bytes", "reply"),
    [
        (None, b"\x05\x02"),  # denied by the rules: "connection not allowed by ruleset"
        (b"\x05\x01\x00\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50", b"\x05\x07"),  # BIND: command not supported
        (b"\x05\x01\x00\x05\x01\x00\x09", b"\x05\x08"),  # an unknown address type
        (b"\x05\x01\x00\x05\x01\x00\x03\x03a b\x00\x50", b"\x05\x08"),  # not a host name
    ],
)
async def test_socks5_refusals_are_replies(
    make_proxy: Any, canary: Canary, request_bytes: bytes | None, reply: bytes
) -> None:
    proxy: Proxy = await make_proxy([("*", "deny")])
    sent = request_bytes or socks_request(socket.inet_aton("127.0.0.1"), canary.port)
    answer = await proxy.exchange(sent)
    assert answer[:2] == b"\x05\x00" and answer[2:4] == reply
    assert canary.hits == []


async def test_socks_without_no_auth_and_socks4_are_refused(make_proxy: Any) -> None:
    proxy: Proxy = await make_proxy([("*", "allow")])
    assert await proxy.exchange(b"\x05\x01\x02") == b"\x05\xff"
    assert (await proxy.exchange(b"\x04\x01\x00\x50\x7f\x00\x00\x01\x00"))[:2] == b"\x00\x5b"


# --- a person's answer ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("feedback", [None, "use the mirror"])
async def test_a_rejected_destination_is_refused_and_kept_for_the_call(
    make_proxy: Any, canary: Canary, feedback: str | None
) -> None:
    proxy: Proxy = await make_proxy([("*", "ask")])
    asked: list[PermissionAsked] = []
    arrived = anyio.Event()

    def on_ask(event: PermissionAsked) -> None:
        asked.append(event)
        arrived.set()

    proxy.bus.subscribe(PermissionAsked, on_ask)
    replies: list[bytes] = []
    async with anyio.create_task_group() as group:

        async def answer() -> None:
            await arrived.wait()
            await proxy.service.reply(asked[0].request.id, "reject", feedback)

        async def connect() -> None:
            replies.append(await proxy.exchange(f"CONNECT 127.0.0.1:{canary.port} HTTP/1.1\r\n\r\n".encode()))

        group.start_soon(answer)
        group.start_soon(connect)
        group.start_soon(connect)  # the same destination at once: one question, one answer for both
    assert len(asked) == 1 and len(replies) == 2
    for reply in replies:
        assert reply.startswith(b"HTTP/1.1 403 tether: network access to 127.0.0.1:")
    request = asked[0].request.request
    assert request.action == "network" and request.save == (f"127.0.0.1:{canary.port}",)
    assert request.source is not None and request.source.call_id == "call_1"
    assert isinstance(proxy.gate.rejection, CorrectedError if feedback else DeclinedError)
    assert canary.hits == []


# --- the network mode ----------------------------------------------------------------------------------------------


def sandbox_with(mechanism: str, network: str = "proxy", tmp: Path = Path("/nonexistent-tmp")) -> Sandbox:
    detection = Detection(mechanism=mechanism, bwrap="/usr/bin/bwrap" if mechanism == "bwrap" else None)  # type: ignore[arg-type]
    return Sandbox.make(SandboxSettings(network=network), detection, tmp, ())  # type: ignore[arg-type]


def test_the_network_is_the_proxy_by_default_where_bubblewrap_holds_commands_else_none() -> None:
    assert SandboxSettings().network == "proxy"
    assert SandboxSettings.from_config({}).network == "proxy"
    assert SandboxSettings.from_config({"network": "host"}).network == "host"
    assert SandboxSettings.from_config({"network": "none"}).network == "none"
    assert sandbox_with("bwrap").network == "proxy"
    assert sandbox_with("landlock").network == "none"  # no namespace of its own: Landlock refuses TCP
    assert sandbox_with("bwrap", "host").network == "host"
    assert sandbox_with("bwrap", "none").network == "none"
    # the bridge's Python must be visible inside: not under the temp directory the sandbox replaces
    assert sandbox_with("bwrap", tmp=Path("/")).network == "none"


def test_a_call_gets_the_bridge_in_front_only_with_its_proxy(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    sandbox = sandbox_with("bwrap", tmp=tmp_path / "tmp")
    root = tmp_path / "p"
    root.mkdir()
    seam = ProxySeam(socket=str(tmp_path / "x.sock"))
    with_proxy = build_policy(mechanism="bwrap", root=str(root), tmp=None, network="proxy", proxy=seam)
    launch = sandbox.wrap(with_proxy, ["/bin/bash", "-c", "curl x"], str(root))
    bridge = launch.argv.index(BRIDGE_MODULE)
    assert launch.argv[bridge - 3 : bridge + 5] == [
        sandbox.bridge_python,
        "-S",
        "-I",
        BRIDGE_MODULE,
        PROXY_SOCKET,
        "--seccomp",
        SECCOMP_MODULE,
        "--",
    ]
    assert launch.argv[bridge + 5 :] == ["/bin/bash", "-c", "curl x"]
    assert launch.seccomp is None  # the bridge filters the command's child: it needs its own unix socket
    assert ["--ro-bind", seam.socket, PROXY_SOCKET] == launch.argv[launch.argv.index(PROXY_SOCKET) - 2 :][:3]
    offline = build_policy(mechanism="bwrap", root=str(root), tmp=None, network="none")
    plain = sandbox.wrap(offline, ["/bin/bash", "-c", "ls"], str(root))
    assert BRIDGE_MODULE not in plain.argv and plain.seccomp == SECCOMP_MODULE  # the guard filters
    # what doctor and --explain show; an MCP server has no call to ask for, so no network
    preview = sandbox.preview(str(root))
    assert preview is not None and preview.describe()["network"] == "proxy"
    server = sandbox.wrap_server("srv", ["srv"], str(root), str(root))
    assert server is not None and "--unshare-net" in server.argv and BRIDGE_MODULE not in server.argv
