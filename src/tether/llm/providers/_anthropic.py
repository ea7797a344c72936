"""Anthropic Messages API.

Content blocks stream by ``index``: text, thinking (its ``signature`` must travel back on the next step, or the
API rejects the history), redacted thinking, and tool_use whose input JSON is split across ``input_json_delta``s at
arbitrary points (inside escapes too), so it is parsed only at ``content_block_stop``. Empty input means ``{}``. When
the output limit cuts a tool input, the call is reported ``incomplete`` and never runs. A repeated
``message_start`` with the same id is ignored; one with a new id (a spliced stream) abandons the first message's
unfinished blocks and continues with the second.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

from ...errors import ProviderError
from ...tools import File, Text, ToolDefinition
from .._events import (
    Event,
    FinishReason,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallEvent,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    ToolResultEvent,
    Usage,
)
from .._request import AssistantMessage, Message, ModelRequest, ReasoningContent, TextContent, UserMessage
from ._base import Assembler, ClientSettings, HTTPModel, MalformedEvent, stream_ended_early
from ._common import CallIds, ToolNames, parse_tool_input, provider_meta, tool_call_event
from ._errors import map_error
from ._wire import as_int, result_text

if TYPE_CHECKING:
    from ._clients import Loaded

__all__ = [
    "AnthropicAssembler",
    "AnthropicModel",
    "anthropic_blocks",
    "build_anthropic_body",
]

_META = "anthropic"
DEFAULT_MAX_TOKENS = 8192

_FINISH: Mapping[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content-filter",
}


def _blocks(parts: tuple[Text | File, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Text):
            if part.text:
                out.append({"type": "text", "text": part.text})
            continue
        kind = "image" if part.mime.startswith("image/") else "document"
        if part.data is not None:
            source = {"type": "base64", "media_type": part.mime, "data": part.data}
        else:
            source = {"type": "url", "url": part.uri}
        out.append({"type": kind, "source": source})
    return out


def _tool(defn: ToolDefinition, names: ToolNames) -> dict[str, Any]:
    return {
        "name": names.wire(defn.name),
        "description": defn.description,
        "input_schema": dict(defn.input_schema),
    }


def anthropic_blocks(message: Message, names: ToolNames) -> tuple[str, list[dict[str, Any]]]:
    """One history message's role and content blocks (consecutive same-role messages are merged by the caller)."""
    if isinstance(message, UserMessage):
        return "user", _blocks(message.content)
    if isinstance(message, AssistantMessage):
        blocks: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, TextContent):
                if part.text:
                    blocks.append({"type": "text", "text": part.text})
            elif isinstance(part, ReasoningContent):
                meta = provider_meta(part.provider_metadata, _META)
                if meta.get("redacted_data"):
                    blocks.append({"type": "redacted_thinking", "data": meta["redacted_data"]})
                elif meta.get("signature"):
                    blocks.append({"type": "thinking", "thinking": part.text, "signature": meta["signature"]})
                # thinking without a signature (another provider's, or cut off) cannot be sent back
            else:
                value = part.input if isinstance(part.input, dict) else {}
                blocks.append(
                    {"type": "tool_use", "id": part.call_id, "name": names.wire(part.name), "input": value}
                )
        return "assistant", blocks
    results: list[dict[str, Any]] = []
    for result in message.results:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id}
        if any(isinstance(p, File) for p in result.content):
            block["content"] = _blocks(result.content)
        else:
            block["content"] = result_text(result.content)
        if result.is_error:
            block["is_error"] = True
        results.append(block)
    return "user", results


