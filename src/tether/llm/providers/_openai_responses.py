"""OpenAI Responses API.

Output arrives as items: ``message`` (text), ``reasoning`` (summary text plus ``encrypted_content`` that must be
sent back on the next step when nothing is stored server-side), ``function_call`` (JSON arguments, ``call_id``),
``custom_tool_call`` (freeform text input) and ``apply_patch_call`` (an operation object). Failures arrive in the
stream as ``error`` or ``response.failed``; both become a :class:`ProviderErrorEvent` with the mapped error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

from ...errors import ProviderError
from ...tools import File, Text, ToolDefinition
from .._events import (
    Event,
    FinishReason,
    ProviderErrorEvent,
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
from ._common import CallIds, ToolNames, dump_arguments, provider_meta, tool_call_event
from ._errors import error_from_code, map_error
from ._wire import as_int, openai_strict_ok, result_text

if TYPE_CHECKING:
    from ._clients import Loaded

__all__ = [
    "OpenAIResponsesModel",
    "ResponsesAssembler",
    "build_responses_body",
    "responses_items",
]

_META = "openai"


def _f(obj: Any, key: str) -> Any:
    """A member of a JSON object of the stream (``None`` when absent, or when ``obj`` is not an object).

    Events are read as the JSON the server sent (``_sse``), not as an SDK's event models:
    building those cost about 1 ms an event, more than the assembly (issue 14). What must be there is checked where
    it is read (:func:`_delta`).
    """
    if isinstance(obj, dict):
        return obj.get(key)  # pyright: ignore[reportUnknownMemberType]
    return None


def _input_parts(parts: tuple[Text | File, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Text):
            out.append({"type": "input_text", "text": part.text})
        elif part.mime.startswith("image/"):
            out.append({"type": "input_image", "image_url": part.data_uri()})
        elif part.data is not None:
            out.append({"type": "input_file", "filename": part.name or "file", "file_data": part.data_uri()})
        else:
            out.append({"type": "input_file", "file_url": part.data_uri()})
    return out


def _tool(defn: ToolDefinition, names: ToolNames, strict: bool) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "type": "function",
        "name": names.wire(defn.name),
        "description": defn.description,
        "parameters": dict(defn.input_schema),
    }
    if strict:
        tool["strict"] = openai_strict_ok(defn.input_schema)
    return tool


def responses_items(message: Message, names: ToolNames, kinds: Mapping[str, str]) -> list[dict[str, Any]]:
    """One history message's input items; ``kinds`` maps the history's call ids to their item types."""
    if isinstance(message, UserMessage):
        parts = message.content
        if len(parts) == 1 and isinstance(parts[0], Text):
            return [{"role": "user", "content": parts[0].text}]
        return [{"role": "user", "content": _input_parts(parts)}]
    items: list[dict[str, Any]] = []
    if isinstance(message, AssistantMessage):
        for part in message.content:
            if isinstance(part, TextContent):
                items.append({"role": "assistant", "content": part.text})
            elif isinstance(part, ReasoningContent):
                meta = provider_meta(part.provider_metadata, _META)
                if not meta.get("item_id"):
                    continue  # reasoning from another provider cannot be replayed here
                item: dict[str, Any] = {
                    "type": "reasoning",
                    "id": meta["item_id"],
                    "summary": [{"type": "summary_text", "text": part.text}] if part.text else [],
                }
                if meta.get("encrypted_content"):
                    item["encrypted_content"] = meta["encrypted_content"]
                items.append(item)
            else:
                items.append(_call_item(part, names))
        return items
    for result in message.results:
        items.append(_result_item(result.call_id, result.content, result.is_error, kinds))
    return items


_Kinds = tuple[tuple[str, str], ...]


def _call_kinds(message: Message) -> _Kinds:
    """``(call id, item type)`` for each tool call of an assistant message: how its results go back."""
    if not isinstance(message, AssistantMessage):
        return ()
    return tuple((p.call_id, _call_kind(p)) for p in message.content if isinstance(p, ToolCallContent))


def _call_kind(part: ToolCallContent) -> str:
    return str(provider_meta(part.provider_metadata, _META).get("type") or "function_call")


def build_responses_body(
    request: ModelRequest, model_id: str, *, names: ToolNames, strict_tools: bool = True
) -> dict[str, Any]:
    """The ``/responses`` body for ``request``, without its options (pure; snapshot-tested).

    Reasoning items are sent back with their ``encrypted_content`` (the ``reasoning_effort`` option makes the
    request stateless and asks for encrypted reasoning, so it can travel to the next step).
    """
    items: list[dict[str, Any]] = []
    kinds: dict[str, str] = {}
    for message in request.messages:
        items.extend(responses_items(message, names, kinds))
        kinds.update(_call_kinds(message))
    body: dict[str, Any] = {"model": model_id, "input": items, "stream": True}
    if request.system:
        body["instructions"] = "\n\n".join(request.system)
    if request.tools:
        body["tools"] = [_tool(t, names, strict_tools) for t in request.tools]
        choice = request.tool_choice
        body["tool_choice"] = (
            choice
            if choice in ("auto", "none", "required")
            else {"type": "function", "name": names.wire(choice)}
        )
    return body


def _call_item(part: ToolCallContent, names: ToolNames) -> dict[str, Any]:
    kind = _call_kind(part)
    if kind == "custom_tool_call":
        return {
            "type": kind,
            "call_id": part.call_id,
            "name": names.wire(part.name),
            "input": str(part.input),
        }
    if kind == "apply_patch_call":
        return {"type": kind, "call_id": part.call_id, "operation": part.input, "status": "completed"}
    return {
        "type": "function_call",
        "call_id": part.call_id,
        "name": names.wire(part.name),
        "arguments": dump_arguments(part.input),
    }


def _result_item(
    call_id: str, content: tuple[Text | File, ...], is_error: bool, kinds: Mapping[str, str]
) -> dict[str, Any]:
    kind = kinds.get(call_id) or "function_call"
    if kind == "custom_tool_call":
        return {"type": "custom_tool_call_output", "call_id": call_id, "output": result_text(content)}
    if kind == "apply_patch_call":
        return {
            "type": "apply_patch_call_output",
            "call_id": call_id,
            "status": "failed" if is_error else "completed",
            "output": result_text(content),
        }
    has_files = any(isinstance(p, File) for p in content)
    output: Any = _input_parts(content) if has_files else result_text(content)
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def responses_usage(raw: Any) -> Usage:
    return Usage(
        input_tokens=as_int(_f(raw, "input_tokens")),
        output_tokens=as_int(_f(raw, "output_tokens")),
        reasoning_tokens=as_int(_f(_f(raw, "output_tokens_details"), "reasoning_tokens")),
        cache_read_tokens=as_int(_f(_f(raw, "input_tokens_details"), "cached_tokens")),
    )


class _Item:
    __slots__ = ("args", "call_id", "done", "kind", "name")

    def __init__(self, kind: str, call_id: str = "", name: str = "") -> None:
        self.kind = kind
        self.call_id = call_id
        self.name = name
        self.args: list[str] = []
        self.done = False


_CALL_KINDS = frozenset({"function_call", "custom_tool_call", "apply_patch_call"})


def _delta(event: Any) -> tuple[str, str]:
    """``(item_id, delta)`` of a text or reasoning delta event, both strings as the API always sends them."""
    item_id = _f(event, "item_id")
    delta = _f(event, "delta")
    if not isinstance(item_id, str) or not isinstance(delta, str):
        raise MalformedEvent(f"a {_f(event, 'type')} event needs a string item_id and delta")
    return item_id, delta


class ResponsesAssembler:
    """Turns Responses stream events into tether events (pure, synchronous)."""

    def __init__(self, *, ids: CallIds, names: ToolNames) -> None:
        self._ids = ids
        self._names = names
        self._items: dict[str, _Item] = {}
        self._open_reasoning: set[str] = set()
        self._calls = 0
        self._done = False
        self._failed = False
        self._response_id: str | None = None
        self._handlers = {
            "response.created": self._created,
            "response.output_item.added": self._added,
            "response.output_item.done": self._item_done,
            "response.output_text.delta": self._text_delta,
            "response.refusal.delta": self._text_delta,
            "response.reasoning_summary_text.delta": self._reasoning_delta,
            "response.reasoning_text.delta": self._reasoning_delta,
            "response.reasoning_summary_part.added": self._summary_part,
            "response.function_call_arguments.delta": self._args_delta,
            "response.custom_tool_call_input.delta": self._args_delta,
            "response.apply_patch_call_operation_diff.delta": self._args_delta,
            "response.completed": self._completed,
            "response.incomplete": self._completed,
            "response.failed": self._response_failed,
            "error": self._error,
        }

    def feed(self, item: Any) -> list[Event]:
        if self._failed:
            return []
        handler = self._handlers.get(_f(item, "type"))
        return handler(item) if handler is not None else []

    def _created(self, event: Any) -> list[Event]:
        self._response_id = _f(_f(event, "response"), "id")
        return []

    def _added(self, event: Any) -> list[Event]:
        item = _f(event, "item")
        kind = _f(item, "type")
        item_id = _f(item, "id") or f"item-{_f(event, 'output_index')}"
        if kind == "message":
            self._items[item_id] = _Item(kind)
            return [TextStart(id=item_id)]
        if kind == "reasoning":
            self._items[item_id] = _Item(kind)
            self._open_reasoning.add(item_id)
            return [ReasoningStart(id=item_id)]
        if kind in _CALL_KINDS:
            name = "apply_patch" if kind == "apply_patch_call" else self._names.tether(_f(item, "name") or "")
            state = _Item(kind, self._ids.assign(_f(item, "call_id")), name)
            self._items[item_id] = state
            return [ToolInputStart(id=state.call_id, name=name)]
        return []

    def _text_delta(self, event: Any) -> list[Event]:
        item_id, delta = _delta(event)
        if item_id not in self._items:
            self._items[item_id] = _Item("message")
            return [TextStart(id=item_id), TextDelta(id=item_id, text=delta)]
        return [TextDelta(id=item_id, text=delta)]

    def _reasoning_delta(self, event: Any) -> list[Event]:
        item_id, delta = _delta(event)
        return [ReasoningDelta(id=item_id, text=delta)]

    def _summary_part(self, event: Any) -> list[Event]:
        if _f(event, "summary_index"):
            return [ReasoningDelta(id=_f(event, "item_id"), text="\n\n")]
        return []

    def _args_delta(self, event: Any) -> list[Event]:
        state = self._items.get(_f(event, "item_id"))
        if state is None or state.kind not in _CALL_KINDS:
            return []
        delta = _f(event, "delta") or ""
        state.args.append(delta)
        return [ToolInputDelta(id=state.call_id, name=state.name, text=delta)] if delta else []

    def _item_done(self, event: Any) -> list[Event]:
        item = _f(event, "item")
        kind = _f(item, "type")
        item_id = _f(item, "id") or f"item-{_f(event, 'output_index')}"
        state = self._items.get(item_id)
        if kind == "message":
            return [TextEnd(id=item_id, provider_metadata={_META: {"item_id": item_id}})]
        if kind == "reasoning":
            self._open_reasoning.discard(item_id)
            meta: dict[str, Any] = {"item_id": item_id}
            encrypted = _f(item, "encrypted_content")
            if encrypted:
                meta["encrypted_content"] = encrypted
            return [ReasoningEnd(id=item_id, provider_metadata={_META: meta})]
        if kind not in _CALL_KINDS:
            return []
        out: list[Event] = []
        if state is None:  # a call that was never announced with output_item.added
            name = "apply_patch" if kind == "apply_patch_call" else self._names.tether(_f(item, "name") or "")
            state = _Item(kind, self._ids.assign(_f(item, "call_id")), name)
            self._items[item_id] = state
            out.append(ToolInputStart(id=state.call_id, name=name))
        self._calls += 1
        state.done = True
        out.append(ToolInputEnd(id=state.call_id, name=state.name))
        meta = {"item_id": item_id, "type": kind}
        if kind == "function_call":
            raw = _f(item, "arguments")
            out.append(
                tool_call_event(
                    call_id=state.call_id,
                    name=state.name,
                    raw=raw if isinstance(raw, str) else "".join(state.args),
                    cut_off=False,
                    provider_metadata={_META: meta},
                )
            )
        elif kind == "custom_tool_call":
            raw = _f(item, "input")
            text = raw if isinstance(raw, str) else "".join(state.args)
            out.append(
                ToolCallEvent(id=state.call_id, name=state.name, input=text, provider_metadata={_META: meta})
            )
        else:
            operation = _f(item, "operation")
            if isinstance(
                operation, dict
            ):  # members sent as null are absent, as the SDK's models dumped them
                operation = {k: v for k, v in cast(dict[str, Any], operation).items() if v is not None}
            out.append(
                ToolCallEvent(
                    id=state.call_id, name=state.name, input=operation, provider_metadata={_META: meta}
                )
            )
        return out

    def _completed(self, event: Any) -> list[Event]:
        response = _f(event, "response")
        usage = _f(response, "usage")
        reason: FinishReason = "tool-calls" if self._calls else "stop"
        out: list[Event] = []
        if _f(response, "status") == "incomplete":
            why = _f(_f(response, "incomplete_details"), "reason")
            reason = "content-filter" if why == "content_filter" else "length"
            out.extend(self._cut_off_calls())
        self._done = True
        meta = {_META: {"response_id": self._response_id or _f(response, "id")}}
        out.append(
            StepFinish(
                reason=reason, usage=None if usage is None else responses_usage(usage), provider_metadata=meta
            )
        )
        return out

    def _cut_off_calls(self) -> list[Event]:
        """Calls still streaming when the response stopped: reported incomplete, never run."""
        out: list[Event] = []
        for state in self._items.values():
            if state.kind in _CALL_KINDS and not state.done:
                state.done = True
                out.append(ToolInputEnd(id=state.call_id, name=state.name))
                out.append(
                    ToolCallEvent(
                        id=state.call_id,
                        name=state.name,
                        input="".join(state.args),
                        invalid="The output limit was reached while the input was being written; the call was not run.",
                        incomplete=True,
                    )
                )
        return out

    def _response_failed(self, event: Any) -> list[Event]:
        error = _f(_f(event, "response"), "error")
        return self._fail(_f(error, "code"), _f(error, "message") or "The response failed.", error)

    def _error(self, event: Any) -> list[Event]:
        nested = _f(event, "error")
        source = nested if nested is not None else event
        return self._fail(
            _f(source, "code") or _f(source, "type"), _f(source, "message") or "Stream error", source
        )

    def _fail(self, code: Any, message: str, body: Any) -> list[Event]:
        self._failed = True
        error: ProviderError = error_from_code(str(code) if code else None, message, body=body)
        return [ProviderErrorEvent(message=message, error=error)]

    def finish(self) -> list[Event]:
        if self._done or self._failed:
            return []
        return [stream_ended_early()]


class OpenAIResponsesModel(HTTPModel):
    """A model served over OpenAI's Responses API."""

    path = "/responses"
    api = "Responses"
    takes_options: ClassVar[Mapping[str, str]] = {
        "temperature": "temperature",
        "top_p": "top_p",
        "max_tokens": "max_output_tokens",
        "user": "user",
        "reasoning_effort": "reasoning",
    }

    def __init__(
        self,
        model_id: str,
        *,
        provider: str = "openai",
        settings: ClientSettings | None = None,
        client: Any = None,
        strict_tools: bool = True,
    ) -> None:
        super().__init__(model_id, provider=provider, settings=settings or ClientSettings(), client=client)
        self.strict_tools = strict_tools

    def _load(self) -> Loaded:
        from ._clients import load_openai

        return load_openai(self.settings, client=self._given_client)

    def _body(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        return build_responses_body(request, self.model_id, names=names, strict_tools=self.strict_tools)

    def _wire_option(self, key: str, value: Any) -> Mapping[str, Any]:
        if key == "reasoning_effort":  # stateless: the encrypted reasoning travels to the next step
            return {
                "reasoning": {"effort": value, "summary": "auto"},
                "include": ["reasoning.encrypted_content"],
                "store": False,
            }
        return super()._wire_option(key, value)

    def _assembler(self, ids: CallIds, names: ToolNames) -> Assembler:
        return ResponsesAssembler(ids=ids, names=names)

    def _map_error(self, exc: BaseException) -> ProviderError:
        return map_error(exc)
