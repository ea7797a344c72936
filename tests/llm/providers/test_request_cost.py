"""Law 10 for request building: a step converts only the messages that are new, whatever the history's length.

Holds for every adapter (Chat Completions, Responses, Anthropic Messages). Counts conversions (never time): histories grown one step at a time to 10 and to 1,000 messages cost the same
number of conversions per step. The bytes sent equal the plain body builder's output.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tether.llm import (
    AssistantMessage,
    Message,
    ModelRequest,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolMessage,
    ToolResultContent,
    UserMessage,
)
from tether.llm.providers import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from tether.llm.providers._anthropic import build_anthropic_body
from tether.llm.providers._common import ToolNames
from tether.llm.providers._openai_chat import build_chat_body
from tether.llm.providers._openai_responses import build_responses_body
from tether.tools import File, Text, ToolDefinition

READ = ToolDefinition(
    name="read",
    description="Read a file",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    },
)
DOTTED = ToolDefinition(name="fs.read", description="", input_schema={"type": "object", "properties": {}})


def step(i: int) -> tuple[AssistantMessage, ToolMessage]:
    call = ToolCallContent(call_id=f"call_{i}", name="read", input={"path": f"f{i}.txt"})
    return (
        AssistantMessage(content=(ReasoningContent(text="think"), TextContent(text=f"step {i}"), call)),
        ToolMessage(
            results=(ToolResultContent(call_id=f"call_{i}", name="read", content=(Text("x" * 50),)),)
        ),
    )


Adapter = OpenAIChatModel | OpenAIResponsesModel | AnthropicModel


def chat(**kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel("m", provider="local", **kwargs)


def responses(**kwargs: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("m", provider="local", **kwargs)


def anthropic(**kwargs: Any) -> AnthropicModel:
    return AnthropicModel("m", provider="local", **kwargs)


def plain_body(model: Adapter, request: ModelRequest) -> dict[str, Any]:
    """What the adapter's plain (uncached) body builder makes of ``request``."""
    names = ToolNames(request.tools)
    if isinstance(model, OpenAIChatModel):
        return build_chat_body(
            request,
            "m",
            names=names,
            strict_tools=model.strict_tools,
            include_usage=model.include_usage,
            reasoning_field=model.reasoning_field,
            max_tokens_field=model.max_tokens_field,
        )
    if isinstance(model, OpenAIResponsesModel):
        return build_responses_body(request, "m", names=names, strict_tools=model.strict_tools)
    return build_anthropic_body(request, "m", names=names, max_tokens=model.max_tokens)


ADAPTERS = pytest.mark.parametrize(
    "make", [chat, responses, anthropic], ids=["chat", "responses", "anthropic"]
)


def conversions_per_step(make: Callable[[], Adapter], steps: int) -> list[int]:
    model = make()
    history: list[Message] = [UserMessage(content=(Text("go"),))]
    per_step: list[int] = []
    for i in range(steps):
        before = model._bodies.cache.messages.conversions
        model.build_body(ModelRequest(system=["sys"], messages=tuple(history), tools=[READ]))
        per_step.append(model._bodies.cache.messages.conversions - before)
        history.extend(step(i))
    return per_step


@ADAPTERS
def test_each_step_converts_only_its_new_messages_at_10_and_at_1000_messages(
    make: Callable[[], Adapter],
) -> None:
    short = conversions_per_step(make, 5)  # 1 + 2*5 messages
    long = conversions_per_step(make, 500)  # 1 + 2*500 messages
    assert short[0] == long[0] == 1
    assert set(short[1:]) == set(long[1:]) == {2}  # the previous step's assistant and tool messages
    assert sum(long) == 1 + 2 * 499  # every message converted exactly once over the whole session


@ADAPTERS
def test_tool_definitions_are_converted_once_per_model(make: Callable[[], Adapter]) -> None:
    model = make()
    for _ in range(20):
        model.build_body(ModelRequest(messages=[UserMessage(content=(Text("hi"),))], tools=[READ, DOTTED]))
    assert model._bodies.cache.tools.conversions == 2


