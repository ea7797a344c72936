"""The request body's one encoder (``_common.dumps``, pydantic-core) writes the standard library's JSON, and a Chat
Completions body spliced from each history message's cached encoding is the same bytes as the body encoded whole.

The bytes are the standard encoder's (compact, UTF-8, nothing escaped that need not be), except the spelling of
some floats (``1e-7`` for ``1e-07``, ``0.00001`` for ``1e-05``): the same numbers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.llm import (
    AssistantMessage,
    Message,
    ModelRequest,
    ReasoningContent,
    RequestOptions,
    TextContent,
    ToolCallContent,
    ToolCallEvent,
    ToolMessage,
    ToolResultContent,
    UserMessage,
)
from tether.llm.providers._common import ToolNames, dumps
from tether.llm.providers._openai_chat import OpenAIChatModel, WireCache, build_chat_body
from tether.tools import File, Text, ToolDefinition

TEXT = st.text(st.characters(exclude_categories=["Cs"]))  # lone surrogates are never storable (law 12)
SCALARS = st.none() | st.booleans() | st.integers() | TEXT


def documents(scalars: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5),
        max_leaves=30,
    )


def standard(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@given(documents(SCALARS))
def test_the_body_is_the_standard_encoders_bytes(value: Any) -> None:
    assert dumps(value) == standard(value)


@given(documents(SCALARS | st.floats(allow_nan=False, allow_infinity=False)))
def test_the_body_reads_back_as_the_same_values(value: Any) -> None:
    assert json.loads(dumps(value)) == value


def test_control_characters_quotes_and_non_ascii_are_written_as_the_standard_encoder_writes_them() -> None:
    value = {"content": 'line\n\t"quoted" \\ \x00\x1f\x7f é 中 \u2028 😀', "n": [1, -2, 2**70, 1.5, -0.0]}
    assert dumps(value) == standard(value)


# -- a step's body: the history's messages encoded once each (law 10) -------------------------------------------------

PNG = File(mime="image/png", data="iVBORw0KGgo=")
DOTTED = ToolDefinition(name="fs.read", description="Read", input_schema={"type": "object", "properties": {}})


def _step(i: int) -> list[Message]:
    call = ToolCallContent(call_id=f"c{i}", name="fs.read", input={"path": f"f{i}", "é": [i, None]})
    result = ToolResultContent(call_id=f"c{i}", name="fs.read", content=(Text(f'line {i}\n"q"'), PNG))
    reasoning = ReasoningContent(text=f"think {i}")
    return [
        AssistantMessage(content=(reasoning, TextContent(text="ok"), call)),
        ToolMessage(results=(result,)),
    ]


HISTORY: list[Message] = [UserMessage(content=(Text("go"),)), *(m for i in range(4) for m in _step(i))]


def _whole(model: OpenAIChatModel, request: ModelRequest) -> bytes:
    """The body as the adapter built it before the cache: every message converted and the whole encoded at once."""
    body = build_chat_body(
        request, model.model_id, names=ToolNames(request.tools), reasoning_field=model.reasoning_field
    )
    for key, value in request.options.items():
        if key != "extra_body":
            body[key] = value
    body.update(request.options.get("extra_body") or {})  # last, as the adapter applies it
    return standard(body)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"temperature": 0.5, "extra_body": {"metadata": {"messages": []}, "model": "other"}},
        {"extra_body": {"messages": [{"role": "user", "content": "replaced"}]}},
    ],
)
def test_a_chat_body_built_step_by_step_is_the_body_encoded_whole(options: RequestOptions) -> None:
    model = OpenAIChatModel("m", reasoning_field="reasoning_content")
    for n in range(1, len(HISTORY) + 1):
        tools = [DOTTED] if n % 4 else []  # the wire name of fs.read changes with the tools offered
        request = ModelRequest(system=["Be brief."], messages=HISTORY[:n], tools=tools, options=options)
        assert model.build_body(request)[0] == _whole(model, request)
    again = [*HISTORY[:3], ToolMessage(results=()), *_step(1)]  # other objects; one with no wire message
    request = ModelRequest(messages=again, tools=[DOTTED], options=options)
    assert model.build_body(request)[0] == _whole(model, request)


def test_a_step_encodes_only_the_messages_it_has_not_sent_before() -> None:
    cache = WireCache(None)
    names = ToolNames([DOTTED])
    first, _ = cache.encoded(HISTORY[:3], names)
    second, ids = cache.encoded(HISTORY[:5], names)
    assert len(second) == 5 and all(a is b for a, b in zip(first, second, strict=False))
    assert ids == ["c0", "c1"]
    renamed, _ = cache.encoded(HISTORY[:5], ToolNames([]))  # other wire names: every message is encoded again
    assert renamed[1] is not second[1] and b'"fs.read"' in renamed[1] and b'"fs.read"' not in second[1]


def test_a_call_id_the_history_already_holds_is_replaced_when_the_body_comes_from_the_cache() -> None:
    model = OpenAIChatModel("m")
    model.build_body(ModelRequest(messages=HISTORY[:3], tools=[DOTTED]))
    _, assembler = model.build_body(
        ModelRequest(messages=HISTORY, tools=[DOTTED])
    )  # HISTORY[:3] from the cache
    delta = {"tool_calls": [{"index": 0, "id": "c0", "function": {"name": "fs_read", "arguments": "{}"}}]}
    assembler.feed({"choices": [{"index": 0, "delta": delta}]})
    assembler.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    calls = [e for e in assembler.finish() if isinstance(e, ToolCallEvent)]
    assert len(calls) == 1 and calls[0].id != "c0" and calls[0].name == "fs.read"
