"""OpenAI Chat Completions, also for OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, ...).

Streamed tool calls are assembled by their ``index``: a server may start at index 1, send the id and name only on
the first delta, repeat the name as ``""``, send whole arguments in one delta or empty-string deltas. Reasoning
arrives as ``reasoning_content`` (DeepSeek, vLLM) or ``reasoning`` (OpenRouter, Ollama); usage comes in the last
chunk (or ``x_groq.usage``). Tool calls are reported when the stream finishes, with parsed input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from ...errors import ProviderError
from ...tools import File, Text, ToolDefinition
from .._events import (
    Event,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    TextDelta,
    TextEnd,
    TextStart,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    Usage,
)
from .._request import (
    AssistantMessage,
    Message,
    ModelRequest,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    UserMessage,
)
from ._base import Assembler, ClientSettings, HTTPModel, MalformedEvent, stream_ended_early
from ._common import CallIds, ToolNames, dump_arguments, dumps, tool_call_event
from ._errors import map_error
from ._wire import FINISH_OPENAI_CHAT, as_int, openai_strict_ok, result_text, split_content

if TYPE_CHECKING:
    from ._clients import Loaded

__all__ = ["ChatAssembler", "OpenAIChatModel", "WireCache", "build_chat_body", "chat_messages"]


def _user_parts(parts: tuple[Text | File, ...]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], Text):
        return parts[0].text
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Text):
            out.append({"type": "text", "text": part.text})
        elif part.mime.startswith("image/"):
            out.append({"type": "image_url", "image_url": {"url": part.data_uri()}})
        else:
            out.append(
                {"type": "file", "file": {"filename": part.name or "file", "file_data": part.data_uri()}}
            )
    return out


def _tool(defn: ToolDefinition, names: ToolNames, strict: bool) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": names.wire(defn.name),
        "description": defn.description,
        "parameters": dict(defn.input_schema),
    }
    if strict:
        function["strict"] = openai_strict_ok(defn.input_schema)
    return {"type": "function", "function": function}


def build_chat_body(
    request: ModelRequest,
    model_id: str,
    *,
    names: ToolNames,
    strict_tools: bool = True,
    include_usage: bool = True,
    reasoning_field: str | None = None,
    history: bool = True,
) -> dict[str, Any]:
    """The ``/chat/completions`` body for ``request``, without its options (pure; snapshot-tested).

    Args:
        strict_tools: send ``strict`` on each tool (true when the schema fits strict mode); off for servers that
            reject the field.
        include_usage: ask for usage in the last chunk (``stream_options``).
        reasoning_field: send assistant reasoning back in this field (DeepSeek's ``reasoning_content``).
        history: convert ``request.messages`` (false: ``messages`` holds the system message only; the adapter
            splices the history's encoded messages in, :class:`WireCache`).
    """
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": "\n\n".join(request.system)})
    if history:
        for message in request.messages:
            messages.extend(chat_messages(message, names, reasoning_field))
    body: dict[str, Any] = {"model": model_id, "messages": messages, "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = [_tool(t, names, strict_tools) for t in request.tools]
        choice = request.tool_choice
        if choice in ("auto", "none", "required"):
            body["tool_choice"] = choice
        else:
            body["tool_choice"] = {"type": "function", "function": {"name": names.wire(choice)}}
    return body


def chat_messages(message: Message, names: ToolNames, reasoning_field: str | None) -> list[dict[str, Any]]:
    """The wire messages for one history message (a tool message becomes one per result, plus attachments)."""
    if isinstance(message, UserMessage):
        return [{"role": "user", "content": _user_parts(message.content)}]
    if isinstance(message, AssistantMessage):
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, TextContent):
                text.append(part.text)
            elif isinstance(part, ReasoningContent):
                reasoning.append(part.text)
            else:
                calls.append(
                    {
                        "id": part.call_id,
                        "type": "function",
                        "function": {"name": names.wire(part.name), "arguments": dump_arguments(part.input)},
                    }
                )
        wire: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
        if calls:
            wire["tool_calls"] = calls
        if reasoning_field and reasoning:
            wire[reasoning_field] = "".join(reasoning)
        return [wire]
    out: list[dict[str, Any]] = []
    attachments: list[dict[str, Any]] = []
    for result in message.results:
        out.append({"role": "tool", "tool_call_id": result.call_id, "content": result_text(result.content)})
        _texts, files = split_content(result.content)
        if files:
            # Tool messages take text only: files follow in one user message after all the results.
            attachments.append({"type": "text", "text": f"Files returned by tool call {result.call_id}:"})
            attachments.extend(p for p in _user_parts(tuple(files)) if isinstance(p, dict))
    if attachments:
        out.append({"role": "user", "content": attachments})
    return out


class WireCache:
    """Each history message's wire JSON (and the call ids it holds), kept from one step's body to the next (law 10:
    a step encodes only what is new).

    The history is append-only and its messages are immutable records, so a message seen in the previous body is
    the same object now: its encoded bytes are reused, found by identity (the entry keeps the message, so an id is
    never taken for a new object's). Only the messages of the last body are kept (the cache never outgrows the
    history it mirrors); a change of the tool-name mapping (the wire names inside calls) drops them all.
    """

    __slots__ = ("_entries", "_key", "_reasoning_field")

    def __init__(self, reasoning_field: str | None) -> None:
        self._reasoning_field = reasoning_field
        self._entries: dict[int, tuple[Message, bytes, tuple[str, ...]]] = {}
        self._key: tuple[tuple[str, str], ...] = ()

    def encoded(self, messages: Sequence[Message], names: ToolNames) -> tuple[list[bytes], list[str]]:
        """The wire JSON of ``messages``, one item per history message that has any (its wire messages joined), and
        the call ids the history uses (:meth:`CallIds.from_history`'s, without walking every message's parts)."""
        if names.key != self._key:
            self._entries, self._key = {}, names.key
        seen = self._entries
        kept: dict[int, tuple[Message, bytes, tuple[str, ...]]] = {}
        out: list[bytes] = []
        ids: list[str] = []
        for message in messages:
            entry = seen.get(id(message))
            if entry is None or entry[0] is not message:
                wire = chat_messages(message, names, self._reasoning_field)
                calls = (
                    tuple(part.call_id for part in message.content if isinstance(part, ToolCallContent))
                    if isinstance(message, AssistantMessage)
                    else ()
                )
                entry = (message, b",".join([dumps(item) for item in wire]), calls)
            kept[id(message)] = entry
            if entry[1]:
                out.append(entry[1])
            ids.extend(entry[2])
        self._entries = kept
        return out, ids


def _spliced(body: dict[str, Any], system: list[dict[str, Any]], history: list[bytes]) -> bytes:
    """``body`` encoded with ``system`` and the encoded ``history`` as its messages (``body`` is spent).

    ``body`` is :func:`build_chat_body`'s (``model`` its first member, ``messages`` the second), so its encoding with
    no messages starts with ``{"model":...,"messages":[]``: the messages go between those brackets.
    """
    body["messages"] = []
    encoded = dumps(body)
    head = b'{"model":' + dumps(body["model"]) + b',"messages":['
    assert encoded.startswith(head + b"]")
    items = [dumps(item) for item in system]
    items.extend(history)
    return b"".join([head, b",".join(items), encoded[len(head) :]])


def _text(value: Any) -> str | None:
    """A string member of a tool-call delta (``None`` when absent or null); any other type is malformed."""
    if value is None or isinstance(value, str):
        return value
    raise MalformedEvent(f"a tool call's id, name and arguments must be strings, not {type(value).__name__}")


class _Call:
    __slots__ = ("args", "id", "name", "server_id")

    def __init__(self, server_id: str | None, name: str) -> None:
        self.server_id = server_id
        self.name = name
        self.id: str | None = None  # assigned when the call starts (its name is known)
        self.args: list[str] = []


def chat_usage(raw: Any) -> Usage:
    """Usage from a Chat Completions ``usage`` object (also Groq's ``x_groq.usage``), as the JSON the server sent."""
    if not isinstance(raw, dict):
        raise MalformedEvent(f"a chunk's usage must be an object, not {type(raw).__name__}")
    usage = cast(Mapping[str, Any], raw)
    cost = usage.get("cost")
    return Usage(
        input_tokens=as_int(usage.get("prompt_tokens")),
        output_tokens=as_int(usage.get("completion_tokens")),
        reasoning_tokens=_detail(usage.get("completion_tokens_details"), "reasoning_tokens"),
        cache_read_tokens=_detail(usage.get("prompt_tokens_details"), "cached_tokens")
        or as_int(usage.get("prompt_cache_hit_tokens")),
        cost=cost if isinstance(cost, float | int) and not isinstance(cost, bool) else None,
    )


def _detail(details: Any, key: str) -> int:
    return as_int(cast(Mapping[str, Any], details).get(key)) if isinstance(details, dict) else 0


def _brief(item: Any) -> str:
    """A short view of a chunk for an error message."""
    text = json.dumps(item, ensure_ascii=False, default=repr)
    return text if len(text) <= 200 else text[:200] + "..."


class ChatAssembler:
    """Turns ``chat.completion.chunk`` events, as the JSON objects the server sent, into tether events (pure,
    synchronous).

    The chunks are read as parsed JSON (``_sse``), not as an SDK's chunk models: a chunk is
    small and a parallel step sends one per call (1,000 calls, 1,000 chunks), and building the SDK model of a chunk
    cost more than everything tether does with it (about 0.5 ms a chunk, issue 14). What the assembler reads is
    checked here: a chunk without ``choices``, or a member of the wrong type, is a :class:`MalformedEvent`.
    """

    def __init__(self, *, ids: CallIds, names: ToolNames) -> None:
        self._ids = ids
        self._names = names
        self._text: str | None = None
        self._reasoning: str | None = None
        self._blocks = 0
        self._calls: dict[int, _Call] = {}
        self._last_index: int | None = None
        self._finish: str | None = None
        self._usage: Usage | None = None

    def _close_reasoning(self, out: list[Event]) -> None:
        if self._reasoning is not None:
            out.append(ReasoningEnd(id=self._reasoning))
            self._reasoning = None

    def _close_text(self, out: list[Event]) -> None:
        if self._text is not None:
            out.append(TextEnd(id=self._text))
            self._text = None

    def feed(self, item: Any) -> list[Event]:
        if not isinstance(item, dict):
            raise MalformedEvent(f"a chunk must be a JSON object, not {type(item).__name__}: {_brief(item)}")
        chunk = cast(Mapping[str, Any], item)
        out: list[Event] = []
        usage = chunk.get("usage")
        if usage is not None:
            self._usage = chat_usage(usage)
        else:
            extra = chunk.get("x_groq")
            if isinstance(extra, dict) and isinstance(extra.get("usage"), dict):  # pyright: ignore[reportUnknownMemberType]
                self._usage = chat_usage(extra["usage"])
        if "choices" not in chunk:
            raise MalformedEvent(f"a chunk has no choices: {_brief(item)}")
        choices = chunk["choices"]
        if choices is None:
            raise MalformedEvent(f"a chunk has choices: null (expected a list): {_brief(item)}")
        for choice in cast(list[Mapping[str, Any]], choices):
            if choice.get("index"):
                continue  # n > 1 is never requested; ignore other choices
            delta = choice.get("delta")
            if delta is not None:
                self._delta(delta, out)
            finish = choice.get("finish_reason")
            if finish:
                if not isinstance(finish, str):
                    raise MalformedEvent(f"a finish_reason must be a string, not {type(finish).__name__}")
                self._finish = finish
        return out

    def _delta(self, delta: Mapping[str, Any], out: list[Event]) -> None:
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and isinstance(reasoning, str):
            if self._reasoning is None:
                self._close_text(out)
                self._reasoning = f"reasoning-{self._blocks}"
                self._blocks += 1
                out.append(ReasoningStart(id=self._reasoning))
            out.append(ReasoningDelta(id=self._reasoning, text=reasoning))
        content = delta.get("content")
        if content:
            if not isinstance(content, str):
                raise MalformedEvent(f"a delta's content must be a string, not {type(content).__name__}")
            self._close_reasoning(out)
            if self._text is None:
                self._text = f"text-{self._blocks}"
                self._blocks += 1
                out.append(TextStart(id=self._text))
            out.append(TextDelta(id=self._text, text=content))
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            self._close_reasoning(out)
            self._close_text(out)
            for tc in cast(list[Mapping[str, Any]], tool_calls):
                self._tool_delta(tc, out)

    def _tool_delta(self, tc: Mapping[str, Any], out: list[Event]) -> None:
        fn = tc.get("function")
        name = _text(fn.get("name")) if fn is not None else None
        args = _text(fn.get("arguments")) if fn is not None else None
        server_id = _text(tc.get("id"))
        index = tc.get("index")
        if index is None:  # servers that omit the index: a new id starts a call, otherwise continue the last
            index = len(self._calls) if server_id or self._last_index is None else self._last_index
        elif not isinstance(index, int):
            raise MalformedEvent(f"a tool call's index must be an integer, not {type(index).__name__}")
        call = self._calls.get(index)
        if call is not None and server_id and call.server_id and server_id != call.server_id and call.args:
            index = max(self._calls) + 1  # a second complete call reusing an index (some local servers)
            call = None
        if call is None:
            call = _Call(server_id, name or "")
            self._calls[index] = call
        else:
            if server_id and not call.server_id:
                call.server_id = server_id
            if name and not call.name:
                call.name = name
        self._last_index = index
        if call.id is None and call.name:
            call.id = self._ids.assign(call.server_id)
            tether_name = self._names.tether(call.name)
            out.append(ToolInputStart(id=call.id, name=tether_name))
            if call.args:
                out.append(ToolInputDelta(id=call.id, name=tether_name, text="".join(call.args)))
        if args:
            call.args.append(args)
            if call.id is not None:
                out.append(ToolInputDelta(id=call.id, name=self._names.tether(call.name), text=args))

    def finish(self) -> list[Event]:
        out: list[Event] = []
        self._close_reasoning(out)
        self._close_text(out)
        if self._finish is None:
            out.append(stream_ended_early())
            return out
        cut_off = self._finish == "length"
        for index in sorted(self._calls):
            call = self._calls[index]
            name = self._names.tether(call.name or "unknown")
            if call.id is None:
                call.id = self._ids.assign(call.server_id)
                out.append(ToolInputStart(id=call.id, name=name))
            out.append(ToolInputEnd(id=call.id, name=name))
            out.append(tool_call_event(call_id=call.id, name=name, raw="".join(call.args), cut_off=cut_off))
        reason = FINISH_OPENAI_CHAT.get(self._finish, "unknown")
        if reason == "stop" and self._calls:
            reason = "tool-calls"  # some compatible servers say "stop" after tool calls
        out.append(StepFinish(reason=reason, usage=self._usage))
        return out


class OpenAIChatModel(HTTPModel):
    """A model served over the Chat Completions API (OpenAI or any compatible server via ``base_url``)."""

    path = "/chat/completions"
    api = "Chat Completions"
    takes_options: ClassVar[Mapping[str, str]] = {
        key: key
        for key in (
            "temperature",
            "top_p",
            "max_tokens",
            "stop",
            "seed",
            "presence_penalty",
            "frequency_penalty",
            "user",
            "reasoning_effort",
        )
    }

    def __init__(
        self,
        model_id: str,
        *,
        provider: str = "openai",
        settings: ClientSettings | None = None,
        client: Any = None,
        strict_tools: bool = True,
        include_usage: bool = True,
        reasoning_field: str | None = None,
        max_tokens_field: str = "max_completion_tokens",
    ) -> None:
        super().__init__(model_id, provider=provider, settings=settings or ClientSettings(), client=client)
        self.strict_tools = strict_tools
        self.include_usage = include_usage
        self.reasoning_field = reasoning_field
        self.max_tokens_field = max_tokens_field
        """``max_completion_tokens`` (OpenAI) or ``max_tokens`` (most compatible servers)."""
        self._wire = WireCache(reasoning_field)

    def build_body(self, request: ModelRequest) -> tuple[bytes, Assembler]:
        """As :meth:`HTTPModel.build_body`, the history's messages encoded once each (:class:`WireCache`): the
        body is the same bytes as the whole body encoded at once."""
        names = ToolNames(request.tools)
        body = self._body(request, names)
        system: list[dict[str, Any]] = body["messages"]
        self._apply_options(body, request.options)
        if body["messages"] is system:
            history, ids = self._wire.encoded(request.messages, names)
            return _spliced(body, system, history), self._assembler(CallIds(ids), names)
        # extra_body replaced the messages: the history is not sent
        return dumps(body), self._assembler(CallIds.from_history(request.messages), names)

    def _load(self) -> Loaded:
        from ._clients import load_openai

        return load_openai(self.settings, client=self._given_client)

    def _body(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        """The body with the system message as its only message: :meth:`build_body` splices the history in."""
        return build_chat_body(
            request,
            self.model_id,
            names=names,
            strict_tools=self.strict_tools,
            include_usage=self.include_usage,
            reasoning_field=self.reasoning_field,
            history=False,
        )

    def _wire_option(self, key: str, value: Any) -> Mapping[str, Any]:
        return {self.max_tokens_field if key == "max_tokens" else key: value}

    def _assembler(self, ids: CallIds, names: ToolNames) -> Assembler:
        return ChatAssembler(ids=ids, names=names)

    def _map_error(self, exc: BaseException) -> ProviderError:
        return map_error(exc)
