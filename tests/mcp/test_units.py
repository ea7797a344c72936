"""The pure parts of the client: names, results, specs and the SDK's exceptions, each at its worst sender."""

from __future__ import annotations

import base64
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcp
from mcp import types
from tether.content import File, Text
from tether.errors import ToolFailure
from tether.mcp._errors import connect_errors, describe
from tether.mcp._names import tool_names
from tether.mcp._results import MAX_ATTACHMENT, tool_response
from tether.mcp._spec import CALL_TIMEOUT, CONNECT_TIMEOUT, specs_from_config
from tether.tools.internal import UNSET

LEGAL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


def test_names_are_server_and_tool_made_legal() -> None:
    names = tool_names([("github", "create_issue"), ("my server", "do.it"), ("s", "__book_meeting_room")])
    assert names == {
        ("github", "create_issue"): "github_create_issue",
        ("my server", "do.it"): "my_server_do_it",
        ("s", "__book_meeting_room"): "s___book_meeting_room",
    }


def test_colliding_and_long_names_get_a_stable_suffix() -> None:
    pairs = [("a", "b.c"), ("a", "b_c"), ("x" * 40, "y" * 40)]
    names = tool_names(pairs)
    assert len(set(names.values())) == 3 and all(LEGAL.match(n) for n in names.values())
    assert names[("a", "b.c")] != names[("a", "b_c")]
    assert len(names[("x" * 40, "y" * 40)]) == 64
    # the suffix depends only on the pair: listing other tools beside it does not rename it
    assert tool_names([("a", "b.c"), ("a", "b_c"), ("q", "r")])[("a", "b.c")] == names[("a", "b.c")]
    assert tool_names([("s", "read")], taken={"s_read"})[("s", "read")].startswith("s_read_")


@pytest.mark.parametrize("raw", ["", "\x00", "é" * 100, "../../etc", "a b\nc", "名前"])
def test_any_raw_name_becomes_legal(raw: str) -> None:
    (name,) = tool_names([(raw or "s", raw or "t")]).values()
    assert LEGAL.match(name)


@given(
    st.lists(st.tuples(st.text(max_size=80), st.text(max_size=80)), max_size=12),
    st.sets(st.text(max_size=70)),
)
def test_names_are_legal_distinct_and_stable_for_any_listing(
    pairs: list[tuple[str, str]], taken: set[str]
) -> None:
    names = tool_names(pairs, taken)
    assert all(LEGAL.match(n) for n in names.values())
    assert len(set(names.values())) == len(names) and not set(names.values()) & taken
    assert tool_names(reversed(pairs), taken) == names  # the order of a listing does not rename a tool


def result(*content: Any, **more: Any) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), **more)


def test_text_image_link_and_embedded_text_are_kept() -> None:
    response = tool_response(
        "s",
        "t",
        result(
            types.TextContent(type="text", text="hello"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            types.ResourceLink(
                type="resource_link", name="doc", uri="file:///doc.md", mime_type="text/markdown"
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="mem://a", text="inside", mime_type="text/plain"),
            ),
        ),
        has_output=False,
    )
    text, image, link, embedded = response.content  # type: ignore[misc]
    assert text == Text("hello")
    assert isinstance(image, File) and image.mime == "image/png" and image.data == PNG
    assert isinstance(link, Text) and "file:///doc.md" in link.text and "read_mcp_resource" in link.text
    assert embedded == Text("[resource mem://a]\ninside")


