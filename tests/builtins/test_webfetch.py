"""webfetch against real HTTP servers on 127.0.0.1: formats, limits, redirects, and the private-network asks (SSRF)."""

from __future__ import annotations

import gzip
import ipaddress
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether._addresses import private_reason
from tether.builtins import BuiltinDeps, webfetch
from tether.content import File, text_of
from tether.location import Location
from tether.output import OutputStore
from tether.permissions import PermissionRequest
from tether.tools import Completed, Failed, ToolCall, ToolRegistry

from ..cli.conftest import Cli

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
MIB = 1024 * 1024
PAGE = (
    "<!doctype html><html><head><title>Doc</title><script>steal()</script><style>p{color:red}</style></head>"
    "<body><h1>Install</h1><p>Run <code>pip install x</code> <a href='/more'>more</a>.</p></body></html>"
)

Route = Callable[[BaseHTTPRequestHandler], None]


class Server:
    """A real HTTP server on 127.0.0.1: ``routes`` maps a path to a handler; ``hits`` records (path, Host)."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.hits: list[tuple[str, str]] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits.append((self.path, self.headers.get("Host", "")))
                route = server.routes.get(self.path.split("?")[0])
                if route is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                route(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def body(self, path: str, data: bytes, content_type: str = "text/plain", **headers: str) -> None:
        def route(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(200)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                handler.send_header(key.replace("_", "-"), value)
            handler.end_headers()
            handler.wfile.write(data)

        self.routes[path] = route

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        def route(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(status)
            handler.send_header("Location", location)
            handler.send_header("Content-Length", "0")
            handler.end_headers()

        self.routes[path] = route

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    yield running
    running.close()


class Fetch:
    def __init__(self, tmp_path: Path, kit: Any, decide: Callable[[PermissionRequest], str]) -> None:
        self.recorder = kit.Recorder(decide=decide)
        deps = BuiltinDeps(
            location=Location(tmp_path), permissions=self.recorder, output=OutputStore(tmp_path / "out")
        )
        self.registry = ToolRegistry(output=OutputStore(tmp_path / "out"))
        self.registry.register({"webfetch": webfetch.make(deps)})
        self.ctx = kit.ctx

    async def __call__(self, **input: Any) -> Completed | Failed:
        step = self.registry.materialize(rules=[])
        return await step.settle(ToolCall(call_id="call_1", name="webfetch", input=input), self.ctx)

    async def text(self, **input: Any) -> str:
        outcome = await self(**input)
        assert isinstance(outcome, Completed), outcome
        return text_of(outcome.content)

    async def error(self, **input: Any) -> str:
        outcome = await self(**input)
        assert isinstance(outcome, Failed), outcome
        return outcome.error

    @property
    def asked(self) -> list[tuple[str, tuple[str, ...]]]:
        return self.recorder.asked


@pytest.fixture
def fetch(tmp_path: Path, kit: Any) -> Fetch:
    """Everything allowed (the private asks included): the asks are recorded."""
    return Fetch(tmp_path, kit, lambda request: "allow")


def only_public(request: PermissionRequest) -> str:
    return "deny" if request.action == "webfetch_private" else "allow"


# -- formats ---------------------------------------------------------------------------------------------------------


async def test_html_becomes_markdown_text_or_stays_html(fetch: Fetch, server: Server) -> None:
    server.body("/doc", PAGE.encode(), "text/html; charset=utf-8")
    markdown = await fetch.text(url=server.url("/doc"))
    assert "# Install" in markdown and "`pip install x`" in markdown and "[more](/more)" in markdown
    assert "steal()" not in markdown and "color:red" not in markdown
    text = await fetch.text(url=server.url("/doc"), format="text")
    assert "Install" in text and "pip install x" in text
    assert "<" not in text and "steal()" not in text and "#" not in text
    assert await fetch.text(url=server.url("/doc"), format="html") == PAGE


async def test_a_hostile_page_nested_too_deep_says_so_instead_of_crashing(
    fetch: Fetch, server: Server
) -> None:
    server.body("/deep", ("<div>" * 100_000 + "x" + "</div>" * 100_000).encode(), "text/html")
    text = await fetch.text(url=server.url("/deep"))
    assert 'call again with format="html"' in text


async def test_plain_text_json_and_charsets_are_returned_as_is(fetch: Fetch, server: Server) -> None:
    server.body("/data.json", b'{"a": 1}', "application/json")
    assert await fetch.text(url=server.url("/data.json")) == '{"a": 1}'
    server.body("/latin", "café".encode("latin-1"), "text/plain; charset=ISO-8859-1")
    assert await fetch.text(url=server.url("/latin")) == "café"
    server.body("/bad-charset", "naïve".encode(), "text/plain; charset=no-such-codec")
    assert await fetch.text(url=server.url("/bad-charset")) == "naïve"
    server.body("/empty", b"", "text/plain")
    assert await fetch.text(url=server.url("/empty")) == "(the response body is empty)"


async def test_images_are_file_parts_and_binary_content_fails(fetch: Fetch, server: Server) -> None:
    server.body("/logo.png", PNG, "image/png")
    outcome = await fetch(url=server.url("/logo.png"))
    assert isinstance(outcome, Completed)
    assert text_of(outcome.content) == "Image fetched successfully"
    files = [part for part in outcome.content if isinstance(part, File)]
    assert files and files[0].mime == "image/png" and files[0].data_uri().startswith("data:image/png;base64,")
    server.body("/app.bin", b"\x7fELF\0\0\0binary", "application/octet-stream")
    error = await fetch.error(url=server.url("/app.bin"))
    assert "binary content (application/octet-stream, 13 bytes)" in error


async def test_a_non_2xx_status_fails_with_it(fetch: Fetch, server: Server) -> None:
    assert await fetch.error(url=server.url("/missing")) == "Request failed with status code: 404 (Not Found)"


# -- limits ----------------------------------------------------------------------------------------------------------


async def test_a_body_over_5_mib_is_cut_and_says_so(fetch: Fetch, server: Server) -> None:
    server.body("/big", b"x" * (6 * MIB), "text/plain")
    outcome = await fetch(url=server.url("/big"))
    assert isinstance(outcome, Completed)
    assert outcome.metadata is not None
    assert outcome.metadata["truncated"] is True and outcome.metadata["bytes"] == 5 * MIB
    # the model reads a bounded preview (settle), whose tail says the response was cut
    assert text_of(outcome.content).rstrip().endswith("only its first 5 MiB were read.)")
    assert outcome.output_paths  # the complete text was retained


async def test_a_compressed_bomb_is_read_only_to_the_cap(fetch: Fetch, server: Server) -> None:
    bomb = gzip.compress(b"\0" * (64 * MIB), compresslevel=9)
    assert len(bomb) < MIB
    server.body("/bomb", bomb, "text/plain", Content_Encoding="gzip")
    outcome = await fetch(url=server.url("/bomb"))
    assert isinstance(outcome, Completed) and outcome.metadata is not None
    assert outcome.metadata["bytes"] == 5 * MIB and outcome.metadata["truncated"] is True


async def test_an_image_over_the_cap_fails(fetch: Fetch, server: Server) -> None:
    server.body("/huge.png", PNG + b"\0" * (5 * MIB), "image/png")
    assert "Response too large" in await fetch.error(url=server.url("/huge.png"))


async def test_a_slow_server_times_out(fetch: Fetch, server: Server) -> None:
    def never(handler: BaseHTTPRequestHandler) -> None:
        server.release.wait(30)  # held until the test ends: the client's deadline must end the call

    server.routes["/slow"] = never
    error = await fetch.error(url=server.url("/slow"), timeout=0.5)
    assert error.startswith("Request timed out after 0.5 s.")


async def test_the_timeout_is_capped_at_120_seconds(fetch: Fetch, server: Server) -> None:
    server.body("/", b"ok")
    await fetch.text(url=server.url("/"), timeout=10_000)
    assert fetch.recorder.requests[0].metadata["timeout"] == 120


# -- URLs ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("ftp://127.0.0.1/x", "URL must start with http:// or https://"),
        ("file:///etc/passwd", "URL must start with http:// or https://"),
        ("127.0.0.1/x", "URL must start with http:// or https://"),
        ("http://user:secret@127.0.0.1/", "carries credentials"),
        ("http://:secret@127.0.0.1/", "carries credentials"),
        ("http:///path", "has no host"),
        ("http://" + "a" * 9000, "longer than 8192"),
        ("http://127.0.0.1/a\r\nX-Injected: yes", "is not a valid URL"),
        ("http://[::1/", "is not a valid URL"),
        ("http://127.0.0.1:99999/", "invalid port 99999"),
        ("http://127.0.0.1:0/", "invalid port 0"),
    ],
)
async def test_bad_urls_are_refused_before_anything_is_asked_or_sent(
    fetch: Fetch, server: Server, url: str, error: str
) -> None:
    assert error in await fetch.error(url=url)
    assert fetch.asked == [] and server.hits == []


async def test_an_unresolvable_host_says_so(fetch: Fetch) -> None:
    assert "Unable to resolve the host 'no-such-host.invalid'" in await fetch.error(
        url="http://no-such-host.invalid/"
    )


# -- permissions and SSRF ----------------------------------------------------------------------------------------------


async def test_asks_webfetch_then_webfetch_private_for_loopback(fetch: Fetch, server: Server) -> None:
    server.body("/", b"hello")
    url = server.url("/")
    assert await fetch.text(url=url) == "hello"
    assert fetch.asked == [("webfetch", (url,)), ("webfetch_private", (url,))]
    webfetch_ask, private_ask = fetch.recorder.requests
    assert webfetch_ask.save == ("*",) and webfetch_ask.metadata["format"] == "markdown"
    assert private_ask.save == (f"http://127.0.0.1:{server.port}/*",)
    assert private_ask.metadata["reason"] == "127.0.0.1 is loopback"


async def test_a_denied_private_ask_sends_nothing(tmp_path: Path, kit: Any, server: Server) -> None:
    denied = Fetch(tmp_path, kit, only_public)
    server.body("/", b"hello")
    outcome = await denied(url=server.url("/"))
    assert isinstance(outcome, Failed) and outcome.kind == "blocked"
    assert server.hits == []


async def test_a_denied_webfetch_asks_nothing_more(tmp_path: Path, kit: Any, server: Server) -> None:
    denied = Fetch(tmp_path, kit, lambda request: "deny")
    outcome = await denied(url=server.url("/"))
    assert isinstance(outcome, Failed) and outcome.kind == "blocked"
    assert denied.asked == [("webfetch", (server.url("/"),))] and server.hits == []


@pytest.mark.parametrize(
    "host",
    ["localhost", "2130706433", "0x7f.0.0.1", "127.1", "[::ffff:127.0.0.1]", "0.0.0.0", "[::]", "[::1]"],
)
async def test_every_spelling_of_this_machine_asks_webfetch_private(
    tmp_path: Path, kit: Any, server: Server, host: str
) -> None:
    denied = Fetch(tmp_path, kit, only_public)
    url = f"http://{host}:{server.port}/"
    outcome = await denied(url=url)
    assert isinstance(outcome, Failed) and outcome.kind == "blocked", outcome
    assert [action for action, _ in denied.asked] == ["webfetch", "webfetch_private"]
    assert server.hits == []


async def test_localhost_connects_to_the_checked_address_with_its_own_host_header(
    fetch: Fetch, server: Server
) -> None:
    server.body("/", b"hi")
    assert await fetch.text(url=server.url("/", host="localhost")) == "hi"
    assert server.hits == [("/", f"localhost:{server.port}")]


@pytest.fixture
def loopback_dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every name resolves to 127.0.0.1, once per lookup; the names looked up are recorded."""
    lookups: list[str] = []

    async def once(host: str, port: int) -> list[Any]:
        lookups.append(host)
        return [ipaddress.ip_address("127.0.0.1")]

    monkeypatch.setattr(webfetch, "resolve", once)
    return lookups


