"""The spans of a traced turn, after the OpenTelemetry GenAI semantic conventions.

The tree (docs/telemetry.md draws it)::

    invoke_agent <agent>            one turn (Session.prompt)
      chat <model>                  one step: the model request, from the request until its stream ends
        execute_tool <tool>         one call of that step; parallel calls are siblings under their step's chat
          invoke_agent <subagent>   the task tool's child session, with its own chat and execute_tool spans

A call starts while its step's response still streams (tether runs a call as soon as its input is complete), so an
``execute_tool`` span starts inside its ``chat`` span and may end after it: ``chat`` measures the model alone, as
the conventions mean it. An ``execute_tool`` span follows the call's durable tool part (law 7): it starts with the
part's first ``running`` record and ends with its settled one, so what the span says (outcome, error kind, bounded,
the permission decisions and the rules that decided) is what the store holds, whatever settled the call (its
outcome, a timeout, a defect, a cancelled step). The parents are explicit, never the ambient context, because calls
run on the turn's pooled tasks. The turn's span is the current span while the turn runs, so a span a tool or a
provider client opens itself nests under ``invoke_agent``.

Content (the prompt, system texts, model text, tool inputs, results and error texts, permission resources, the
pattern of a saved approval) is recorded only with ``TETHER_OTEL_CONTENT=1``. What is always recorded is metadata:
ids, names, models, token counts, finish reasons, outcomes, error kinds, and the permission decision with the rule
that decided (a configured rule's pattern comes from the config, not from the call; a saved approval's pattern is
the text of an earlier call, so it is content).

Every text from outside is made exportable here (law 12): a lone surrogate is escaped (an exporter cannot encode it),
and a value is cut to a length limit with a marker (a collector refuses a request over its size limit, and the
exporter then drops the whole batch: one huge write must not cost the trace of every call beside it). The store
holds the full record.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from .._version import __version__
from ..content import Content, File, Text, text_of
from ..errors import ProviderError
from ..llm import Model, ModelRequest, Usage
from ..session import AssistantInfo, SessionInfo, TextPart, ToolPart
from ..storable import has_surrogates, visible

if TYPE_CHECKING:
    from ..session.internal import StepProcessor, TurnSoFar

__all__ = ["ChatTrace", "TurnTrace"]

_PROVIDERS = {"mistral": "mistral_ai", "xai": "x_ai", "bedrock": "aws.bedrock", "gemini": "gcp.gemini"}
"""tether provider ids whose GenAI convention name differs; any other id is its own ``gen_ai.provider.name``."""

CONTENT_LIMIT = 16_384
"""The most characters one content value (a text, a tool's arguments, a result, an error) keeps in a span."""

NAME_LIMIT = 256
"""The most characters a tool name or a call id (both written by the model) keeps in a span."""

_FINISH_REASONS = {"tool-calls": "tool_call", "content-filter": "content_filter"}
"""tether finish reasons whose GenAI convention value differs (the conventions': stop, length, content_filter,
tool_call, error); any other is its own."""

_CONFIG_SOURCES = frozenset({"agent", "config", "agent-config", "project", "session", "unresolved"})
"""The rulesets whose patterns come from configuration (recorded always); any other source's patterns (``saved``:
an "always" reply saves the call's own command or path) are content."""

_RESOURCES = 100
"""The most resources of one permission decision a span records (an apply_patch may touch thousands of files)."""

_CALLS: dict[tuple[str, str], Span] = {}
"""The ``execute_tool`` span of each call running now, by session and call id: a child session's turn (the ``task``
tool's) finds its parent call's span here by its ``parent_id`` and ``parent_call_id``."""

_REQUEST_OPTIONS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "max_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "stop": "gen_ai.request.stop_sequences",
}