def build_anthropic_body(
    request: ModelRequest, model_id: str, *, names: ToolNames, max_tokens: int = DEFAULT_MAX_TOKENS
) -> dict[str, Any]:
    """The ``/v1/messages`` body for ``request``, without its options (pure; snapshot-tested).

    Tool results go back as ``tool_result`` blocks in one user message (``is_error`` for failures, images as image
    blocks); thinking blocks go back with their signatures; consecutive same-role messages are merged.
    """
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        role, content = anthropic_blocks(message, names)
        if not content:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(content)
        else:
            messages.append({"role": role, "content": content})
    body: dict[str, Any] = {"model": model_id, "max_tokens": max_tokens, "messages": messages, "stream": True}
    if request.system:
        body["system"] = [{"type": "text", "text": s} for s in request.system]
    if request.tools:
        body["tools"] = [_tool(t, names) for t in request.tools]
        choice = request.tool_choice
        if choice == "none":
            body["tool_choice"] = {"type": "none"}
        elif choice == "required":
            body["tool_choice"] = {"type": "any"}
        elif choice != "auto":
            body["tool_choice"] = {"type": "tool", "name": names.wire(choice)}
    return body


class _Block:
    __slots__ = ("args", "data", "id", "initial", "kind", "name", "parsed", "signature")

    def __init__(self, kind: str, block_id: str, name: str = "") -> None:
        self.kind = kind
        self.id = block_id
        self.name = name
        self.args: list[str] = []
        self.signature: str | None = None
        self.data: str | None = None
        self.initial: Any = None
        self.parsed: tuple[Any, str | None] | None = None  # the tool input's one parse, at content_block_stop


JSON = Mapping[str, Any]