async def test_the_connection_goes_to_the_address_checked_not_a_second_lookup(
    fetch: Fetch, server: Server, loopback_dns: list[str]
) -> None:
    """A rebinding name answers once: webfetch connects to that answer (a second lookup would fail here)."""
    lookups = loopback_dns
    server.body("/", b"pinned")
    assert await fetch.text(url=server.url("/", host="rebind.invalid")) == "pinned"
    assert lookups == ["rebind.invalid"]
    assert server.hits == [("/", f"rebind.invalid:{server.port}")]
    assert fetch.asked[1][0] == "webfetch_private"


async def test_an_international_name_is_resolved_and_sent_in_its_idna_form(
    fetch: Fetch, server: Server, loopback_dns: list[str]
) -> None:
    lookups = loopback_dns
    server.body("/", b"idn")
    assert await fetch.text(url=f"http://bücher.example:{server.port}/") == "idn"
    assert lookups == ["xn--bcher-kva.example"]
    assert server.hits == [("/", f"xn--bcher-kva.example:{server.port}")]


async def test_redirects_are_followed_and_each_hop_is_asked(fetch: Fetch, server: Server) -> None:
    server.redirect("/a", "/b", 301)
    server.redirect("/b", server.url("/c", host="localhost"), 307)
    server.body("/c", b"done")
    outcome = await fetch(url=server.url("/a"))
    assert isinstance(outcome, Completed) and text_of(outcome.content) == "done"
    assert outcome.metadata is not None and outcome.metadata["redirects"] == 2
    assert [action for action, _ in fetch.asked] == ["webfetch", "webfetch_private"] * 3
    assert fetch.asked[4] == ("webfetch", (server.url("/c", host="localhost"),))


