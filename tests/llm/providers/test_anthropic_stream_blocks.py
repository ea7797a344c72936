"""The Anthropic adapter turns every kind of content block into the one event vocabulary, and a stream that stops
early still ends in a finish or a clear error.

Each stream is served by a real HTTP server on 127.0.0.1 (``_broken.body``) and read through the real SDK.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tether.errors import ProviderConnectionError, ProviderMalformedError
from tether.llm import (
    ModelRequest,
    ProviderErrorEvent,
    ReasoningDelta,
    ReasoningEnd,
    StepFinish,
    TextDelta,
    TextEnd,
    ToolCallEvent,
    ToolResultEvent,
    UserMessage,
)
from tether.llm.providers import AnthropicModel, ClientSettings, Timeouts
from tether.tools import Text

from ._broken import body, broken_server, sse

REQUEST = ModelRequest(messages=[UserMessage(content=(Text("hi"),))])
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [],
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
START = {"type": "message_start", "message": MESSAGE}
STOP = {"type": "message_stop"}


def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": value}


def stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None, **extra},
        "usage": {"output_tokens": 5},
    }


async def events_of(*stream: dict[str, Any]) -> list[Any]:
    with broken_server(body(sse(*stream, named=True))) as server:
        settings = ClientSettings(
            base_url=f"{server.url}/v1",
            api_key="sk-test",
            timeouts=Timeouts(connect=5, first_event=5, idle=5),
        )
        async with AnthropicModel("m", provider="p", settings=settings) as model:
            with anyio.fail_after(30):
                return [event async for event in model.stream(REQUEST)]


@pytest.mark.anyio
async def test_thinking_keeps_its_signature_and_redacted_thinking_its_data() -> None:
    events = await events_of(
        START,
        start(0, {"type": "thinking", "thinking": "hmm", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": " more"}),
        delta(0, {"type": "signature_delta", "signature": "sig"}),
        stop(0),
        start(1, {"type": "redacted_thinking", "data": "opaque"}),
        stop(1),
        message_delta("end_turn"),
        STOP,
    )
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["hmm", " more"]
    ends = [e for e in events if isinstance(e, ReasoningEnd)]
    assert [e.provider_metadata for e in ends] == [
        {"anthropic": {"signature": "sig"}},
        {"anthropic": {"redacted_data": "opaque"}},
    ]
    assert isinstance(events[-1], StepFinish) and events[-1].reason == "stop"


@pytest.mark.anyio
async def test_a_server_tool_call_and_its_result_are_marked_as_run_by_the_provider() -> None:
    result = {"type": "web_search_result", "url": "https://e.x", "title": "t", "encrypted_content": "e"}
    events = await events_of(
        START,
        start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"query": "x"}'}),
        stop(0),
        start(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [result]}),
        stop(1),
        message_delta("end_turn"),
        STOP,
    )
    (call,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert (call.id, call.name, call.input, call.provider_executed) == (
        "srvtoolu_1",
        "web_search",
        {"query": "x"},
        True,
    )
    (found,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert (found.id, found.name) == ("srvtoolu_1", "web_search")
    assert found.result[0]["url"] == "https://e.x"


@pytest.mark.anyio
async def test_a_text_block_keeps_its_initial_text_and_a_delta_for_an_unknown_block_is_ignored() -> None:
    events = await events_of(
        START,
        start(0, {"type": "text", "text": "Hello"}),
        delta(0, {"type": "text_delta", "text": " world"}),
        delta(9, {"type": "text_delta", "text": "ghost"}),
        stop(0),
        message_delta("end_turn"),
        STOP,
    )
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hello", " world"]


@pytest.mark.anyio
async def test_a_stream_without_message_stop_still_finishes_after_message_delta() -> None:
    events = await events_of(
        START,
        start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "hi"}),
        stop(0),
        message_delta("end_turn"),
    )
    assert isinstance(events[-1], StepFinish)
    assert events[-1].reason == "stop"


@pytest.mark.anyio
async def test_a_stream_cut_inside_blocks_closes_them_and_ends_in_a_connection_error() -> None:
    events = await events_of(
        START,
        start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "hi"}),
        start(1, {"type": "thinking", "thinking": "", "signature": ""}),
    )
    assert [type(e) for e in events[-3:]] == [TextEnd, ReasoningEnd, ProviderErrorEvent]
    assert isinstance(events[-1].error, ProviderConnectionError)
    assert "the stream ended before the model finished its response" in events[-1].message


@pytest.mark.anyio
async def test_tool_calls_cut_off_by_the_output_limit_are_incomplete_and_the_step_finishes_with_length() -> (
    None
):
    events = await events_of(
        START,
        start(0, {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"text": "abc'}),
        stop(0),
        start(1, {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {}}),
        delta(1, {"type": "input_json_delta", "partial_json": '{"te'}),
        message_delta("max_tokens", stop_details={"type": "max_tokens"}),
        STOP,
    )
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.incomplete) for c in calls] == [("toolu_1", True), ("toolu_2", True)]
    finish = events[-1]
    assert isinstance(finish, StepFinish) and finish.reason == "length"
    assert finish.provider_metadata is not None
    assert finish.provider_metadata["anthropic"]["stop_details"]["type"] == "max_tokens"


WRONG_SHAPES: dict[str, tuple[list[dict[str, Any]], str]] = {
    "a text delta that is a number": (
        [start(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta", "text": 7})],
        "a text_delta's text must be a string, not int",
    ),
    "a text delta without text": (
        [start(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta"})],
        "a text_delta's text must be a string, not NoneType",
    ),
    "a tool name that is a list": (
        [start(0, {"type": "tool_use", "id": "toolu_1", "name": ["read"], "input": {}})],
        "a tool_use block's name must be a string, not list",
    ),
    "a block type that is a number": ([start(0, {"type": 3})], "a content block's type must be a string"),
    "usage that is a string": (
        [{"type": "message_delta", "delta": {}, "usage": "5"}],
        "usage must be an object",
    ),
    "a stop reason that is an object": ([message_delta({"why": "done"})], "a stop_reason must be a string"),  # type: ignore[arg-type]
    "a block without its index": ([{"type": "content_block_stop"}], "KeyError: 'index'"),
}


@pytest.mark.anyio
@pytest.mark.parametrize("case", sorted(WRONG_SHAPES))
async def test_an_event_of_the_wrong_shape_ends_the_stream_as_malformed_naming_what_was_wrong(
    case: str,
) -> None:
    stream, expected = WRONG_SHAPES[case]
    events = await events_of(START, *stream, STOP)
    error = events[-1]
    assert isinstance(error, ProviderErrorEvent) and isinstance(error.error, ProviderMalformedError)
    assert expected in error.message
    assert not [e for e in events if isinstance(e, ToolCallEvent | StepFinish)]