def _clip(text: str, limit: int = CONTENT_LIMIT) -> str:
    """``text`` made exportable: lone surrogates escaped, and cut after ``limit`` characters with a marker."""
    text = visible(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def _json(value: Any) -> str:
    # Text from outside (a model's arguments, a file name) may hold a lone surrogate, which no exporter can encode: a
    # span that carries one would lose its whole batch. JSON's ASCII form escapes it (law 12).
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return json.dumps(value, default=repr) if has_surrogates(text) else text


def _arguments(value: Any) -> Any:
    """A call's arguments for a message: the JSON value itself, or its text cut to the limit when it is longer."""
    if isinstance(value, str):
        return _clip(value)
    text = _json(value)
    return value if len(text) <= CONTENT_LIMIT else _clip(text)


def _file(part: File) -> dict[str, Any]:
    """A file part as the conventions' ``uri`` part, or, for inline data, a part naming its type only (the bytes,
    often megabytes of base64, are never put in a span)."""
    modality = next((m for m in ("image", "video", "audio") if part.mime.startswith(f"{m}/")), "document")
    if part.uri is not None and not part.uri.startswith("data:"):
        return {"type": "uri", "mime_type": part.mime, "modality": modality, "uri": _clip(part.uri)}
    return {"type": "file", "mime_type": part.mime, "modality": modality}


def _finish_reason(reason: str) -> str:
    return _FINISH_REASONS.get(reason, reason)


def _usage(span: Span, usage: Usage | None) -> None:
    if usage is None:
        return
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    if usage.cache_read_tokens:
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
    if usage.cache_write_tokens:
        span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
    if usage.reasoning_tokens:
        span.set_attribute("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens)


def _failed(span: Span, exc: BaseException, *, content: bool) -> None:
    """Mark ``span`` as ended by ``exc``: a cancellation is an outcome (``tether.cancelled``), anything else an error.

    The exception's type is metadata; its message and traceback are content (a provider's error quotes the request,
    a store error names a session's file), recorded as an ``exception`` event only when content is on.
    """
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        span.set_attribute("tether.cancelled", True)
        return
    span.set_attribute("error.type", type(exc).__qualname__)
    if content:
        span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))


class TurnTrace:
    """The ``invoke_agent`` span of one turn; its :meth:`chat` gives each step's trace (``None`` when not sampled).

    It is the session runner's ``TurnObserver`` (``tether.session.internal``), as :class:`ChatTrace` is its
    ``StepObserver``: the runner calls these hooks and never imports this package.
    """

    __slots__ = (
        "_span",
        "calls",
        "content",
        "context",
        "finish_reason",
        "info",
        "model",
        "provider",
        "tracer",
    )

    def __init__(self, provider: TracerProvider, info: SessionInfo, model: Model, *, content: bool) -> None:
        self.tracer = provider.get_tracer("tether", __version__)
        self.info = info
        self.model = model
        self.provider = _PROVIDERS.get(model.provider, model.provider)
        self.content = content
        self.context: otel_context.Context | None = None
        self._span: Span | None = None
        self.calls: set[tuple[str, str]] = set()
        """The keys (in ``_CALLS``) of this turn's calls whose span is open."""
        self.finish_reason: str | None = None
        """The last step's finish reason (convention value): the turn's output message's."""

    async def run(
        self,
        work: Awaitable[None],
        system: Sequence[str],
        progress: TurnSoFar,
        user_id: str,
        user: Sequence[Content],
    ) -> None:
        """Await ``work`` (the turn's steps) inside the turn's span (made current: a child session nests under it).

        ``system`` is the turn's system texts; ``user_id`` and ``user`` are the turn's user message and its parts.

        Raises:
            Exception: whatever ``work`` raises, recorded on the span first.
        """
        info = self.info
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": info.agent,
            "gen_ai.conversation.id": info.id,
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model.model_id,
            "tether.message.id": user_id,
        }
        if info.parent_id is not None:
            attributes["tether.session.parent_id"] = info.parent_id
        if info.parent_call_id is not None:
            attributes["tether.session.parent_call_id"] = info.parent_call_id
        if self.content:
            parts = [
                {"type": "text", "content": _clip(p.text)} if isinstance(p, Text) else _file(p) for p in user
            ]
            attributes["gen_ai.input.messages"] = _json([{"role": "user", "parts": parts}])
            if system:
                attributes["gen_ai.system_instructions"] = _json(
                    [{"type": "text", "content": _clip(text)} for text in system]
                )
        parent = None
        if info.parent_id is not None and info.parent_call_id is not None:
            call = _CALLS.get((info.parent_id, info.parent_call_id))
            parent = None if call is None else trace.set_span_in_context(call)
        span = self._span = self.tracer.start_span(
            f"invoke_agent {info.agent}", context=parent, kind=SpanKind.INTERNAL, attributes=attributes
        )
        self.context = trace.set_span_in_context(span)
        token = otel_context.attach(self.context)
        try:
            await work
        except BaseException as exc:  # recorded, then re-raised unchanged (a cancellation too)
            _failed(span, exc, content=self.content)
            raise
        else:
            span.set_attribute("tether.turn.stop", progress.stop)
            if self.content and progress.text:
                message: dict[str, Any] = {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": _clip(progress.text)}],
                    "finish_reason": self.finish_reason or "stop",
                }
                span.set_attribute("gen_ai.output.messages", _json([message]))
        finally:
            otel_context.detach(token)
            for (
                key
            ) in self.calls:  # a part the store never took settled (it refused a write): end its span here
                call = _CALLS.pop(key, None)
                if call is not None:
                    call.set_attribute("tether.tool.outcome", "unrecorded")
                    call.end()
            span.set_attribute("tether.turn.steps", progress.steps)
            span.set_attribute("tether.turn.tool_calls", progress.tool_calls)
            _usage(span, progress.usage)
            span.end()

    def chat(self, request: ModelRequest, info: AssistantInfo, step: int) -> ChatTrace | None:
        """The trace of one step of this turn (``None`` when the turn's span is not recorded: sampled out)."""
        span = self._span
        if span is None or not span.is_recording():
            return None
        return ChatTrace(self, request, info, step)