async def test_a_redirect_to_another_private_service_is_asked_again_and_refused(
    tmp_path: Path, kit: Any, server: Server
) -> None:
    other = Server()
    try:
        other.body("/admin", b"secret")
        first = server.url("/")

        def decide(request: PermissionRequest) -> str:
            return "allow" if request.action == "webfetch" or request.resources == (first,) else "deny"

        fetch = Fetch(tmp_path, kit, decide)
        server.redirect("/", other.url("/admin"))
        outcome = await fetch(url=first)
        assert isinstance(outcome, Failed) and outcome.kind == "blocked"
        assert fetch.asked[-1] == ("webfetch_private", (other.url("/admin"),))
        assert other.hits == []  # the private service was never reached
    finally:
        other.close()


async def test_a_redirect_to_the_metadata_address_is_asked_with_the_reason(
    tmp_path: Path, kit: Any, server: Server
) -> None:
    first = server.url("/")
    fetch = Fetch(
        tmp_path, kit, lambda r: "allow" if r.action == "webfetch" or r.resources == (first,) else "deny"
    )
    server.redirect("/", "http://169.254.169.254/latest/meta-data/iam/")
    outcome = await fetch(url=first)
    assert isinstance(outcome, Failed) and outcome.kind == "blocked"
    last = fetch.recorder.requests[-1]
    assert last.action == "webfetch_private"
    assert last.metadata["reason"] == "169.254.169.254 is the cloud metadata address"


