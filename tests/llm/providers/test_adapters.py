"""Adapter quirks on synthetic input: ids, names, invalid and cut-off arguments, and wire bodies for history."""

from __future__ import annotations

from typing import Any

import pytest

from tether.llm import (
    AssistantMessage,
    ModelRequest,
    ReasoningContent,
    StepFinish,
    TextContent,
    ToolCallContent,
    ToolCallEvent,
    ToolInputStart,
    ToolMessage,
    ToolResultContent,
    UserMessage,
)
from tether.llm.providers._anthropic import AnthropicAssembler, build_anthropic_body
from tether.llm.providers._common import CallIds, MalformedEvent, ToolNames, parse_tool_input
from tether.llm.providers._openai_chat import ChatAssembler, build_chat_body
from tether.llm.providers._openai_responses import ResponsesAssembler, build_responses_body
from tether.llm.providers._wire import openai_strict_ok
from tether.tools import File, Text, ToolDefinition

from ._broken import chat_chunk

PNG = File(mime="image/png", data="iVBORw0KGgo=")
READ = ToolDefinition(name="fs.read", description="Read", input_schema={"type": "object", "properties": {}})


def chunk(tool_calls: list[dict[str, Any]] | None = None, finish: Any = None, **delta: Any) -> dict[str, Any]:
    """A chunk as the assembler gets it: the parsed JSON of one event (the SDK's ``AsyncStream[object]``)."""
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    return chat_chunk(delta, finish)


def run_chat(
    chunks: list[dict[str, Any]], *, history: list[str] = (), tools: tuple[ToolDefinition, ...] = ()
) -> list[Any]:  # type: ignore[assignment]
    assembler = ChatAssembler(ids=CallIds(history), names=ToolNames(tools))
    events: list[Any] = []
    for c in chunks:
        events.extend(assembler.feed(c))
    events.extend(assembler.finish())
    return events


def calls(events: list[Any]) -> list[ToolCallEvent]:
    return [e for e in events if isinstance(e, ToolCallEvent)]