class ChatTrace:
    """The ``chat`` span of one step, and the ``execute_tool`` spans of its calls (see the module docstring)."""

    __slots__ = ("_info", "_request", "_step", "_turn", "context")

    def __init__(self, turn: TurnTrace, request: ModelRequest, info: AssistantInfo, step: int) -> None:
        self._turn = turn
        self._request = request
        self._info = info
        self._step = step
        self.context: otel_context.Context | None = turn.context

    def wrap(
        self,
        stream: Callable[[], Awaitable[ProviderError | None]],
        processor: StepProcessor,
        defect: Callable[[], BaseException | None],
    ) -> Callable[[], Awaitable[ProviderError | None]]:
        """``stream`` (the step's model request and its consumption) inside the step's ``chat`` span.

        ``defect`` tells the defect ``stream`` contained (the step's failure policy records it instead of raising).
        """

        async def traced() -> ProviderError | None:
            turn = self._turn
            span = turn.tracer.start_span(
                f"chat {turn.model.model_id}",
                context=turn.context,
                kind=SpanKind.CLIENT,
                attributes=self._attributes(),
            )
            self.context = trace.set_span_in_context(span)
            try:
                error = await stream()
            except BaseException as exc:  # recorded, then re-raised unchanged
                _failed(span, exc, content=turn.content)
                raise
            else:
                failure = error if error is not None else defect()
                if failure is not None:
                    _failed(span, failure, content=turn.content)
                    if error is not None:
                        span.set_attribute("tether.provider.retryable", error.retryable)
                if turn.content:
                    span.set_attribute("gen_ai.output.messages", _json([_output(processor)]))
            finally:
                _usage(span, processor.usage)
                if processor.finish_reason is not None:
                    reason = turn.finish_reason = _finish_reason(processor.finish_reason)
                    span.set_attribute("gen_ai.response.finish_reasons", (reason,))
                span.end()
            return error

        return traced

    def _attributes(self) -> dict[str, Any]:
        turn = self._turn
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": turn.provider,
            "gen_ai.request.model": turn.model.model_id,
            "gen_ai.conversation.id": self._info.session_id,
            "gen_ai.agent.name": self._info.agent,
            "tether.message.id": self._info.id,
            "tether.step": self._step,
        }
        request = self._request
        if request.tool_choice == "none":
            attributes["tether.step.final"] = True
        options: Mapping[str, Any] = request.options
        for key, name in _REQUEST_OPTIONS.items():
            value = options.get(key)
            if value is not None:
                attributes[name] = value
        return attributes

    def tool_part(self, part: ToolPart) -> None:
        """A tool part was recorded (the runner's emitter for this step tells each one): the first running (or settled) record starts the call's ``execute_tool`` span,
        the settled one ends it with the outcome the part holds."""
        key = (part.session_id, part.call_id)
        span = _CALLS.get(key)
        if span is None:
            if part.state == "pending":
                return  # its input is still streaming: the call does not exist yet
            turn = self._turn
            turn.calls.add(key)
            name = _clip(part.tool, NAME_LIMIT)
            span = _CALLS[key] = turn.tracer.start_span(
                f"execute_tool {name}",
                context=self.context,
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": _clip(part.call_id, NAME_LIMIT),
                    "gen_ai.tool.type": "function",
                    "gen_ai.conversation.id": part.session_id,
                    "tether.message.id": part.message_id,
                },
            )
            if turn.content:
                arguments = part.raw if part.raw is not None else part.input
                span.set_attribute(
                    "gen_ai.tool.call.arguments",
                    _clip(arguments if isinstance(arguments, str) else _json(arguments)),
                )
        if part.settled:
            del _CALLS[key]
            self._turn.calls.discard(key)
            _tool_outcome(span, part, content=self._turn.content)
            span.end()


