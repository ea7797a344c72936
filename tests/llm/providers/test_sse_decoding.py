"""tether's SSE decoder (``_sse``) on the edge cases recorded from the provider SDKs' decoders, and the decode path
under arbitrary splits.

The property test drives the adapters' own path minus the socket (the decoder, each event's data as the adapter
reads it, then the assembler) over a body cut at hypothesis-chosen points (inside lines, line ends and UTF-8
sequences): the events must not depend on the cuts.
"""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.errors import ProviderError
from tether.llm import Event, StepStart
from tether.llm.providers import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from tether.llm.providers._anthropic import AnthropicAssembler
from tether.llm.providers._base import _DONE, _SKIP  # pyright: ignore[reportPrivateUsage]
from tether.llm.providers._common import CallIds, ToolNames
from tether.llm.providers._openai_chat import ChatAssembler
from tether.llm.providers._openai_responses import ResponsesAssembler
from tether.llm.providers._sse import SSEDecoder

from ._replay import FIXTURES, api_of, stream_bytes, stream_names
from ._summary import check_invariants, summarize

CASES = json.loads((FIXTURES / "sse_parser_cases/anthropic_sdk_sse_decoder_cases.json").read_text())["cases"]
EXPECTED: dict[str, Any] = json.loads((FIXTURES.parent.parent / "expected_streams.json").read_text())


def _decode_all(chunks: list[bytes]) -> list[tuple[str | None, str]]:
    decoder = SSEDecoder()
    pairs = [pair for chunk in chunks for pair in decoder.feed(chunk)]
    return pairs + decoder.finish()


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_decoder_handles_recorded_edge_case(case: dict[str, Any]) -> None:
    chunks = [base64.b64decode(c) for c in case["chunks_b64"]]
    events = _decode_all(chunks)
    assert len(events) == len(case["expect"])
    for (event, data), expect in zip(events, case["expect"], strict=True):
        assert event == expect["event"]
        if "data" in expect:
            assert data == expect["data"]
        if "json" in expect:
            assert json.loads(data) == expect["json"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"data: a\r\ndata: b\r\n\r\n", [(None, "a\nb")]),  # CRLF
        (b"data: a\rdata: b\r\r", [(None, "a\nb")]),  # CR alone
        (b": keep-alive\n\nevent: x\n\n", [("x", "")]),  # a comment is nothing
        (b"id: 7\nretry: 10\n\n", []),  # neither name nor data
        (b"data:no space\n\n", [(None, "no space")]),
        (b"data: last line without its end", [(None, "last line without its end")]),
    ],
)
def test_line_ends_comments_and_fields_read_as_the_standard_says(
    body: bytes, expected: list[tuple[str | None, str]]
) -> None:
    assert _decode_all([body]) == expected
    assert _decode_all([body[i : i + 1] for i in range(len(body))]) == expected  # cut at every byte


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(UnicodeDecodeError):
        _decode_all([b"data: \xff\n\n"])


MODELS: dict[str, Any] = {
    "openai_chat": OpenAIChatModel("m"),
    "openai_responses": OpenAIResponsesModel("m"),
    "anthropic": AnthropicModel("m"),
}


class _Response:
    status_code = 200
    headers: ClassVar[dict[str, str]] = {}


def decode(name: str, chunks: list[bytes]) -> list[Event]:
    """The adapter's path minus the socket: the decoder over the body, each event's data as the adapter reads it
    (``HTTPModel._item``), then the assembler."""
    api = api_of(name)
    ids, names = CallIds(), ToolNames(())
    model = MODELS[api]
    assembler: Any = {
        "anthropic": AnthropicAssembler,
        "openai_chat": ChatAssembler,
        "openai_responses": ResponsesAssembler,
    }[api](ids=ids, names=names)
    out: list[Event] = [StepStart()]
    try:
        for event, data in _decode_all(chunks):
            item = model._item(event, data, _Response())  # pyright: ignore[reportPrivateUsage]
            if item is _DONE:
                break
            if item is not _SKIP:
                out.extend(assembler.feed(item))
    except ProviderError:
        return out  # the recorded `error` event: covered by the HTTP replay test
    out.extend(assembler.finish())
    return out


def _cut(body: bytes, points: list[int]) -> list[bytes]:
    cuts = sorted({p % (len(body) + 1) for p in points} | {0, len(body)})
    return [body[a:b] for a, b in itertools.pairwise(cuts)]


REPLAYABLE = [n for n in stream_names() if "openai-error" not in n]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(REPLAYABLE), points=st.lists(st.integers(min_value=0, max_value=20_000), max_size=40)
)
def test_events_do_not_depend_on_where_the_bytes_are_cut(name: str, points: list[int]) -> None:
    events = decode(name, _cut(stream_bytes(name), points))
    check_invariants(events)
    assert summarize(events) == EXPECTED[name]


def test_every_byte_boundary_of_a_multibyte_stream() -> None:
    name = "openai_chat/vercel-ai__deepseek-tool-call.chunks.jsonl"
    body = stream_bytes(name)
    for cut in range(1, len(body), 97):
        assert summarize(decode(name, [body[:cut], body[cut:]])) == EXPECTED[name]
