"""Each model sends its requests over one kept-alive HTTP connection, with its API's headers (issue 38): through the
local HTTP/1.1 client (a plain http:// root) and through httpx (a client the caller gives, as TLS and proxies use)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from tether.errors import ProviderConnectionError, ProviderRateLimitError
from tether.llm import ModelRequest, ProviderErrorEvent, StepFinish, UserMessage
from tether.llm.providers import AnthropicModel, ClientSettings, OpenAIChatModel, OpenAIResponsesModel
from tether.tools import Text

from ._replay import Reply, replay_server, stream_bytes

REQUEST = ModelRequest(messages=[UserMessage(content=(Text("hi"),))])
STREAMS: dict[str, tuple[Any, str]] = {
    "openai_chat": (OpenAIChatModel, "openai_chat/openai-python__parallel_tool_calls_gpt-4o.sse"),
    "openai_responses": (
        OpenAIResponsesModel,
        "openai_responses/pydantic-ai__test_openai_responses_streaming_usage.cassette.json#0",
    ),
    "anthropic": (AnthropicModel, "anthropic/anthropic-sdk-python__basic_text_response.sse"),
}


@pytest.fixture(params=["local", "httpx"])
async def given(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """The ``client=`` a model is built with: none (the local client), or an httpx client the test closes."""
    if request.param == "local":
        yield None
        return
    async with httpx2.AsyncClient() as client:
        yield client


@pytest.mark.anyio
@pytest.mark.parametrize("api", sorted(STREAMS))
async def test_every_step_of_a_model_reuses_one_connection(api: str, given: Any) -> None:
    model_cls, name = STREAMS[api]
    body = stream_bytes(name)
    with replay_server(*(Reply(body) for _ in range(3))) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="sk-test")
        async with model_cls("m", settings=settings, client=given) as model:
            for _ in range(3):
                events = [e async for e in model.stream(REQUEST)]
                assert any(isinstance(e, StepFinish) for e in events)
    assert len(server.requests) == 3
    assert server.connections == 1  # the body was read to its end: the connection went back to the pool


@pytest.mark.anyio
async def test_openai_requests_carry_the_bearer_key_and_the_entry_headers_last(given: Any) -> None:
    body = stream_bytes(STREAMS["openai_chat"][1])
    with replay_server(Reply(body)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="sk-test", headers={"X-Team": "a"})
        async with OpenAIChatModel("m", settings=settings, client=given) as model:
            [_ async for _ in model.stream(REQUEST)]
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["x-team"] == "a"
    assert request.headers["content-type"] == "application/json"


@pytest.mark.anyio
async def test_anthropic_requests_carry_the_key_and_the_api_version(given: Any) -> None:
    body = stream_bytes(STREAMS["anthropic"][1])
    with replay_server(Reply(body)) as server:
        settings = ClientSettings(base_url=server.url, api_key="sk-ant")
        async with AnthropicModel("m", settings=settings, client=given) as model:
            [_ async for _ in model.stream(REQUEST)]
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers


@pytest.mark.anyio
async def test_a_provider_without_a_key_sends_no_auth_header() -> None:
    body = stream_bytes(STREAMS["openai_chat"][1])
    with replay_server(Reply(body)) as server:
        async with OpenAIChatModel("m", settings=ClientSettings(base_url=f"{server.url}/v1")) as model:
            [_ async for _ in model.stream(REQUEST)]
    [request] = server.requests
    assert "authorization" not in request.headers


@pytest.mark.anyio
async def test_the_api_root_comes_from_the_environment_when_the_entry_has_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = stream_bytes(STREAMS["openai_chat"][1])
    with replay_server(Reply(body)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
        async with OpenAIChatModel("m", settings=ClientSettings(api_key="k")) as model:
            [_ async for _ in model.stream(REQUEST)]
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["openai-organization"] == "org-1"


@pytest.mark.anyio
async def test_through_httpx_an_error_status_and_a_reset_map_as_through_the_local_client() -> None:
    body = stream_bytes(STREAMS["openai_chat"][1])
    limited = Reply(b'{"error": {"message": "slow down", "code": "rate_limit_exceeded"}}', status=429)
    limited.headers["retry-after"] = "3"
    with replay_server(limited, Reply(body, reset_after=body.index(b"urgh"))) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="k")
        async with (
            httpx2.AsyncClient() as client,
            OpenAIChatModel("m", settings=settings, client=client) as model,
        ):
            with pytest.raises(ProviderRateLimitError) as info:
                [e async for e in model.stream(REQUEST)]
            events = [e async for e in model.stream(REQUEST)]
    assert info.value.retry_after == 3.0 and info.value.status == 429 and server.url in info.value.message
    last = events[-1]
    assert isinstance(last, ProviderErrorEvent) and isinstance(last.error, ProviderConnectionError)


@pytest.mark.anyio
async def test_through_httpx_a_refused_connection_names_its_cause() -> None:
    with replay_server() as server:
        url = server.url
    async with httpx2.AsyncClient() as client:
        model = OpenAIChatModel("m", settings=ClientSettings(base_url=f"{url}/v1"), client=client)
        with pytest.raises(ProviderConnectionError) as info:
            [e async for e in model.stream(REQUEST)]
    assert "Connection refused" in info.value.message and info.value.retryable