class AnthropicAssembler:
    """Turns Messages stream events, as the JSON objects the server sent, into tether events (pure, synchronous).

    The events are read as parsed JSON (``_sse``), not as an SDK's event models: a text
    answer is one event per few tokens, and building the SDK model of an event cost more than the assembly (issue 14).
    A member the assembler needs and does not find is a ``KeyError``, reported as a malformed stream.
    """

    def __init__(self, *, ids: CallIds, names: ToolNames) -> None:
        self._ids = ids
        self._names = names
        self._message_id: str | None = None
        self._blocks: dict[int, _Block] = {}
        self._held: list[
            _Block
        ] = []  # tool inputs that did not parse: complete or cut off? the stop reason says
        self._counter = 0
        self._server_tools: dict[str, str] = {}
        self._stop_reason: str | None = None
        self._stop_details: Any = None
        self._finished = False
        self._input = 0
        self._cache_read = 0
        self._cache_write = 0
        self._output = 0
        self._handlers = {
            "message_start": self._message_start,
            "content_block_start": self._block_start,
            "content_block_delta": self._block_delta,
            "content_block_stop": self._block_stop,
            "message_delta": self._message_delta,
            "message_stop": self._message_stop,
        }

    def feed(self, item: Any) -> list[Event]:
        if self._finished:
            return []
        if not isinstance(item, dict):
            raise MalformedEvent(f"an event must be a JSON object, not {type(item).__name__}")
        event = cast(JSON, item)
        handler = self._handlers.get(event.get("type"))  # pyright: ignore[reportArgumentType]
        return handler(event) if handler is not None else []

    def _usage(self, usage: Any) -> None:
        if usage is None:
            return
        if not isinstance(usage, dict):
            raise MalformedEvent(f"usage must be an object, not {type(usage).__name__}")
        counts = cast(JSON, usage)
        self._input = as_int(counts.get("input_tokens", self._input))
        self._cache_read = as_int(counts.get("cache_read_input_tokens", self._cache_read))
        self._cache_write = as_int(counts.get("cache_creation_input_tokens", self._cache_write))
        self._output = as_int(counts.get("output_tokens", self._output))

    def _message_start(self, event: JSON) -> list[Event]:
        message = event["message"]
        out: list[Event] = []
        if self._message_id is not None:
            if message["id"] == self._message_id:
                return out  # a duplicated message_start
            out.extend(self._abandon())
        self._message_id = message["id"]
        self._usage(message.get("usage"))
        return out

    def _abandon(self) -> list[Event]:
        """A second message spliced into the stream: close the first one's unfinished blocks without content."""
        out: list[Event] = []
        for block in self._blocks.values():
            if block.kind == "text":
                out.append(TextEnd(id=block.id))
            elif block.kind in ("thinking", "redacted_thinking"):
                out.append(ReasoningEnd(id=block.id))  # no signature: it is not replayed
            elif block.kind == "tool_use":
                out.append(ToolInputEnd(id=block.id, name=block.name))
                out.append(
                    ToolCallEvent(
                        id=block.id,
                        name=block.name,
                        input="".join(block.args),
                        invalid="The response was restarted before these arguments were complete; the call was not run.",
                        incomplete=True,
                    )
                )
        self._blocks = {}
        return out

    def _next_id(self, prefix: str) -> str:
        block_id = f"{prefix}-{self._counter}"
        self._counter += 1
        return block_id

    def _block_start(self, event: JSON) -> list[Event]:
        block = event["content_block"]
        kind = block["type"]
        if not isinstance(kind, str):
            raise MalformedEvent(f"a content block's type must be a string, not {type(kind).__name__}")
        if kind == "text":
            state = _Block(kind, self._next_id("text"))
            self._blocks[event["index"]] = state
            out: list[Event] = [TextStart(id=state.id)]
            text = _string(block.get("text"), "a text block's text")
            if text:
                out.append(TextDelta(id=state.id, text=text))
            return out
        if kind in ("thinking", "redacted_thinking"):
            state = _Block(kind, self._next_id("reasoning"))
            state.data = block.get("data")
            state.signature = block.get("signature") or None
            self._blocks[event["index"]] = state
            out = [ReasoningStart(id=state.id)]
            thinking = _string(block.get("thinking"), "a thinking block's thinking")
            if thinking:
                out.append(ReasoningDelta(id=state.id, text=thinking))
            return out
        if kind in ("tool_use", "server_tool_use"):
            wire_name = _string(block["name"], "a tool_use block's name")
            name = self._names.tether(wire_name) if kind == "tool_use" else wire_name
            state = _Block(kind, self._ids.assign(_string(block["id"], "a tool_use block's id")), name)
            state.initial = block.get("input")
            self._blocks[event["index"]] = state
            if kind == "server_tool_use":
                self._server_tools[block["id"]] = name
            return [ToolInputStart(id=state.id, name=name)]
        if kind.endswith("_tool_result"):
            tool_use_id = str(block.get("tool_use_id", ""))
            name = self._server_tools.get(tool_use_id) or kind.removesuffix("_tool_result")
            return [ToolResultEvent(id=tool_use_id, name=name, result=block.get("content"))]
        return []

    def _block_delta(self, event: JSON) -> list[Event]:
        state = self._blocks.get(event["index"])
        if state is None:
            return []
        delta = event.get("delta")
        if delta is None:
            raise MalformedEvent("a content_block_delta event needs a delta")
        kind = delta["type"]
        if kind == "text_delta":
            return [
                TextDelta(id=state.id, text=_string(delta.get("text"), "a text_delta's text", empty=None))
            ]
        if kind == "input_json_delta":
            text = _string(delta.get("partial_json"), "an input_json_delta's partial_json")
            if not text:
                return []
            state.args.append(text)
            return [ToolInputDelta(id=state.id, name=state.name, text=text)]
        if kind == "thinking_delta":
            return [
                ReasoningDelta(id=state.id, text=_string(delta["thinking"], "a thinking_delta's thinking"))
            ]
        if kind == "signature_delta":
            state.signature = (state.signature or "") + _string(
                delta["signature"], "a signature_delta's signature"
            )
        return []

    def _block_stop(self, event: JSON) -> list[Event]:
        state = self._blocks.pop(event["index"], None)
        if state is None:
            return []
        return self._close(state)

    def _close(self, state: _Block, *, cut_off: bool = False) -> list[Event]:
        if state.kind == "text":
            return [TextEnd(id=state.id)]
        if state.kind == "thinking":
            meta = {_META: {"signature": state.signature}} if state.signature else None
            return [ReasoningEnd(id=state.id, provider_metadata=meta)]
        if state.kind == "redacted_thinking":
            return [ReasoningEnd(id=state.id, provider_metadata={_META: {"redacted_data": state.data}})]
        out: list[Event] = [ToolInputEnd(id=state.id, name=state.name)]
        raw = "".join(state.args)
        initial = state.initial if isinstance(state.initial, dict) and state.initial else None
        state.parsed = parse_tool_input(raw, empty=initial)
        if not cut_off and state.parsed[1] is not None:
            self._held.append(state)  # invalid JSON: whether it was cut off is known only at message_delta
            return out
        event = tool_call_event(
            call_id=state.id, name=state.name, raw=raw, cut_off=cut_off, parsed=state.parsed
        )
        if state.kind == "server_tool_use":
            event = ToolCallEvent(id=event.id, name=event.name, input=event.input, provider_executed=True)
        out.append(event)
        return out

    def _message_delta(self, event: JSON) -> list[Event]:
        delta = event["delta"]
        stop_reason = delta.get("stop_reason")
        if stop_reason is not None:
            self._stop_reason = _string(stop_reason, "a stop_reason")
        details = delta.get("stop_details")
        if details is not None:
            self._stop_details = details
        self._usage(event.get("usage"))
        return []

    def _message_stop(self, event: JSON) -> list[Event]:
        return self._end()

    def _end(self) -> list[Event]:
        self._finished = True
        cut_off = self._stop_reason in ("max_tokens", "model_context_window_exceeded")
        out: list[Event] = []
        for state in self._held:
            out.append(
                tool_call_event(
                    call_id=state.id,
                    name=state.name,
                    raw="".join(state.args),
                    cut_off=cut_off,
                    parsed=state.parsed,
                )
            )
        self._held = []
        for index in sorted(self._blocks):
            out.extend(self._close(self._blocks[index], cut_off=True))
        self._blocks = {}
        usage = Usage(
            input_tokens=self._input + self._cache_read + self._cache_write,
            output_tokens=self._output,
            cache_read_tokens=self._cache_read,
            cache_write_tokens=self._cache_write,
        )
        meta: dict[str, Any] = {"message_id": self._message_id, "stop_reason": self._stop_reason}
        if self._stop_details is not None:
            meta["stop_details"] = self._stop_details
        reason = _FINISH.get(self._stop_reason or "", "unknown")
        out.append(StepFinish(reason=reason, usage=usage, provider_metadata={_META: meta}))
        return out

    def finish(self) -> list[Event]:
        if self._finished:
            return []
        if self._stop_reason is not None:  # message_delta arrived, message_stop did not
            return self._end()
        out: list[Event] = []
        for state in self._blocks.values():
            if state.kind == "text":
                out.append(TextEnd(id=state.id))
            elif state.kind != "tool_use":
                out.append(ReasoningEnd(id=state.id))
        out.append(stream_ended_early())
        return out


