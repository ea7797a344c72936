"""Law 10 for request building: a step converts only the messages that are new, whatever the history's length.

Counts conversions (never time): histories grown one step at a time to 10 and to 1,000 messages cost the same
number of conversions per step. The bytes sent equal the plain body builder's output.
"""

from __future__ import annotations

import json

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
from tether.llm.providers import OpenAIChatModel
from tether.llm.providers._common import ToolNames
from tether.llm.providers._openai_chat import build_chat_body
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


def conversions_per_step(steps: int) -> list[int]:
    model = OpenAIChatModel("m", provider="local")
    history: list[Message] = [UserMessage(content=(Text("go"),))]
    per_step: list[int] = []
    for i in range(steps):
        before = model._bodies.messages.conversions
        model.build_body(ModelRequest(system=["sys"], messages=tuple(history), tools=[READ]))
        per_step.append(model._bodies.messages.conversions - before)
        history.extend(step(i))
    return per_step


def test_each_step_converts_only_its_new_messages_at_10_and_at_1000_messages() -> None:
    short = conversions_per_step(5)  # 1 + 2*5 messages
    long = conversions_per_step(500)  # 1 + 2*500 messages
    assert short[0] == long[0] == 1
    assert set(short[1:]) == set(long[1:]) == {2}  # the previous step's assistant and tool messages
    assert sum(long) == 1 + 2 * 499  # every message converted exactly once over the whole session


def test_tool_definitions_are_converted_once_per_model() -> None:
    model = OpenAIChatModel("m", provider="local")
    for _ in range(20):
        model.build_body(ModelRequest(messages=[UserMessage(content=(Text("hi"),))], tools=[READ, DOTTED]))
    assert model._bodies.tools.conversions == 2


def test_encoded_body_equals_the_plain_body() -> None:
    image = File.from_bytes(b"\x89PNG", mime="image/png", name="a.png")
    history: list[Message] = [
        UserMessage(content=(Text("look"), image)),
        AssistantMessage(
            content=(
                ReasoningContent(text="hmm"),
                ToolCallContent(call_id="c1", name="fs.read", input={"path": "é.txt"}),
                ToolCallContent(call_id="c2", name="read", input='{"broken'),
            )
        ),
        ToolMessage(
            results=(
                ToolResultContent(call_id="c1", name="fs.read", content=(Text("ü"), image)),
                ToolResultContent(call_id="c2", name="read", content=(Text("bad input"),), is_error=True),
            )
        ),
        AssistantMessage(content=(TextContent(text="done"),)),
    ]
    request = ModelRequest(
        system=["a", "b"],
        messages=history,
        tools=[READ, DOTTED],
        tool_choice="fs.read",
        options={"max_tokens": 100, "temperature": 0.5, "extra_body": {"top_k": 3}},
    )
    for strict, reasoning_field in ((True, None), (False, "reasoning_content")):
        model = OpenAIChatModel(
            "m",
            provider="local",
            strict_tools=strict,
            reasoning_field=reasoning_field,
            max_tokens_field="max_tokens",
        )
        for _ in range(2):  # the second build comes from the cache
            body, _ = model.build_body(request)
            plain = build_chat_body(
                request,
                "m",
                names=ToolNames(request.tools),
                strict_tools=strict,
                reasoning_field=reasoning_field,
                max_tokens_field="max_tokens",
            )
            assert json.loads(body) == plain


def test_call_ids_of_the_history_are_known_without_reconverting_it() -> None:
    model = OpenAIChatModel("m", provider="local")
    history: list[Message] = [UserMessage(content=(Text("go"),)), *step(0)]
    model.build_body(ModelRequest(messages=history))
    _, assembler = model.build_body(ModelRequest(messages=history))
    assert model._bodies.messages.conversions == 3
    assert assembler._ids.assign("call_0") != "call_0"  # reused by the server: a fresh id
    assert assembler._ids.assign("call_new") == "call_new"
