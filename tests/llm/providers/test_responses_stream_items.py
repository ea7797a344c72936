"""The OpenAI Responses adapter turns every kind of output item into the one event vocabulary: reasoning summaries,
text that arrives before its item, calls announced only when done, custom tools, cut-off calls and failures.

Each stream is served by a real HTTP server on 127.0.0.1 (``_broken.body``) and read through the real SDK.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tether.errors import ProviderRateLimitError, ProviderServerError
from tether.llm import (
    ModelRequest,
    ProviderErrorEvent,
    ReasoningDelta,
    ReasoningEnd,
    StepFinish,
    StepStart,
    TextDelta,
    TextStart,
    ToolCallEvent,
    UserMessage,
)
from tether.llm.providers import ClientSettings, OpenAIResponsesModel, Timeouts
from tether.tools import Text

from ._broken import body, broken_server, sse

REQUEST = ModelRequest(messages=[UserMessage(content=(Text("hi"),))])
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "m",
    "output": [],
    "status": "in_progress",
}
CREATED = {"type": "response.created", "response": RESPONSE}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "echo",
    "arguments": '{"text": "a"}',
    "status": "completed",
}


def done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def summary_part(index: int) -> dict[str, Any]:
    part = {"type": "summary_text", "text": ""}
    return {
        "type": "response.reasoning_summary_part.added",
        "item_id": "rs_1",
        "output_index": 0,
        "summary_index": index,
        "part": part,
    }


def summary_delta(index: int, text: str) -> dict[str, Any]:
    return {
        "type": "response.reasoning_summary_text.delta",
        "item_id": "rs_1",
        "output_index": 0,
        "summary_index": index,
        "delta": text,
    }


async def events_of(*stream: dict[str, Any]) -> list[Any]:
    numbered = [{**event, "sequence_number": n} for n, event in enumerate(stream)]
    with broken_server(body(sse(*numbered, named=True))) as server:
        settings = ClientSettings(
            base_url=f"{server.url}/v1",
            api_key="sk-test",
            timeouts=Timeouts(connect=5, first_event=5, idle=5),
        )
        async with OpenAIResponsesModel("m", provider="p", settings=settings) as model:
            with anyio.fail_after(30):
                return [event async for event in model.stream(REQUEST)]


@pytest.mark.anyio
async def test_reasoning_summaries_are_separated_and_the_encrypted_content_is_kept() -> None:
    events = await events_of(
        CREATED,
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1", "summary": []},
        },
        summary_part(0),
        summary_delta(0, "first"),
        summary_part(1),
        summary_delta(1, "second"),
        done(0, {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"}),
        {"type": "response.completed", "response": {**RESPONSE, "status": "completed"}},
    )
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["first", "\n\n", "second"]
    (end,) = [e for e in events if isinstance(e, ReasoningEnd)]
    assert end.provider_metadata == {"openai": {"item_id": "rs_1", "encrypted_content": "enc"}}
    assert isinstance(events[-1], StepFinish) and events[-1].reason == "stop"


@pytest.mark.anyio
async def test_text_before_its_item_and_calls_announced_only_when_done_still_arrive_in_order() -> None:
    custom = {
        "type": "custom_tool_call",
        "id": "ct_1",
        "call_id": "call_2",
        "name": "grammar",
        "input": "raw text",
    }
    events = await events_of(
        CREATED,
        {
            "type": "response.output_text.delta",
            "item_id": "msg_9",
            "output_index": 1,
            "content_index": 0,
            "delta": "early",
            "logprobs": [],
        },
        done(
            1, {"type": "message", "id": "msg_9", "role": "assistant", "status": "completed", "content": []}
        ),
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "unknown",
            "output_index": 2,
            "delta": "x",
        },
        done(2, CALL),
        done(3, custom),
        done(
            4,
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"type": "search", "query": "q"},
            },
        ),
        {"type": "response.completed", "response": {**RESPONSE, "status": "completed"}},
    )
    assert [type(e) for e in events[:3]] == [StepStart, TextStart, TextDelta]
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name, c.input) for c in calls] == [
        ("call_1", "echo", {"text": "a"}),
        ("call_2", "grammar", "raw text"),
    ]
    assert isinstance(events[-1], StepFinish) and events[-1].reason == "tool-calls"


@pytest.mark.anyio
async def test_a_call_cut_off_by_a_content_filter_is_incomplete_and_never_complete() -> None:
    events = await events_of(
        CREATED,
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**CALL, "arguments": "", "status": "in_progress"},
        },
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": '{"te',
        },
        {
            "type": "response.incomplete",
            "response": {
                **RESPONSE,
                "status": "incomplete",
                "incomplete_details": {"reason": "content_filter"},
            },
        },
    )
    (call,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert (call.id, call.input, call.incomplete) == ("call_1", '{"te', True)
    assert isinstance(events[-1], StepFinish) and events[-1].reason == "content-filter"


@pytest.mark.anyio
async def test_a_failed_response_ends_the_stream_with_its_error_and_ignores_what_follows() -> None:
    failed = {**RESPONSE, "status": "failed", "error": {"code": "server_error", "message": "boom"}}
    events = await events_of(
        CREATED,
        {"type": "response.failed", "response": failed},
        {
            "type": "response.output_text.delta",
            "item_id": "m",
            "output_index": 0,
            "content_index": 0,
            "delta": "x",
            "logprobs": [],
        },
    )
    assert [type(e) for e in events] == [StepStart, ProviderErrorEvent]
    assert isinstance(events[-1].error, ProviderServerError) and events[-1].message == "boom"


@pytest.mark.anyio
async def test_an_error_event_maps_its_code_to_the_error_class() -> None:
    events = await events_of(
        CREATED, {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None}
    )
    assert isinstance(events[-1], ProviderErrorEvent)
    assert isinstance(events[-1].error, ProviderRateLimitError) and events[-1].message == "slow down"


@pytest.mark.anyio
async def test_an_apply_patch_operation_is_the_object_sent_without_its_null_members() -> None:
    operation = {"type": "delete_file", "path": "old.txt", "diff": None}
    item = {"type": "apply_patch_call", "id": "apc_1", "call_id": "call_p", "operation": operation}
    completed = {"type": "response.completed", "response": {**RESPONSE, "status": "completed"}}
    events = await events_of(CREATED, done(0, item), completed)
    (call,) = [e for e in events if isinstance(e, ToolCallEvent)]
    assert (call.id, call.name, call.input) == (
        "call_p",
        "apply_patch",
        {"type": "delete_file", "path": "old.txt"},
    )
    assert isinstance(events[-1], StepFinish) and events[-1].reason == "tool-calls"


@pytest.mark.anyio
async def test_a_text_delta_whose_item_id_is_not_a_string_ends_the_stream_as_malformed() -> None:
    events = await events_of(CREATED, {"type": "response.output_text.delta", "item_id": ["x"], "delta": "a"})
    error = events[-1]
    assert isinstance(error, ProviderErrorEvent) and "needs a string item_id and delta" in error.message
