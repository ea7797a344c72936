"""Broken providers end in a clear ProviderError, never a hang or a traceback (issue 13 §3).

Each test runs a real HTTP server on 127.0.0.1 (``_broken``) that plays one broken behaviour, for each adapter
family where it applies, and drives the adapter's stream. Deadlines are configured small; nothing asserts a time.
"""

from __future__ import annotations

import socket
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from tether.errors import (
    ProviderConnectionError,
    ProviderError,
    ProviderMalformedError,
    ProviderRateLimitError,
    ProviderServerError,
    ProviderTimeoutError,
)
from tether.llm import ModelRequest, ProviderErrorEvent, RetryPolicy, StepStart, TextDelta, UserMessage
from tether.llm.providers import (
    AnthropicModel,
    ClientSettings,
    OpenAIChatModel,
    OpenAIResponsesModel,
    Timeouts,
)
from tether.llm.providers._common import MAX_DEPTH, too_deep
from tether.tools import Text

from ._broken import BrokenServer, body, broken_server, chat_chunk, error, silence, sse, then_forever

MODELS: dict[str, Any] = {
    "chat": OpenAIChatModel,
    "responses": OpenAIResponsesModel,
    "anthropic": AnthropicModel,
}
APIS = sorted(MODELS)
REQUEST = ModelRequest(messages=[UserMessage(content=(Text("hi"),))])
DEEP = "[" * 200_000 + "]" * 200_000
SMALL = Timeouts(connect=5, first_event=0.3, idle=0.3)
GENEROUS = Timeouts(connect=5, first_event=30, idle=30)
"""For tests of what is not a deadline: a loaded machine must not turn a malformed stream into a timeout."""


_RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "m",
    "output": [],
    "status": "in_progress",
}
_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [],
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


def first_event(api: str) -> bytes:
    """One well-formed event that starts a response."""
    if api == "chat":
        return sse(chat_chunk({"role": "assistant", "content": "Hi"}))
    if api == "responses":
        return sse({"type": "response.created", "sequence_number": 0, "response": _RESPONSE}, named=True)
    return sse({"type": "message_start", "message": _MESSAGE}, named=True)


def deep_tool_call(api: str) -> bytes:
    """A complete response whose one tool call has arguments nested 200,000 levels deep."""
    if api == "chat":
        call = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "echo", "arguments": DEEP},
        }
        return (
            sse(chat_chunk({"role": "assistant", "tool_calls": [call]}), chat_chunk({}, "tool_calls"))
            + b"data: [DONE]\n\n"
        )
    if api == "responses":
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "echo", "arguments": ""}
        done = {**item, "arguments": DEEP, "status": "completed"}
        return sse(
            {"type": "response.created", "sequence_number": 0, "response": _RESPONSE},
            {"type": "response.output_item.added", "output_index": 0, "sequence_number": 1, "item": item},
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_1",
                "output_index": 0,
                "sequence_number": 2,
                "delta": DEEP,
            },
            {"type": "response.output_item.done", "output_index": 0, "sequence_number": 3, "item": done},
            {
                "type": "response.completed",
                "sequence_number": 4,
                "response": {**_RESPONSE, "status": "completed", "output": [done]},
            },
            named=True,
        )
    block = {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {}}
    return sse(
        {"type": "message_start", "message": _MESSAGE},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": DEEP},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {}},
        {"type": "message_stop"},
        named=True,
    )


