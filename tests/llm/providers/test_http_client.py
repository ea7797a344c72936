"""Each model sends its requests over one kept-alive HTTP connection, with its API's headers (issue 38)."""

from __future__ import annotations

from typing import Any

import pytest

from tether.llm import ModelRequest, StepFinish, UserMessage
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


@pytest.mark.anyio
@pytest.mark.parametrize("api", sorted(STREAMS))
async def test_every_step_of_a_model_reuses_one_connection(api: str) -> None:
    model_cls, name = STREAMS[api]
    body = stream_bytes(name)
    with replay_server(*(Reply(body) for _ in range(3))) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="sk-test")
        async with model_cls("m", settings=settings) as model:
            for _ in range(3):
                events = [e async for e in model.stream(REQUEST)]
                assert any(isinstance(e, StepFinish) for e in events)
    assert len(server.requests) == 3
    assert server.connections == 1  # the body was read to its end: the connection went back to the pool


@pytest.mark.anyio
async def test_openai_requests_carry_the_bearer_key_and_the_entry_headers_last() -> None:
    body = stream_bytes(STREAMS["openai_chat"][1])
    with replay_server(Reply(body)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="sk-test", headers={"X-Team": "a"})
        async with OpenAIChatModel("m", settings=settings) as model:
            [_ async for _ in model.stream(REQUEST)]
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["x-team"] == "a"
    assert request.headers["content-type"] == "application/json"


@pytest.mark.anyio
async def test_anthropic_requests_carry_the_key_and_the_api_version() -> None:
    body = stream_bytes(STREAMS["anthropic"][1])
    with replay_server(Reply(body)) as server:
        settings = ClientSettings(base_url=server.url, api_key="sk-ant")
        async with AnthropicModel("m", settings=settings) as model:
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
