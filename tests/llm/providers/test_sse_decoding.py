"""The SDKs' own SSE decoders on the recorded decoder edge cases, and the pure decode path under arbitrary splits.

The property test drives the real SDK ``Stream`` classes over an in-memory body cut at hypothesis-chosen points
(inside lines and UTF-8 sequences), feeding the adapters' assemblers: the events must not depend on the cuts.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import anthropic._streaming
import httpx2
import openai
import openai._streaming
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.llm import Event, StepStart
from tether.llm.providers._anthropic import AnthropicAssembler
from tether.llm.providers._common import CallIds, ToolNames
from tether.llm.providers._openai_chat import ChatAssembler
from tether.llm.providers._openai_responses import ResponsesAssembler

from ._replay import FIXTURES, api_of, stream_bytes, stream_names
from ._summary import check_invariants, summarize

CASES = json.loads((FIXTURES / "sse_parser_cases/anthropic_sdk_sse_decoder_cases.json").read_text())["cases"]
EXPECTED: dict[str, Any] = json.loads((FIXTURES.parent.parent / "expected_streams.json").read_text())


@pytest.mark.parametrize("decoder", [anthropic._streaming.SSEDecoder, openai._streaming.SSEDecoder])
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_sdk_decoder_handles_recorded_edge_case(case: dict[str, Any], decoder: Any) -> None:
    chunks = [base64.b64decode(c) for c in case["chunks_b64"]]
    events = list(decoder().iter_bytes(iter(chunks)))
    assert len(events) == len(case["expect"])
    for sse, expect in zip(events, case["expect"], strict=True):
        assert sse.event == expect["event"]
        if "data" in expect:
            assert sse.data == expect["data"]
        if "json" in expect:
            assert sse.json() == expect["json"]


def _response(chunks: list[bytes]) -> httpx2.Response:
    def body() -> Iterator[bytes]:
        yield from chunks

    return httpx2.Response(200, content=body(), request=httpx2.Request("POST", "http://127.0.0.1/v1"))


def decode(name: str, chunks: list[bytes]) -> list[Event]:
    """The adapter's path minus the socket: the SDK's Stream over the body (events as parsed JSON, as the adapters
    read them), then the assembler."""
    api = api_of(name)
    ids, names = CallIds(), ToolNames(())
    out: list[Event] = [StepStart()]
    if api == "anthropic":
        with anthropic.Anthropic(api_key="sk-test") as client:
            stream: Any = anthropic.Stream(cast_to=object, response=_response(chunks), client=client)
            assembler: Any = AnthropicAssembler(ids=ids, names=names)
            for item in stream:
                out.extend(assembler.feed(item))
    else:
        with openai.OpenAI(api_key="sk-test") as client:
            stream = openai.Stream(cast_to=object, response=_response(chunks), client=client)
            assembler = (ChatAssembler if api == "openai_chat" else ResponsesAssembler)(ids=ids, names=names)
            try:
                for item in stream:
                    out.extend(assembler.feed(item))
            except openai.APIError:
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
