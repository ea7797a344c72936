"""Review 2: a ``webfetch`` / ``webfetch_private`` rule written for one spelling of an address decides every spelling.

The attack (/tmp/attack/15): the user denies ``http://127.0.0.1:<port>/*`` and allows ``*``; ``http://2130706433:<port>/``,
``[::ffff:127.0.0.1]``, ``127.1``, ``0x7f.1`` and ``0`` reached the denied service because the resource asked was the
URL text. The requests now carry the URL as written and the URL on every address it reaches; the real
``PermissionService`` decides them as bash's forms (a deny on any form denies), before and after every redirect.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tether._addresses import literal, reached
from tether.builtins import BuiltinDeps, webfetch
from tether.bus import Bus
from tether.content import text_of
from tether.location import Location
from tether.output import OutputStore
from tether.permissions import Agent, PermissionService, Rule, SavedApprovals, StaticRules
from tether.tools import Completed, Failed, ToolCall, ToolRegistry

from ..cli.conftest import Cli
from .test_webfetch import Server

pytestmark = pytest.mark.anyio

SPELLINGS = ["127.0.0.1", "2130706433", "[::ffff:127.0.0.1]", "127.1", "0x7f.1", "0x7f000001", "0", "0.0.0.0"]


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    running.body("/secret", b"SECRET-FROM-DENIED-SERVICE")
    running.body("/public", b"fine")
    yield running
    running.close()


class Fetcher:
    """webfetch built on a real PermissionService that decides by ``rules`` (nothing asks a person)."""

    def __init__(self, tmp_path: Path, kit: Any, service: PermissionService) -> None:
        deps = BuiltinDeps(
            location=Location(tmp_path), permissions=service, output=OutputStore(tmp_path / "out")
        )
        self.registry = ToolRegistry(output=OutputStore(tmp_path / "out"))
        self.registry.register({"webfetch": webfetch.make(deps)})
        self.ctx = kit.ctx

    async def __call__(self, url: str) -> Completed | Failed:
        step = self.registry.materialize(rules=[])
        return await step.settle(ToolCall(call_id="call_1", name="webfetch", input={"url": url}), self.ctx)


@pytest.fixture
async def make(tmp_path: Path, kit: Any) -> AsyncIterator[Any]:
    async with SavedApprovals(tmp_path / "saved.db") as saved:

        def build(*rules: Rule) -> Fetcher:
            agent = Agent(name="build", mode="primary", rules=rules)
            service = PermissionService(
                bus=Bus(), saved=saved, resolve=StaticRules(project="prj_1", agent=agent)
            )
            return Fetcher(tmp_path, kit, service)

        yield build


def _private_denied(port: int) -> tuple[Rule, ...]:
    return (
        Rule("*", "*", "allow"),
        Rule("webfetch_private", "*", "allow"),
        Rule("webfetch_private", f"http://127.0.0.1:{port}/secret*", "deny"),
    )


def _webfetch_denied(port: int) -> tuple[Rule, ...]:
    return (
        Rule("*", "*", "allow"),
        Rule("webfetch", f"http://127.0.0.1:{port}/secret*", "deny"),
    )


# webfetch_private is asked after the host is resolved: its forms include what a name (localhost) resolves to
CASES = [(_private_denied, host) for host in [*SPELLINGS, "localhost"]] + [
    (_webfetch_denied, h) for h in SPELLINGS
]


@pytest.mark.parametrize(("rules", "host"), CASES)
async def test_a_deny_by_address_denies_every_spelling_and_nothing_is_sent(
    make: Any, server: Server, rules: Any, host: str
) -> None:
    fetch = make(*rules(server.port))
    outcome = await fetch(f"http://{host}:{server.port}/secret?x=1")
    assert isinstance(outcome, Failed) and outcome.kind == "blocked", outcome
    assert f"http://127.0.0.1:{server.port}/secret?x=1" in outcome.error  # the form the rule denied is named
    assert server.hits == []
    allowed = await fetch(f"http://{host}:{server.port}/public")
    assert isinstance(allowed, Completed) and text_of(allowed.content) == "fine"


@pytest.mark.parametrize("rules", [_private_denied, _webfetch_denied])
async def test_a_redirect_to_another_spelling_of_a_denied_address_is_denied(
    make: Any, server: Server, rules: Any
) -> None:
    server.redirect("/hop", f"http://2130706433:{server.port}/secret")
    fetch = make(*rules(server.port))
    outcome = await fetch(f"http://localhost:{server.port}/hop")
    assert isinstance(outcome, Failed) and outcome.kind == "blocked", outcome
    assert [path for path, _ in server.hits] == ["/hop"]


async def test_an_allow_must_match_every_form(make: Any, server: Server) -> None:
    # An allow written for the URL text alone does not allow what the URL reaches on another spelling: the forms
    # the allow does not match fall to the next rule (here: deny).
    fetch = make(
        Rule("*", "*", "allow"),
        Rule("webfetch_private", "*", "deny"),
        Rule("webfetch_private", f"http://2130706433:{server.port}/*", "allow"),
    )
    outcome = await fetch(f"http://2130706433:{server.port}/secret")
    assert isinstance(outcome, Failed) and outcome.kind == "blocked", outcome
    assert server.hits == []


def test_the_forms_are_canonical() -> None:
    url = httpx2.URL("http://[::ffff:127.0.0.1]:8080/a/b?q=1")
    v6 = ipaddress.ip_address("::1")
    v4 = ipaddress.ip_address("::ffff:127.0.0.1")
    assert webfetch.address_forms(url, [v4, v6, v4]) == [
        "http://[::ffff:127.0.0.1]:8080/a/b?q=1",
        "http://127.0.0.1:8080/a/b?q=1",
        "http://[::1]:8080/a/b?q=1",
    ]
    default_port = httpx2.URL("https://2130706433:443/")
    assert (
        webfetch.address_forms(default_port, [ipaddress.ip_address("127.0.0.1")])[1] == "https://127.0.0.1/"
    )
    assert literal("0x7f.1") == ipaddress.ip_address("127.0.0.1")
    assert (
        literal("127.0.0.1 evil.example") is None
        and literal("1e100") is None
        and literal("example.com") is None
    )
    assert reached(ipaddress.ip_address("0.0.0.0")) == ipaddress.ip_address("127.0.0.1")
    assert reached(ipaddress.ip_address("::")) == ipaddress.ip_address("::1")


def test_the_cli_repro_a_user_rule_by_address_holds_for_every_spelling(
    tmp_path: Path, server: Server
) -> None:
    """/tmp/attack/15 as the user runs it: ``tether tool call webfetch`` under the user's own tether.json."""
    cli = Cli(tmp_path)
    (tmp_path / "config").mkdir()
    rules = {
        "*": "allow",
        f"http://127.0.0.1:{server.port}/*": "deny",
        f"http://localhost:{server.port}/*": "deny",
    }
    (tmp_path / "config" / "tether.json").write_text(json.dumps({"permission": {"webfetch_private": rules}}))
    project = tmp_path / "p"
    project.mkdir()
    for host in ["2130706433", "[::ffff:127.0.0.1]", "127.1", "0x7f.1", "0"]:
        url = f"http://{host}:{server.port}/secret"
        result = cli.run("tool", "call", "webfetch", json.dumps({"url": url}), cwd=project)
        assert "SECRET" not in result.output and "blocked" in result.output, (host, result.output)
    assert server.hits == []