def history_of_every_kind() -> list[Message]:
    image = File.from_bytes(b"\x89PNG", mime="image/png", name="a.png")
    openai = {"openai": {"item_id": "rs_1", "encrypted_content": "enc"}}
    signed = {"anthropic": {"signature": "sig"}}
    return [
        UserMessage(content=(Text("look"), image)),
        AssistantMessage(
            content=(
                ReasoningContent(text="hmm", provider_metadata={**openai, **signed}),
                ReasoningContent(text="", provider_metadata={"anthropic": {"redacted_data": "xx"}}),
                TextContent(text="calling"),
                ToolCallContent(call_id="c1", name="fs.read", input={"path": "é.txt"}),
                ToolCallContent(call_id="c2", name="read", input='{"broken'),
                ToolCallContent(
                    call_id="c3",
                    name="read",
                    input="*** Begin Patch",
                    provider_metadata={"openai": {"type": "custom_tool_call"}},
                ),
            )
        ),
        ToolMessage(
            results=(
                ToolResultContent(call_id="c1", name="fs.read", content=(Text("ü"), image)),
                ToolResultContent(call_id="c2", name="read", content=(Text("bad input"),), is_error=True),
                ToolResultContent(call_id="c3", name="read", content=(Text("patched"),)),
            )
        ),
        UserMessage(content=(Text("and then?"),)),  # Anthropic merges it into the tool results' user message
        AssistantMessage(content=(TextContent(text="done"),)),
        AssistantMessage(content=(TextContent(text=""),)),  # nothing to send to Anthropic
    ]


@ADAPTERS
@pytest.mark.parametrize(
    "options",
    [{}, {"max_tokens": 100, "temperature": 0.5, "extra_body": {"top_k": 3}}],
    ids=["plain", "options"],
)
def test_encoded_body_equals_the_plain_body(make: Callable[..., Adapter], options: dict[str, Any]) -> None:
    request = ModelRequest(
        system=["a", "b"],
        messages=history_of_every_kind(),
        tools=[READ, DOTTED],
        tool_choice="fs.read",
        options=options,
    )
    variants: list[dict[str, Any]] = [{}]
    if make is chat:
        variants = [
            {"strict_tools": True, "max_tokens_field": "max_tokens"},
            {"strict_tools": False, "reasoning_field": "reasoning_content"},
        ]
    elif make is responses:
        variants = [{"strict_tools": True}, {"strict_tools": False}]
    for kwargs in variants:
        model = make(**kwargs)
        for _ in range(2):  # the second build comes from the cache
            body, _ = model.build_body(request)
            assert json.loads(body) == plain_body(model, request)


@ADAPTERS
def test_extra_body_replacing_the_history_is_sent_as_given(make: Callable[[], Adapter]) -> None:
    key = {chat: "messages", responses: "input", anthropic: "messages"}[make]
    request = ModelRequest(messages=history_of_every_kind(), options={"extra_body": {key: ["replaced"]}})
    model = make()
    body, _ = model.build_body(request)
    assert json.loads(body) == plain_body(model, request)
    assert json.loads(body)[key] == ["replaced"]


@ADAPTERS
def test_call_ids_of_the_history_are_known_without_reconverting_it(make: Callable[[], Adapter]) -> None:
    model = make()
    history: list[Message] = [UserMessage(content=(Text("go"),)), *step(0)]
    model.build_body(ModelRequest(messages=history))
    _, assembler = model.build_body(ModelRequest(messages=history))
    assert model._bodies.cache.messages.conversions == 3
    assert assembler._ids.assign("call_0") != "call_0"  # reused by the server: a fresh id
    assert assembler._ids.assign("call_new") == "call_new"


def test_a_tool_result_follows_its_calls_item_type_in_responses() -> None:
    call = ToolCallContent(
        call_id="p1", name="patch", input="text", provider_metadata={"openai": {"type": "custom_tool_call"}}
    )
    result = ToolMessage(results=(ToolResultContent(call_id="p1", name="patch", content=(Text("ok"),)),))
    model = responses()
    body, _ = model.build_body(ModelRequest(messages=[AssistantMessage(content=(call,)), result]))
    assert json.loads(body)["input"][-1]["type"] == "custom_tool_call_output"