def _string(value: Any, what: str, *, empty: str | None = "") -> str:
    """``value`` when it is a string; ``empty`` for a missing member (``None``: one is required)."""
    if isinstance(value, str):
        return value
    if value is None and empty is not None:
        return empty
    raise MalformedEvent(f"{what} must be a string, not {type(value).__name__}")


class AnthropicModel(HTTPModel):
    """A model served over Anthropic's Messages API."""

    path = "/v1/messages"
    dialect = "anthropic"
    api = "Messages"
    takes_options: ClassVar[Mapping[str, str]] = {
        "temperature": "temperature",
        "top_p": "top_p",
        "top_k": "top_k",
        "max_tokens": "max_tokens",
        "stop": "stop_sequences",
        "thinking_budget": "thinking",
    }

    def __init__(
        self,
        model_id: str,
        *,
        provider: str = "anthropic",
        settings: ClientSettings | None = None,
        client: Any = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        super().__init__(model_id, provider=provider, settings=settings or ClientSettings(), client=client)
        self.max_tokens = max_tokens

    def _load(self) -> Loaded:
        from ._clients import load_anthropic

        return load_anthropic(self.settings, client=self._given_client)

    def _body(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        return build_anthropic_body(request, self.model_id, names=names, max_tokens=self.max_tokens)

    def _wire_option(self, key: str, value: Any) -> Mapping[str, Any]:
        if key == "thinking_budget":
            return {"thinking": {"type": "enabled", "budget_tokens": value}}
        return super()._wire_option(key, value)

    def _assembler(self, ids: CallIds, names: ToolNames) -> Assembler:
        return AnthropicAssembler(ids=ids, names=names)

    def _map_error(self, exc: BaseException) -> ProviderError:
        return map_error(exc)