def call_delta(
    index: int | None, *, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    out: dict[str, Any] = {"function": fn, "type": "function"}
    if index is not None:
        out["index"] = index
    if id is not None:
        out["id"] = id
    return out


def test_invalid_json_arguments_become_an_invalid_call_not_a_crash() -> None:
    events = run_chat(
        [chunk([call_delta(0, id="c1", name="edit", args='{"path": "a.py", ')]), chunk(finish="tool_calls")]
    )
    [call] = calls(events)
    assert call.input == '{"path": "a.py", ' and call.invalid and "not valid JSON" in call.invalid
    assert not call.incomplete


def test_length_finish_mid_arguments_reports_an_incomplete_call() -> None:
    events = run_chat(
        [chunk([call_delta(0, id="c1", name="edit", args='{"path": "a.py", ')]), chunk(finish="length")]
    )
    [call] = calls(events)
    assert call.incomplete and call.invalid
    assert isinstance(events[-1], StepFinish) and events[-1].reason == "length"


def test_non_object_arguments_are_invalid() -> None:
    assert parse_tool_input("[1, 2]")[1] is not None
    assert parse_tool_input("  ") == ({}, None)


def test_reused_and_missing_call_ids_are_replaced_by_unique_ones() -> None:
    events = run_chat(
        [
            chunk([call_delta(0, id="call_0", name="a", args="{}")]),
            chunk([call_delta(1, id="call_0", name="b", args="{}")]),
            chunk([call_delta(2, name="c", args="{}")]),
            chunk(finish="tool_calls"),
        ],
        history=["call_0"],
    )
    ids = [c.id for c in calls(events)]
    assert len(set(ids)) == 3 and "call_0" not in ids
    assert all(i.startswith("call_") for i in ids)


def test_calls_without_index_are_told_apart_by_their_ids() -> None:
    events = run_chat(
        [
            chunk([call_delta(None, id="x1", name="a", args='{"n": 1}')]),
            chunk([call_delta(None, id="x2", name="b", args='{"n": 2}')]),
            chunk(finish="tool_calls"),
        ]
    )
    assert [(c.id, c.name, c.input) for c in calls(events)] == [("x1", "a", {"n": 1}), ("x2", "b", {"n": 2})]


def test_stop_with_calls_is_reported_as_tool_calls() -> None:
    events = run_chat([chunk([call_delta(0, id="x", name="a", args="{}")]), chunk(finish="stop")])
    assert isinstance(events[-1], StepFinish) and events[-1].reason == "tool-calls"


def test_dotted_tool_names_are_sent_legal_and_mapped_back() -> None:
    body = build_chat_body(ModelRequest(tools=[READ]), "m", names=ToolNames([READ]))
    assert body["tools"][0]["function"]["name"] == "fs_read"
    events = run_chat(
        [chunk([call_delta(0, id="x", name="fs_read", args="{}")]), chunk(finish="tool_calls")], tools=(READ,)
    )
    assert [e.name for e in events if isinstance(e, ToolInputStart)] == ["fs.read"]
    assert calls(events)[0].name == "fs.read"


def test_stream_without_finish_reason_is_an_error_not_a_call() -> None:
    events = run_chat([chunk([call_delta(0, id="x", name="a", args="{}")])])
    assert not calls(events) and events[-1].type == "provider-error"


BAD_CHUNKS: dict[str, tuple[Any, str]] = {
    "a chunk that is not an object": ([chunk()], "must be a JSON object, not list"),
    "a chunk without choices": ({"id": "c", "object": "chat.completion.chunk"}, "has no choices"),
    "choices: null": ({"id": "c", "choices": None}, "choices: null"),
    "a name that is a number": (chunk([call_delta(0, id="x", name=7)]), "must be strings, not int"),
    "arguments that are an object": (
        chunk([{"index": 0, "id": "x", "function": {"name": "a", "arguments": {"path": "x"}}}]),
        "must be strings, not dict",
    ),
    "an index that is a string": (chunk([call_delta(None, id="x", name="a") | {"index": "0"}]), "index"),
    "a finish reason that is a list": (chunk(finish=["stop"]), "finish_reason must be a string"),
    "usage that is a string": ({**chunk(), "usage": "10 tokens"}, "usage must be an object"),
    "content that is a list": (chunk(content=["a"]), "content must be a string, not list"),
}


@pytest.mark.parametrize("case", sorted(BAD_CHUNKS))
def test_a_chunk_of_the_wrong_shape_is_malformed_and_named(case: str) -> None:
    item, expected = BAD_CHUNKS[case]
    with pytest.raises(MalformedEvent, match=expected):
        ChatAssembler(ids=CallIds(), names=ToolNames(())).feed(item)


def test_an_event_that_is_not_an_object_is_malformed_for_every_assembler() -> None:
    for assembler in (
        ChatAssembler(ids=CallIds(), names=ToolNames(())),
        AnthropicAssembler(ids=CallIds(), names=ToolNames(())),
    ):
        with pytest.raises(MalformedEvent, match="must be a JSON object, not list"):
            assembler.feed([{"type": "message_start"}])
    # the Responses assembler reads members with one lenient accessor: what is not an object has no members
    assert ResponsesAssembler(ids=CallIds(), names=ToolNames(())).feed(["response.created"]) == []


def test_choices_other_than_the_first_are_ignored() -> None:
    second = chunk(content="not this one")
    second["choices"][0]["index"] = 1
    events = run_chat([chunk(content="hi"), second, chunk(finish="stop")])
    assert [e.text for e in events if e.type == "text-delta"] == ["hi"]


def test_usage_is_read_from_the_json_the_server_sent() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 2},
        "cost": 0.25,
    }
    events = run_chat([chunk(content="hi"), {**chunk(finish="stop"), "usage": usage}])
    finish = events[-1]
    assert isinstance(finish, StepFinish) and finish.usage is not None
    assert (finish.usage.input_tokens, finish.usage.output_tokens) == (10, 5)
    assert (finish.usage.cache_read_tokens, finish.usage.reasoning_tokens, finish.usage.cost) == (4, 2, 0.25)
    groq = {
        **chunk(finish="stop"),
        "x_groq": {"usage": {"prompt_tokens": 3, "prompt_cache_hit_tokens": 1, "cost": True}},
    }
    finish = run_chat([groq])[-1]
    assert isinstance(finish, StepFinish) and finish.usage is not None
    assert (finish.usage.input_tokens, finish.usage.cache_read_tokens, finish.usage.cost) == (3, 1, None)


