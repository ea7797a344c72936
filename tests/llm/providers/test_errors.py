"""Errors are mapped at the adapter boundary: every SDK exception class, HTTP error bodies, resets mid-stream."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from tether.errors import (
    ContextOverflowError,
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderConnectionError,
    ProviderError,
    ProviderNotFoundError,
    ProviderRateLimitError,
    ProviderServerError,
)
from tether.llm import ModelRequest, ProviderErrorEvent, StepStart, ToolCallEvent, UserMessage
from tether.llm.providers import AnthropicModel, ClientSettings, OpenAIChatModel, OpenAIResponsesModel
from tether.llm.providers._errors import error_from_status, is_context_overflow, map_error
from tether.tools import Text

from ._replay import FIXTURES, Reply, replay_server, stream_bytes

REQUEST = ModelRequest(messages=[UserMessage(content=(Text("hi"),))])
MODELS = {
    "openai_chat": OpenAIChatModel,
    "openai_responses": OpenAIResponsesModel,
    "anthropic": AnthropicModel,
}


def _all_subclasses(root: type[BaseException]) -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    stack = [root]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return found


def test_every_transport_exception_class_is_a_retryable_connection_error() -> None:
    # What the adapters catch from the HTTP client (``Loaded.errors``) minus the status error, which they never
    # raise (an HTTP error status is read and mapped by its status and body): each one a retryable failure.
    classes = {
        c for root in (httpx2.TransportError, httpx2.StreamError) for c in {root, *_all_subclasses(root)}
    }
    assert len(classes) > 15
    for cls in classes:
        try:
            exc = cls("boom")
        except TypeError:  # a class whose constructor takes more: built bare, as only its type is mapped
            exc = cls.__new__(cls)
        error = map_error(exc)
        assert type(error) is ProviderConnectionError and error.retryable, cls


OPENAI_400 = json.loads((FIXTURES / "openai_chat/vercel-ai__http400-error-body.json").read_text())
OPENAI_OVERFLOW = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
ANTHROPIC_OVERFLOW = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 210000 tokens > 200000 maximum",
    },
}


def _anthropic(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _openai(kind: str, message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


CASES = [
    (400, OPENAI_400, _anthropic("invalid_request_error", "bad"), ProviderBadRequestError),
    (400, OPENAI_OVERFLOW, ANTHROPIC_OVERFLOW, ContextOverflowError),
    (
        401,
        _openai("invalid_request_error", "Incorrect API key", "invalid_api_key"),
        _anthropic("authentication_error", "invalid x-api-key"),
        ProviderAuthError,
    ),
    (
        404,
        _openai("invalid_request_error", "The model `nope` does not exist", "model_not_found"),
        _anthropic("not_found_error", "model: nope"),
        ProviderNotFoundError,
    ),
    (
        429,
        _openai("requests", "Rate limit reached", "rate_limit_exceeded"),
        _anthropic("rate_limit_error", "Number of requests has exceeded your rate limit"),
        ProviderRateLimitError,
    ),
    (
        500,
        _openai("server_error", "The server had an error"),
        _anthropic("api_error", "Internal server error"),
        ProviderServerError,
    ),
    (
        529,
        _openai("server_error", "Overloaded"),
        _anthropic("overloaded_error", "Overloaded"),
        ProviderRateLimitError,
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize("api", sorted(MODELS))
@pytest.mark.parametrize(("status", "openai_body", "anthropic_body", "expected"), CASES)
async def test_http_error_responses_raise_mapped_errors(
    api: str, status: int, openai_body: Any, anthropic_body: Any, expected: type[ProviderError]
) -> None:
    body = anthropic_body if api == "anthropic" else openai_body
    headers = {"retry-after": "7"} if status == 429 else {}
    reply = Reply(json.dumps(body).encode(), status=status, headers=headers, content_type="application/json")
    with replay_server(reply) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="sk-test")
        async with MODELS[api]("m", settings=settings) as model:
            with pytest.raises(ProviderError) as info:
                async for _ in model.stream(REQUEST):
                    pass
    assert type(info.value) is expected
    assert info.value.status == status
    assert info.value.__cause__ is not None
    if status == 429:
        assert isinstance(info.value, ProviderRateLimitError) and info.value.retry_after == 7.0


# (stream, a marker inside a tool call's streamed arguments: the connection is reset right there)
RESET_STREAMS = {
    "openai_chat": ("openai_chat/openai-python__parallel_tool_calls_gpt-4o.sse", b"urgh"),
    "openai_responses": (
        "openai_responses/pydantic-ai__test_openai_responses_streaming_usage.cassette.json#0",
        b'"delta":"666"',
    ),
    "anthropic": ("anthropic/anthropic-sdk-python__tool_use_response.sse", b"Paris"),
}


@pytest.mark.anyio
@pytest.mark.parametrize("api", sorted(MODELS))
async def test_connection_reset_mid_stream_ends_with_a_connection_error_and_no_calls(api: str) -> None:
    name, marker = RESET_STREAMS[api]
    body = stream_bytes(name)
    with replay_server(Reply(body, reset_after=body.index(marker))) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="sk-test")
        async with MODELS[api]("m", settings=settings) as model:
            events = [e async for e in model.stream(REQUEST)]
    assert isinstance(events[0], StepStart)
    last = events[-1]
    assert isinstance(last, ProviderErrorEvent) and isinstance(last.error, ProviderConnectionError)
    assert last.error.retryable
    assert not [e for e in events if isinstance(e, ToolCallEvent)]


@pytest.mark.anyio
async def test_anthropic_error_event_mid_stream_is_mapped_by_its_type() -> None:
    head = stream_bytes("anthropic/anthropic-sdk-python__basic_text_response.sse").split(
        b"event: content_block_stop"
    )[0]
    body = (
        head
        + b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    with replay_server(Reply(body)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="sk-test")
        async with AnthropicModel("m", settings=settings) as model:
            events = [e async for e in model.stream(REQUEST)]
    last = events[-1]
    assert isinstance(last, ProviderErrorEvent) and isinstance(last.error, ProviderRateLimitError)


@pytest.mark.anyio
async def test_responses_failed_event_maps_context_overflow() -> None:
    failed = {
        "type": "response.failed",
        "response": {
            "id": "resp_1",
            "object": "response",
            "status": "failed",
            "output": [],
            "error": {
                "code": "context_length_exceeded",
                "message": "Your input exceeds the context window of this model.",
            },
        },
    }
    body = f"event: response.failed\ndata: {json.dumps(failed)}\n\n".encode()
    with replay_server(Reply(body)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="sk-test")
        async with OpenAIResponsesModel("m", settings=settings) as model:
            events = [e async for e in model.stream(REQUEST)]
    last = events[-1]
    assert isinstance(last, ProviderErrorEvent) and isinstance(last.error, ContextOverflowError)


@pytest.mark.anyio
async def test_unreachable_server_raises_a_connection_error() -> None:
    with replay_server() as server:
        url = server.url
    settings = ClientSettings(base_url=f"{url}/v1", api_key="sk-test")
    async with OpenAIChatModel("m", settings=settings) as model:
        with pytest.raises(ProviderConnectionError):
            async for _ in model.stream(REQUEST):
                pass


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "the request exceeds the available context size, try increasing it",
        "Input is too long for requested model.",
        "Your input exceeds the context window of this model.",
    ],
)
def test_context_overflow_is_detected_from_messages(message: str) -> None:
    assert is_context_overflow(message)
    assert isinstance(error_from_status(400, message), ContextOverflowError)


def test_ordinary_bad_requests_are_not_overflow() -> None:
    assert not is_context_overflow("Invalid value for 'temperature'")
    assert type(error_from_status(422, "Invalid value")) is ProviderBadRequestError


def test_insufficient_quota_is_not_retryable() -> None:
    error = error_from_status(
        429,
        "quota",
        body=_openai("insufficient_quota", "You exceeded your current quota", "insufficient_quota"),
    )
    assert not error.retryable


def test_retry_after_accepts_milliseconds_and_http_dates() -> None:
    assert error_from_status(429, "slow", headers={"retry-after-ms": "1500"}).retry_after == 1.5  # type: ignore[attr-defined]
    dated = error_from_status(429, "slow", headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert dated.retry_after == 0.0  # type: ignore[attr-defined]