def _output(processor: StepProcessor) -> dict[str, Any]:
    """The step's response as the conventions' output message: its text, and its tool calls."""
    parts: list[dict[str, Any]] = []
    for part in processor.parts.values():
        if isinstance(part, TextPart) and part.text:
            parts.append({"type": "text", "content": _clip(part.text)})
        elif isinstance(part, ToolPart):
            parts.append(
                {
                    "type": "tool_call",
                    "id": _clip(part.call_id, NAME_LIMIT),
                    "name": _clip(part.tool, NAME_LIMIT),
                    "arguments": _arguments(part.raw if part.raw is not None else part.input),
                }
            )
    reason = processor.finish_reason
    return {"role": "assistant", "parts": parts, "finish_reason": _finish_reason(reason or "error")}


def _tool_outcome(span: Span, part: Any, *, content: bool) -> None:
    """The call's outcome, as its tool part recorded it: state, error kind, bounding, permission decisions."""
    if part is None:
        return
    state = part.state
    outcome = state if state in ("completed", "error") else "aborted"  # still running: the step was cancelled
    span.set_attribute("tether.tool.outcome", outcome)
    if part.error_kind is not None:
        span.set_attribute("tether.tool.error_kind", part.error_kind)
        span.set_attribute("error.type", part.error_kind)
        span.set_status(Status(StatusCode.ERROR, part.error_kind))
        if content and part.error:
            span.set_attribute("tether.tool.error", _clip(part.error))
    if part.interrupted:
        span.set_attribute("tether.tool.interrupted", True)
    if state == "completed":
        span.set_attribute("tether.tool.bounded", bool(part.output_paths))
        if content:
            span.set_attribute("gen_ai.tool.call.result", _clip(text_of(part.content)))
    _permissions(span, part.permissions, content=content)


def _permissions(span: Span, records: Sequence[Mapping[str, Any]], *, content: bool) -> None:
    """Each decision as a ``tether.permission`` event; the last one (what the call went on with) as attributes."""
    last: dict[str, Any] | None = None
    for record in records:
        attributes = _decision(record, content=content)
        span.add_event("tether.permission", attributes)
        last = attributes
    if last is not None:
        for key in ("action", "effect", "rule", "source", "asked", "reply"):
            if key in last:
                span.set_attribute(f"tether.permission.{'decision' if key == 'effect' else key}", last[key])


def _decision(record: Mapping[str, Any], *, content: bool) -> dict[str, Any]:
    """The attributes of one stored permission record (``PermissionRecord.to_json``)."""
    kind = record.get("event", "")
    out: dict[str, Any] = {"action": record.get("action", ""), "asked": kind != "permission.decided"}
    reply = record.get("reply")
    if reply is not None:
        out["reply"] = reply
        out["effect"] = "deny" if reply == "reject" else "allow"
    else:
        decision: Mapping[str, Any] = record.get("decision") or {}
        out["effect"] = decision.get("effect", "ask")
        verdicts: Sequence[Mapping[str, Any]] = decision.get("verdicts") or ()
        out["rule"] = tuple(_rule(v, content=content) for v in verdicts)
        out["source"] = tuple(str(v.get("source", "")) for v in verdicts)
    if content:
        resources: Sequence[Any] = record.get("resources", ())
        out["resources"] = tuple(_clip(str(r), NAME_LIMIT * 4) for r in resources[:_RESOURCES])
    return out


def _rule(verdict: Mapping[str, Any], *, content: bool) -> str:
    """A deciding rule as ``action pattern effect``; a pattern that is not configuration (a saved approval's: the
    text of the call it approved) is ``<saved>`` unless content is recorded."""
    rule: Mapping[str, Any] = verdict["rule"]
    source = str(verdict.get("source", ""))
    pattern = str(rule["resource"]) if content or source in _CONFIG_SOURCES else f"<{source or 'unknown'}>"
    return f"{rule['action']} {_clip(pattern, NAME_LIMIT * 4)} {rule['effect']}"