HISTORY = [
    UserMessage(content=(Text("look"), PNG)),
    AssistantMessage(
        content=(
            ReasoningContent(text="hmm", provider_metadata={"anthropic": {"signature": "sig"}}),
            TextContent(text="Checking."),
            ToolCallContent(call_id="t1", name="fs.read", input={"path": "a.png"}),
            ToolCallContent(call_id="t2", name="fs.read", input={"path": "b"}),
        )
    ),
    ToolMessage(
        results=(
            ToolResultContent(call_id="t1", name="fs.read", content=(Text("an image"), PNG)),
            ToolResultContent(
                call_id="t2", name="fs.read", content=(Text("No such file: b"),), is_error=True
            ),
        )
    ),
]
REQUEST = ModelRequest(system=["Be brief."], messages=HISTORY, tools=[READ])


def test_chat_body_sends_images_from_tool_results_in_a_following_user_message() -> None:
    body = build_chat_body(REQUEST, "m", names=ToolNames([READ]))
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    assert body["messages"][2]["tool_calls"][0]["function"] == {
        "name": "fs_read",
        "arguments": '{"path":"a.png"}',
    }
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "t1", "content": "an image"}
    assert body["messages"][5]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }


def test_anthropic_body_carries_signatures_errors_and_images() -> None:
    body = build_anthropic_body(REQUEST, "claude", names=ToolNames([READ]))
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    assert assistant[2] == {"type": "tool_use", "id": "t1", "name": "fs_read", "input": {"path": "a.png"}}
    first, second = body["messages"][2]["content"]
    assert first["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    assert second == {
        "type": "tool_result",
        "tool_use_id": "t2",
        "content": "No such file: b",
        "is_error": True,
    }


def test_anthropic_body_drops_thinking_without_a_signature() -> None:
    request = ModelRequest(
        messages=[
            UserMessage(content=(Text("x"),)),
            AssistantMessage(content=(ReasoningContent(text="r"), TextContent(text="ok"))),
        ]
    )
    body = build_anthropic_body(request, "claude", names=ToolNames(()))
    assert body["messages"][1]["content"] == [{"type": "text", "text": "ok"}]


def test_responses_body_sends_custom_tool_calls_back_as_custom_items() -> None:
    request = ModelRequest(
        messages=[
            UserMessage(content=(Text("sql"),)),
            AssistantMessage(
                content=(
                    ToolCallContent(
                        call_id="c",
                        name="write_sql",
                        input="SELECT 1",
                        provider_metadata={"openai": {"type": "custom_tool_call"}},
                    ),
                )
            ),
            ToolMessage(
                results=(ToolResultContent(call_id="c", name="write_sql", content=(Text("1 row"),)),)
            ),
        ]
    )
    items = build_responses_body(request, "m", names=ToolNames(()))["input"]
    assert items[1] == {"type": "custom_tool_call", "call_id": "c", "name": "write_sql", "input": "SELECT 1"}
    assert items[2] == {"type": "custom_tool_call_output", "call_id": "c", "output": "1 row"}


def test_responses_body_sends_image_results_as_input_parts() -> None:
    items = build_responses_body(REQUEST, "m", names=ToolNames([READ]))["input"]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert outputs[0]["output"][1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64,iVBORw0KGgo=",
    }
    assert outputs[1]["output"] == "No such file: b"


def test_strict_mode_only_when_the_schema_already_allows_it() -> None:
    strict = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert openai_strict_ok(strict)
    assert not openai_strict_ok({**strict, "required": []})
    assert not openai_strict_ok({k: v for k, v in strict.items() if k != "additionalProperties"})
    assert not openai_strict_ok({**strict, "properties": {"a": {"type": "string", "default": "x"}}})