@pytest.mark.parametrize(
    ("block", "why"),
    [
        (types.ImageContent(type="image", data="not base64!!", mime_type="image/png"), "not valid base64"),
        (
            types.ImageContent(type="image", data="A" * (MAX_ATTACHMENT * 4 // 3 + 8), mime_type="image/png"),
            "10 MB",
        ),
        (types.AudioContent(type="audio", data=PNG, mime_type="audio/wav"), "only images and PDFs"),
        (
            types.ImageContent(type="image", data=PNG, mime_type="image/png\n<script>"),
            "application/octet-stream",
        ),
        (
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(uri="mem://z", blob=PNG, mime_type="application/zip"),
            ),
            "only images and PDFs",
        ),
    ],
)
def test_what_cannot_be_attached_is_left_out_with_a_reason(block: Any, why: str) -> None:
    (part,) = tool_response("s", "t", result(block), has_output=False).content  # type: ignore[misc]
    assert isinstance(part, Text) and "left out" in part.text and why in part.text


def test_an_embedded_pdf_is_attached() -> None:
    blob = base64.b64encode(b"%PDF-1.4 x").decode()
    resource = types.BlobResourceContents(uri="mem://r.pdf", blob=blob, mime_type="application/pdf")
    (part,) = tool_response(
        "s", "t", result(types.EmbeddedResource(type="resource", resource=resource)), has_output=False
    ).content  # type: ignore[misc]
    assert isinstance(part, File) and part.mime == "application/pdf" and part.name == "mem://r.pdf"


def test_is_error_is_a_failure_with_the_server_text() -> None:
    with pytest.raises(ToolFailure, match='MCP server "s" reported an error from its tool "t": no such repo'):
        tool_response(
            "s",
            "t",
            result(types.TextContent(type="text", text="no such repo"), is_error=True),
            has_output=False,
        )
    with pytest.raises(ToolFailure, match="the server gave no message"):
        tool_response("s", "t", result(is_error=True), has_output=False)


def test_structured_content_is_the_output_of_a_tool_with_a_schema() -> None:
    response = tool_response("s", "t", result(structured_content={"sum": 3}), has_output=True)
    assert response.output == {"sum": 3} and response.content == [Text('{"sum": 3}')]
    assert (
        tool_response("s", "t", result(types.TextContent(type="text", text="x")), has_output=True).output
        is UNSET
    )
    assert tool_response("s", "t", result(), has_output=False).content == [Text("(no output)")]


def test_specs_read_both_shapes_and_substitute_env() -> None:
    data = {
        "mcpServers": {
            "claude": {"command": "npx", "args": ["-y", "srv"], "env": {"TOKEN": "{env:SECRET}"}},
            "both": {"command": "old"},
        },
        "mcp": {
            "open": {"type": "local", "command": ["srv", "--x"], "environment": {"A": "1"}, "timeout": 2500},
            "remote": {
                "type": "remote",
                "url": "https://h/{env:PATHPART}",
                "headers": {"Authorization": "Bearer {env:SECRET}"},
            },
            "sse": {"type": "sse", "url": "http://h/sse", "enabled": False, "call_timeout": 1000},
            "both": {"command": ["new"]},
        },
    }
    specs = {s.name: s for s in specs_from_config(data, {"SECRET": "s3", "PATHPART": "mcp"})}
    assert specs["claude"].command == ("npx", "-y", "srv") and specs["claude"].env == {"TOKEN": "s3"}
    assert specs["both"].command == ("new",)  # mcp wins over mcpServers
    assert specs["open"].command == ("srv", "--x") and specs["open"].connect_timeout == 2.5
    assert specs["open"].call_timeout == CALL_TIMEOUT
    remote = specs["remote"]
    assert remote.transport == "http" and remote.fallback_sse and remote.url == "https://h/mcp"
    assert remote.headers == {"Authorization": "Bearer s3"} and remote.connect_timeout == CONNECT_TIMEOUT
    assert specs["sse"].transport == "sse" and not specs["sse"].fallback_sse and not specs["sse"].enabled
    assert specs["sse"].call_timeout == 1.0
    assert specs_from_config({"mcp": {"r": {"url": "http://h"}}}, {})[0].headers == {}
    # an unset variable becomes empty, as in OpenCode
    assert specs_from_config({"mcp": {"r": {"url": "http://h", "headers": {"X": "{env:NOPE}"}}}}, {})[
        0
    ].headers == {"X": ""}


def _sdk_exceptions() -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for package in (mcp.client, mcp.shared):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if ".auth" in module.name or module.name.endswith("__main__"):
                continue
            loaded = importlib.import_module(module.name)
            for _, value in inspect.getmembers(loaded, inspect.isclass):
                if (
                    issubclass(value, Exception)
                    and not issubclass(value, Warning)
                    and value.__module__.startswith("mcp.")
                ):
                    found.add(value)
    return found


def test_every_sdk_exception_class_is_mapped() -> None:
    classes = _sdk_exceptions()
    assert classes  # the walk found the SDK's exceptions
    unmapped = [c.__qualname__ for c in classes if not issubclass(c, connect_errors())]
    assert not unmapped, f"map these in tether.mcp._errors: {unmapped}"


def test_describe_names_the_innermost_cause() -> None:
    group = ExceptionGroup("tg", [ExceptionGroup("inner", [FileNotFoundError(2, "missing", "/bin/x")])])
    assert describe(group) == "the command was not found: /bin/x"
    assert describe(RuntimeError("")) == "RuntimeError"


def test_the_client_modules_load_without_the_sdk() -> None:
    code = "import sys, tether._runtime, tether.mcp.internal; print(any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