@pytest.mark.parametrize(
    ("location", "error"),
    [
        ("file:///etc/passwd", "is not an http(s) URL"),
        ("http://admin:pw@127.0.0.1/", "carries credentials"),
        ("gopher://127.0.0.1:25/", "is not an http(s) URL"),
    ],
)
async def test_bad_redirect_targets_are_refused(
    fetch: Fetch, server: Server, location: str, error: str
) -> None:
    server.redirect("/", location)
    assert error in await fetch.error(url=server.url("/"))


async def test_redirects_are_capped_at_five(fetch: Fetch, server: Server) -> None:
    for i in range(6):
        server.redirect(f"/r{i}", f"/r{i + 1}")
    server.body("/r6", b"six")
    assert await fetch.text(url=server.url("/r1")) == "six"  # five redirects
    assert "Too many redirects: more than 5" in await fetch.error(url=server.url("/r0"))  # six
    assert server.hits[-1][0] == "/r5"  # the sixth target was never requested
    server.redirect("/loop", "/loop")
    assert "Too many redirects" in await fetch.error(url=server.url("/loop"))


def test_private_reasons_cover_the_ranges() -> None:
    public = ["8.8.8.8", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808"]
    private = [
        "127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.0.1", "100.64.1.1", "169.254.169.254", "0.0.0.0",
        "224.0.0.1", "::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
        "::127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::", "ff02::1", "2001:db8::1",
    ]  # fmt: skip
    assert [a for a in public if private_reason(ipaddress.ip_address(a)) is not None] == []
    assert [a for a in private if private_reason(ipaddress.ip_address(a)) is None] == []


# -- through the CLI: the built-in agents' defaults --------------------------------------------------------------------


def test_the_default_rules_ask_for_loopback_and_no_terminal_refuses(tmp_path: Path, server: Server) -> None:
    server.body("/", b"from the loopback service")
    cli = Cli(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    call = {"name": "webfetch", "arguments": {"url": server.url("/")}}
    model = cli.script([{"tool_calls": [call]}, {"text": "ok"}])
    result = cli.run("run", "fetch", "--model", model, "--dir", str(project), "--format", "json")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    asked = [e for e in lines if e["type"] == "permission_asked"]
    assert [e["action"] for e in asked] == ["webfetch_private"]  # webfetch itself is allowed by default
    end = next(e for e in lines if e["type"] == "tool_end")
    assert end["status"] == "declined"
    assert server.hits == []
    model = cli.script([{"tool_calls": [call]}, {"text": "ok"}], name="again.json")
    result = cli.run("run", "fetch", "--model", model, "--dir", str(project), "--format", "json", "--yes")
    end = next(json.loads(line) for line in result.stdout.splitlines() if '"tool_end"' in line)
    assert end["status"] == "completed" and "from the loopback service" in end["content"]


# -- TLS: the connection goes to the checked address, the certificate is checked for the URL's name ------------------


def _certificates(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A test CA (file) and a server certificate and key for ``localhost`` and ``pinned.test``."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tether test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.DNSName("pinned.test")]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return ca_file, cert_file, key_file


async def test_https_keeps_the_name_for_tls_while_connecting_to_the_checked_address(
    tmp_path: Path, kit: Any, server: Server, monkeypatch: pytest.MonkeyPatch, loopback_dns: list[str]
) -> None:
    import ssl

    ca_file, cert_file, key_file = _certificates(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
    server.body("/", b"over tls")

    fetch = Fetch(tmp_path, kit, lambda request: "allow")
    for host in ("localhost", "pinned.test"):
        assert await fetch.text(url=f"https://{host}:{server.port}/") == "over tls"
    assert [h for _, h in server.hits] == [f"localhost:{server.port}", f"pinned.test:{server.port}"]
    # a name the certificate does not hold fails verification: the address alone never satisfies it
    error = await fetch.error(url=f"https://wrong.test:{server.port}/")
    assert "CERTIFICATE_VERIFY_FAILED" in error or "certificate" in error.lower()
    assert len(server.hits) == 2


@given(st.ip_addresses(v=4))
def test_an_ipv4_address_spelled_in_ipv6_is_judged_as_itself(ip: ipaddress.IPv4Address) -> None:
    mapped = ipaddress.IPv6Address(f"::ffff:{ip}")
    nat64 = ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(ip))
    sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (int(ip) << 80))
    private = private_reason(ip) is not None
    assert (private_reason(mapped) is not None) == private
    assert (private_reason(nat64) is not None) == private
    if private:  # 6to4 of a public address is still judged by the 6to4 range itself
        assert private_reason(sixtofour) is not None


@given(
    st.ip_addresses(network="10.0.0.0/8")
    | st.ip_addresses(network="100.64.0.0/10")
    | st.ip_addresses(network="169.254.0.0/16")
    | st.ip_addresses(network="127.0.0.0/8")
    | st.ip_addresses(network="fc00::/7")
    | st.ip_addresses(network="fe80::/10")
)
def test_every_address_of_the_private_ranges_is_private(ip: Any) -> None:
    assert private_reason(ip) is not None
