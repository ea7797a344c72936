"""Request options are typed (``RequestOptions``): an unknown key, a wrong type or an option the API does not take
is a UsageError naming the key and the accepted ones, never silently dropped. Also: what the one body path of each
adapter derives from the history (call ids, Responses result item types)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.errors import UsageError
from tether.llm import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCallContent,
    ToolMessage,
    ToolResultContent,
    UserMessage,
)
from tether.llm.providers import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from tether.testing import ScriptedModel
from tether.tools import Text

Adapter = OpenAIChatModel | OpenAIResponsesModel | AnthropicModel
HI = [UserMessage(content=(Text("hi"),))]


def chat(**kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel("m", provider="local", **kwargs)


def responses(**kwargs: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("m", provider="local", **kwargs)


def anthropic(**kwargs: Any) -> AnthropicModel:
    return AnthropicModel("m", provider="local", **kwargs)


ADAPTERS = pytest.mark.parametrize(
    "make", [chat, responses, anthropic], ids=["chat", "responses", "anthropic"]
)


def body_of(model: Adapter, **options: Any) -> dict[str, Any]:
    body, _ = model.build_body(ModelRequest(messages=HI, options=options))  # pyright: ignore[reportArgumentType]
    return json.loads(body)


def test_an_unknown_option_key_is_rejected_naming_it_and_the_accepted_keys() -> None:
    with pytest.raises(UsageError) as caught:
        ModelRequest(messages=HI, options={"temprature": 0.2})  # pyright: ignore[reportArgumentType]
    message = caught.value.message
    assert "unknown request option 'temprature'" in message
    assert "temperature" in message and "top_p" in message and "extra_body" in message


def test_an_option_of_the_wrong_type_is_rejected() -> None:
    with pytest.raises(UsageError, match="request option 'temperature'"):
        ModelRequest(options={"temperature": "hot"})  # pyright: ignore[reportArgumentType]
    with pytest.raises(UsageError, match="request option 'max_tokens'"):
        ModelRequest(options={"max_tokens": 1.5})  # pyright: ignore[reportArgumentType]


def test_provider_specific_keys_of_the_old_options_are_rejected_not_dropped() -> None:
    for key in ("stop_sequences", "store", "metadata", "previous_response_id", "thinking"):
        with pytest.raises(UsageError, match=f"unknown request option '{key}'"):
            ModelRequest(options={key: True})  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("make", "key", "value"),
    [
        (anthropic, "seed", 1),
        (anthropic, "reasoning_effort", "low"),
        (responses, "stop", ["x"]),
        (chat, "thinking_budget", 1024),
        (chat, "top_k", 3),
    ],
)
def test_an_option_the_api_does_not_take_is_a_usage_error(
    make: Callable[[], Adapter], key: str, value: Any
) -> None:
    with pytest.raises(UsageError) as caught:
        body_of(make(), **{key: value})
    message = caught.value.message
    assert f"does not take the request option {key!r}" in message
    assert "temperature" in message and "extra_body" in message


def test_each_api_sends_the_options_under_its_own_names() -> None:
    assert body_of(chat(max_tokens_field="max_tokens"), max_tokens=9, stop=["x"], seed=2)["max_tokens"] == 9
    sent = body_of(chat(), max_tokens=9, stop=["x"], seed=2, temperature=0.5, reasoning_effort="low")
    assert (sent["max_completion_tokens"], sent["stop"], sent["seed"]) == (9, ["x"], 2)
    assert (sent["temperature"], sent["reasoning_effort"]) == (0.5, "low")
    sent = body_of(responses(), max_tokens=9, reasoning_effort="high", top_p=0.9)
    assert sent["max_output_tokens"] == 9 and sent["top_p"] == 0.9
    assert sent["reasoning"] == {"effort": "high", "summary": "auto"} and sent["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"]
    sent = body_of(anthropic(), max_tokens=9, stop=["x"], thinking_budget=1024, top_k=4)
    assert (sent["max_tokens"], sent["stop_sequences"], sent["top_k"]) == (9, ["x"], 4)
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}


@ADAPTERS
def test_extra_body_members_are_sent_as_given_and_last(make: Callable[[], Adapter]) -> None:
    sent = body_of(make(), temperature=0.1, extra_body={"temperature": 0.7, "store": True, "custom": [1]})
    assert (sent["temperature"], sent["store"], sent["custom"]) == (0.7, True, [1])


def step(i: int) -> tuple[AssistantMessage, ToolMessage]:
    call = ToolCallContent(call_id=f"call_{i}", name="read", input={"path": f"f{i}.txt"})
    result = ToolResultContent(call_id=f"call_{i}", name="read", content=(Text("x"),))
    return AssistantMessage(content=(call,)), ToolMessage(results=(result,))


@ADAPTERS
def test_call_ids_of_the_history_are_never_handed_out_again(make: Callable[[], Adapter]) -> None:
    history: list[Message] = [UserMessage(content=(Text("go"),)), *step(0)]
    _, assembler = make().build_body(ModelRequest(messages=history))
    assert assembler._ids.assign("call_0") != "call_0"  # pyright: ignore  # reused by the server: a fresh id
    assert assembler._ids.assign("call_new") == "call_new"  # pyright: ignore


def test_a_tool_result_follows_its_calls_item_type_in_responses() -> None:
    call = ToolCallContent(
        call_id="p1", name="patch", input="text", provider_metadata={"openai": {"type": "custom_tool_call"}}
    )
    result = ToolMessage(results=(ToolResultContent(call_id="p1", name="patch", content=(Text("ok"),)),))
    body, _ = responses().build_body(ModelRequest(messages=[AssistantMessage(content=(call,)), result]))
    assert json.loads(body)["input"][-1]["type"] == "custom_tool_call_output"


@pytest.mark.anyio
async def test_a_prompt_with_an_unknown_option_fails_with_the_usage_error(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(await rt.location(project), agent="build")
        model = ScriptedModel([])  # no step is ever asked for
        with (
            model,
            anyio.fail_after(5),
            pytest.raises(UsageError, match="unknown request option 'temprature'"),
        ):
            await session.prompt("go", model=model, options={"temprature": 0.1})
        assert model.requests == []