def missing_field(api: str) -> bytes:
    """An event that lacks a field the API always sends."""
    if api == "chat":
        return sse({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"})
    if api == "responses":
        return first_event(api) + sse(
            {"type": "response.output_text.delta", "sequence_number": 1}, named=True
        )
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    return first_event(api) + sse(block, {"type": "content_block_delta", "index": 0}, named=True)


def model_for(api: str, server: BrokenServer, timeouts: Timeouts = SMALL) -> Any:
    settings = ClientSettings(base_url=f"{server.url}/v1", api_key="sk-test", timeouts=timeouts)
    return MODELS[api]("m", provider="broken", settings=settings)


async def failure_of(api: str, server: BrokenServer, timeouts: Timeouts = SMALL) -> ProviderError:
    """The ProviderError the stream ends with: raised before ``StepStart``, or reported as its last event."""
    events: list[Any] = []
    try:
        async with model_for(api, server, timeouts) as model:
            with anyio.fail_after(30):
                async for event in model.stream(REQUEST):
                    events.append(event)
    except ProviderError as exc:
        assert not events
        return exc
    assert isinstance(events[0], StepStart)
    last = events[-1]
    assert isinstance(last, ProviderErrorEvent), events[-3:]
    assert isinstance(last.error, ProviderError)
    assert last.message == last.error.message
    return last.error


def assert_names_provider_and_url(error: ProviderError, server: BrokenServer) -> None:
    assert error.message.startswith("broken ("), error.message
    assert error.message.count(server.url) == 1, error.message


# Deadlines


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_keep_alive_comments_after_the_first_event_end_in_the_idle_deadline(api: str) -> None:
    with broken_server(then_forever(first_event(api))) as server:
        error = await failure_of(api, server)
    assert isinstance(error, ProviderTimeoutError) and error.retryable
    assert (error.deadline, error.seconds) == ("idle", 0.3)
    assert "no stream event for 0.3 s" in error.message and "timeouts.idle" in error.message
    assert_names_provider_and_url(error, server)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "empty", [{"choices": []}, {"choices": [{"index": 0, "delta": {}, "finish_reason": None}]}]
)
async def test_empty_chunks_after_the_first_event_end_in_the_idle_deadline(empty: dict[str, Any]) -> None:
    drip = sse({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m", **empty})
    with broken_server(then_forever(first_event("chat"), comment=drip)) as server:
        error = await failure_of("chat", server)
    assert isinstance(error, ProviderTimeoutError) and error.retryable
    assert error.deadline == "idle"


@pytest.mark.anyio
async def test_anthropic_pings_after_the_first_event_end_in_the_idle_deadline() -> None:
    drip = sse({"type": "ping"}, named=True)
    with broken_server(then_forever(first_event("anthropic"), comment=drip)) as server:
        error = await failure_of("anthropic", server)
    assert isinstance(error, ProviderTimeoutError) and error.deadline == "idle"


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_keep_alive_comments_alone_end_in_the_first_event_deadline(api: str) -> None:
    with broken_server(then_forever(b"")) as server:
        error = await failure_of(api, server)
    assert isinstance(error, ProviderTimeoutError)
    assert (error.deadline, error.seconds) == ("first_event", 0.3)


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_headers_then_silence_end_in_the_first_event_deadline(api: str) -> None:
    with broken_server(silence) as server:
        error = await failure_of(api, server)
    assert isinstance(error, ProviderTimeoutError) and error.retryable
    assert error.deadline == "first_event"
    assert "timeouts.first_event" in error.message
    assert_names_provider_and_url(error, server)


@pytest.mark.anyio
async def test_events_that_keep_coming_never_trip_the_idle_deadline() -> None:
    # Each event arrives well within the idle deadline, the whole stream takes longer than it.
    chunks = [first_event("chat")] + [sse(chat_chunk({"content": "x"}))] * 3
    done = sse(chat_chunk({}, "stop")) + b"data: [DONE]\n\n"
    with broken_server(body(b"".join(chunks) + done)) as server:
        async with model_for("chat", server) as model:
            events = [e async for e in model.stream(REQUEST)]
    assert sum(isinstance(e, TextDelta) for e in events) == 4
    assert not any(isinstance(e, ProviderErrorEvent) for e in events)


# Malformed streams


def _bad_utf8(api: str) -> bytes:
    return first_event(api) + b'event: content_block_delta\ndata: {"type": "\xff\xfe broken"}\n\n'


def _not_json(api: str) -> bytes:
    return first_event(api) + b"event: content_block_delta\ndata: {this is not json\n\n"


MALFORMED = {
    "non-UTF-8 bytes": (_bad_utf8, "not UTF-8"),
    "a data line that is not JSON": (_not_json, "not JSON"),
    "a missing field": (missing_field, "{field}"),
    "tool arguments nested 200,000 levels deep": (deep_tool_call, f"more than {MAX_DEPTH} levels deep"),
}


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("case", sorted(MALFORMED))
async def test_a_malformed_stream_ends_in_a_malformed_error_naming_what_was_wrong(
    api: str, case: str
) -> None:
    make, expected = MALFORMED[case]
    with broken_server(body(make(api))) as server:
        error = await failure_of(api, server, GENEROUS)
    assert isinstance(error, ProviderMalformedError), (type(error), error.message)
    assert not error.retryable
    assert expected.format(field="choices" if api == "chat" else "delta") in error.message
    assert_names_provider_and_url(error, server)


@pytest.mark.anyio
async def test_choices_null_is_named() -> None:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": None}
    with broken_server(body(first_event("chat") + sse(chunk))) as server:
        error = await failure_of("chat", server, GENEROUS)
    assert isinstance(error, ProviderMalformedError)
    assert "choices: null" in error.message
    assert_names_provider_and_url(error, server)


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_an_html_page_with_http_200_is_a_malformed_error(api: str) -> None:
    page = b"<!doctype html><html><body>Welcome to nginx!</body></html>"
    with broken_server(body(page, content_type="text/html; charset=utf-8")) as server:
        error = await failure_of(api, server)
    assert isinstance(error, ProviderMalformedError)
    assert "HTML page" in error.message and "base_url" in error.message
    assert_names_provider_and_url(error, server)


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_a_stream_cut_before_its_finish_is_a_retryable_error_naming_the_url(api: str) -> None:
    with broken_server(body(first_event(api))) as server:
        error = await failure_of(api, server)
    assert isinstance(error, ProviderConnectionError) and error.retryable
    assert "ended before the model finished" in error.message
    assert_names_provider_and_url(error, server)


def test_the_depth_guard_counts_only_brackets_outside_strings() -> None:
    assert too_deep(DEEP)
    assert not too_deep('{"text": "' + "[" * 10_000 + '"}')
    assert not too_deep("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert too_deep("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert not too_deep('{"a": [' + ",".join(['{"k": "v\\""}'] * 1000) + "]}")


# HTTP errors and connections


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_a_huge_retry_after_is_read_and_the_wait_is_capped(api: str) -> None:
    with broken_server(error(429, {"error": {"message": "slow down"}}, retry_after="99999999")) as server:
        error_ = await failure_of(api, server)
    assert isinstance(error_, ProviderRateLimitError) and error_.retry_after == 99999999
    assert server.requests == 1  # the SDK does not retry on its own
    assert RetryPolicy().delay(1, error_) == 60
    assert RetryPolicy(max_retry_after=0.5).delay(3, error_) == 0.5


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_a_503_with_retry_after_is_retryable_and_carries_the_wait(api: str) -> None:
    with broken_server(error(503, {"error": {"message": "maintenance"}}, retry_after="7")) as server:
        error_ = await failure_of(api, server)
    assert isinstance(error_, ProviderServerError) and error_.retryable
    assert error_.retry_after == 7
    assert RetryPolicy().delay(1, error_) == 7
    assert RetryPolicy(max_retry_after=2).delay(1, error_) == 2


def test_retry_after_ms_and_http_dates_are_honoured_up_to_the_cap() -> None:
    from tether.llm.providers._errors import retry_after

    assert retry_after({"retry-after-ms": "1500"}) == 1.5
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    policy = RetryPolicy(max_retry_after=60)
    assert policy.delay(1, ProviderRateLimitError("x", retry_after=1.5)) == 1.5
    waits = [policy.delay(n, ProviderConnectionError("x")) for n in (1, 2, 3, 4, 5, 6, 7)]
    assert all(0.5 * min(30, 2 ** (n - 1)) <= w <= min(30, 2 ** (n - 1)) for n, w in enumerate(waits, 1))


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_a_connection_closed_without_an_answer_is_tried_once_and_names_the_url(api: str) -> None:
    from ._broken import hang_up

    with broken_server(hang_up) as server:
        error_ = await failure_of(api, server)
    assert isinstance(error_, ProviderConnectionError) and error_.retryable
    assert server.connections == 1  # no SDK retries under tether's one retry layer
    assert_names_provider_and_url(error_, server)


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_a_refused_connection_names_the_url_it_tried(api: str) -> None:
    server = BrokenServer()  # bound, never started, closed: nothing listens on its port any more
    server.close()
    error_ = await failure_of(api, server)
    assert isinstance(error_, ProviderConnectionError) and error_.retryable
    assert "Connection refused" in error_.message
    assert_names_provider_and_url(error_, server)


@pytest.mark.anyio
@pytest.mark.parametrize("api", APIS)
async def test_a_server_that_never_accepts_ends_in_the_connect_deadline(api: str) -> None:
    # A listening socket with a full accept queue: Linux drops further SYNs, so the connection never opens.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        host, port = listener.getsockname()
        fillers = [socket.socket() for _ in range(4)]
        try:
            for filler in fillers:
                filler.setblocking(False)
                filler.connect_ex((host, port))
            nowhere: Any = SimpleNamespace(url=f"http://{host}:{port}")
            error_ = await failure_of(api, nowhere, Timeouts(connect=0.3, first_event=30, idle=30))
        finally:
            for filler in fillers:
                filler.close()
    assert isinstance(error_, ProviderTimeoutError) and error_.retryable
    assert (error_.deadline, error_.seconds) == ("connect", 0.3)
    assert "could not connect within 0.3 s (timeouts.connect)" in error_.message
    assert f"http://{host}:{port}" in error_.message