async def test_always_saves_the_origin_of_every_form(tmp_path: Path, kit: Any, server: Server) -> None:
    recorder = kit.Recorder(decide=lambda request: "allow")
    deps = BuiltinDeps(
        location=Location(tmp_path), permissions=recorder, output=OutputStore(tmp_path / "out")
    )
    registry = ToolRegistry(output=OutputStore(tmp_path / "out"))
    registry.register({"webfetch": webfetch.make(deps)})
    url = f"http://2130706433:{server.port}/public"
    outcome = await registry.materialize(rules=[]).settle(
        ToolCall(call_id="call_1", name="webfetch", input={"url": url}), kit.ctx
    )
    assert isinstance(outcome, Completed), outcome
    canonical = f"http://127.0.0.1:{server.port}/public"
    assert recorder.asked == [("webfetch", (url, canonical)), ("webfetch_private", (url, canonical))]
    assert recorder.requests[1].save == (
        f"http://2130706433:{server.port}/*",
        f"http://127.0.0.1:{server.port}/*",
    )


@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=1, max_value=65535))
@example(
    0, 80
)  # http's default port is left out of every form, as the URL leaves it out (a full run drew it)
@example(2130706433, 80)
def test_every_numeric_spelling_of_an_address_has_one_canonical_form(number: int, port: int) -> None:
    ip = ipaddress.IPv4Address(number)
    spellings = [str(ip), str(number), hex(number), f"[::ffff:{ip}]"]
    forms = set()
    for host in spellings:
        url = httpx2.URL(f"http://{host}:{port}/p?q")
        found = webfetch.address_forms(url, [reached(literal(url.raw_host.decode()) or ip)])
        forms.add(found[-1])
    expected = ip if not ip.is_unspecified else ipaddress.IPv4Address("127.0.0.1")
    written = "" if port == 80 else f":{port}"
    assert forms == {f"http://{expected}{written}/p?q"}
