"""Materialization and settle: the one execution boundary for tool calls.

``settle`` runs a call through the fixed pipeline: before hooks → resolve → decode input → execute under the tool's
deadline → encode output → normalize content → after hooks → bound → :class:`Completed` or :class:`Failed`.

Laws enforced here: invalid input never executes and invalid output never succeeds (2); cancellation propagates and
is never turned into a result (3); a call runs the registration advertised in its step (5); content is bounded once,
after retention of the full text (6). A rejected call never affects another call.

Who catches what (law 3): the tool's typed, expected errors (``ToolFailure``, the permission outcomes,
``OutputStoreError``) are translated where they are raised (``_run``, ``_guard_hooks``); any other exception from the
tool, its codecs or a hook is a defect, and :meth:`Materialization.settle` alone turns it into
``Failed("Tool execution failed: ...", kind="defect")`` (one ``except Exception`` in this module). Cancellation and
other ``BaseException`` subclasses are never caught.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from .._wildcard import match
from ..content import Content, File, Text
from ..errors import BlockedError, CorrectedError, DeclinedError, OutputStoreError, ToolFailure
from ..rules import Rule, last_match
from ..storable import has_surrogates, visible
from ._codec import DecodeError
from ._deadlines import Deadlines, Lane
from ._hooks import AfterEvent, BeforeEvent, run_hooks
from ._outcome import Completed, Failed, Outcome
from ._tool import UNSET, Tool, ToolCall, ToolContext, ToolDefinition, ToolResponse

if TYPE_CHECKING:
    from ._entry import Entry, RegistryView

__all__ = [
    "DECLINED_ERROR",
    "FINAL_STEP_ERROR",
    "MAX_METADATA_BYTES",
    "Materialization",
    "Visibility",
    "is_hidden",
]

log = logging.getLogger("tether.tools")

FINAL_STEP_ERROR = "Tools are disabled after the maximum agent steps"
DECLINED_ERROR = (
    "The user rejected permission to use this tool call. Stop and wait for the user's instructions."
)
MAX_METADATA_BYTES = 16_384
_MAX_ECHO = 2_000


def is_hidden(action: str, rules: Sequence[Rule]) -> bool:
    """Whether the last rule about ``action`` (its action pattern matches) is a deny on resource ``*``.

    Catalog visibility only (law 4): the leaf still asks the permission service at the point of action.
    """
    i = last_match(rules, action)
    if i < 0:
        return False
    rule = rules[i]
    return rule.resource == "*" and rule.effect == "deny"


class Visibility:
    """:func:`is_hidden` for every tool of a catalog against one sequence of rules: the same answers, the rules
    indexed once instead of scanned once per tool.

    A new session's first step materializes its catalog against a rules tuple no step has seen (the agent's rules and
    the session's own): the scan compared each of ~15 tools with each of ~65 rules (85 µs at rest). Here the rules
    whose action is a literal are found by a dict lookup, and only the wildcard actions (a few) are matched, from the
    last one down to that literal's place. Compiled per rules, never a verdict kept across rules (law 4).
    """

    __slots__ = ("_literal", "_rules", "_wild")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._rules = rules
        self._literal: dict[str, int] = {}
        """Each literal action pattern: the index of the last rule with it (``match`` compares those by equality)."""
        self._wild: list[tuple[int, str]] = []
        """The other action patterns with their rules' indexes, last first."""
        for i, rule in enumerate(rules):
            action = rule.action
            if "*" in action or "?" in action or "\\" in action:
                self._wild.append((i, action))
            else:
                self._literal[action] = i
        self._wild.reverse()

    def last(self, action: str) -> int:
        """``last_match(rules, action)``: the index of the last rule whose action pattern matches, or -1."""
        found = self._literal.get(action.replace("\\", "/") if "\\" in action else action, -1)
        for i, pattern in self._wild:
            if i < found:
                break
            if match(action, pattern):
                return i
        return found

    def hidden(self, action: str) -> bool:
        """``is_hidden(action, rules)``."""
        i = self.last(action)
        if i < 0:
            return False
        rule = self._rules[i]
        return rule.resource == "*" and rule.effect == "deny"


class _Defect(Exception):
    """A tool broke its own contract (a defect, not a model-visible failure)."""


def _echo(raw: Any) -> str:
    try:
        text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(raw)
    return text if len(text) <= _MAX_ECHO else text[:_MAX_ECHO] + "…"


def _invalid_input(name: str, raw: Any, issues: Sequence[str]) -> str:
    lines = [f'Invalid input for tool "{name}":', *(f"- {i}" for i in issues)]
    lines.append(f"Arguments received: {_echo(raw)}")
    lines.append("Update the arguments and call the tool again.")
    return visible("\n".join(lines))


def _fmt_seconds(value: float) -> str:
    return f"{int(value)}" if float(value).is_integer() else f"{value:g}"


def normalize_content(value: Any) -> tuple[Content, ...]:
    """Turn a tool's content (a string or a sequence of parts) into a non-empty tuple of parts.

    Text is made storable here, once for every tool (law 12): a lone surrogate (an undecodable byte of a file name
    from ``os.fsdecode``) is shown as a visible escape (``\\xff``, see ``tether.storable``).

    Raises:
        _Defect: the value is empty or not made of Text/File parts.
    """
    if isinstance(value, str):
        return (Text(visible(value)),)
    if isinstance(value, Text):
        return (_visible_part(value),)
    if isinstance(value, File):
        return (value,)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        parts = tuple(value)  # type: ignore[var-annotated]
        if not parts:
            raise _Defect("tool returned empty content")
        for part in parts:
            if not isinstance(part, Text | File):
                raise _Defect(f"content parts must be Text or File, got {type(part).__name__}")
        if any(isinstance(part, Text) and has_surrogates(part.text) for part in parts):
            parts = tuple(_visible_part(p) if isinstance(p, Text) else p for p in parts)
        return parts  # type: ignore[return-value]
    raise _Defect(f"content must be a string or a list of Text/File parts, got {type(value).__name__}")


def _visible_part(part: Text) -> Text:
    return part if not has_surrogates(part.text) else Text(visible(part.text))


def _visible_json(value: Any) -> Any:
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, Mapping):
        return {visible(str(k)): _visible_json(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, list | tuple):
        return [_visible_json(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


_FLAT_ITEMS, _FLAT_KEY, _FLAT_TEXT = 16, 32, 128
"""A flat mapping of at most this many items, keys and strings this short, encodes within ``MAX_METADATA_BYTES``
whatever its ASCII characters (6 bytes each at most, as ``\\u0000``) and scalars: 16 * ((32 + 128) * 6 + 30) < 16,384."""


def _small_flat(metadata: Mapping[str, Any]) -> bool:
    """Whether ``metadata`` is JSON within the size limit with no lone surrogate, known without encoding it: a dict
    of a few ASCII-keyed scalars and short ASCII strings (what most tools return: ``read``'s page, ``bash``'s exit)."""
    if type(metadata) is not dict or len(metadata) > _FLAT_ITEMS:
        return False
    for key, value in metadata.items():
        if type(key) is not str or len(key) > _FLAT_KEY or not key.isascii():
            return False
        kind = type(value)
        if kind is str:
            if len(value) > _FLAT_TEXT or not value.isascii():
                return False
        elif kind is int:
            if not -(10**18) < value < 10**18:
                return False
        elif not (kind is bool or kind is float or value is None):
            return False
    return True


def _check_metadata(name: str, metadata: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if metadata is None:
        return None
    if _small_flat(
        metadata
    ):  # every call's metadata passes here: the common shape is checked without encoding
        return metadata
    try:
        encoded = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        log.warning("dropping metadata of tool %s: not JSON (%s)", name, exc)
        return None
    if len(encoded.encode("utf-8", "surrogatepass")) > MAX_METADATA_BYTES:
        log.warning("dropping metadata of tool %s: larger than %d bytes", name, MAX_METADATA_BYTES)
        return None
    if has_surrogates(encoded):  # a file name from os.fsdecode: shown with visible escapes, like content
        return _visible_json(metadata)
    return metadata


async def _guard_hooks(name: str, hooks: tuple[Any, ...], event: Any) -> Failed | None:
    """Run hooks; a hook's ``ToolFailure`` fails the call with its message.

    Any other exception propagates to :meth:`Materialization.settle`, which makes it a defect of this call only.
    """
    try:
        await run_hooks(hooks, event)
    except ToolFailure as exc:
        return Failed(error=exc.message, kind="tool", metadata=_check_metadata(name, exc.metadata))
    return None


class Materialization:
    """The snapshot of one step: the catalog (``definitions``) and the tools captured behind it."""

    __slots__ = (
        "_after",
        "_before",
        "_captured",
        "_final",
        "_output",
        "_plans",
        "_registry",
        "definitions",
        "final_step",
        "rules",
    )

    def __init__(
        self,
        *,
        registry: RegistryView,
        captured: dict[str, Entry],
        final_step: bool,
        rules: tuple[Rule, ...] = (),
    ) -> None:
        self._registry = registry
        self.rules = rules
        self._output = registry.output
        self._captured = captured
        self._plans: dict[str, _Plan] = {}
        self.final_step = final_step
        self._before, self._after = registry.hooks()
        self._final: Materialization | None = None
        self.definitions: tuple[ToolDefinition, ...] = tuple(
            entry.tool.definition(name) for name, entry in captured.items()
        )

    def placed(self, registry: RegistryView) -> Materialization:
        """This snapshot for a placement above the one it was made for that adds nothing of its own (a session's,
        over its Location's): the same catalog and plans, the stale check asked of ``registry``."""
        placed = object.__new__(Materialization)
        for name in Materialization.__slots__:
            setattr(placed, name, getattr(self, name))
        placed._registry = registry
        placed._final = None
        return placed

    def finalized(self) -> Materialization:
        """This snapshot for a turn's final step: the same catalog (nothing filtered or built again), every call
        refused (``final_step``). The same object each time."""
        if self.final_step:
            return self
        final = self._final
        if final is None:
            final = self._final = object.__new__(Materialization)
            for name in Materialization.__slots__:
                setattr(final, name, getattr(self, name))
            final._plans = {}
            final._final = final
            final.final_step = True
        return final

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._captured)

    def tool(self, name: str) -> Tool[Any, Any] | None:
        """The tool captured under ``name`` in this step, if advertised."""
        entry = self._captured.get(name)
        return entry.tool if entry is not None else None

    async def settle(
        self,
        call: ToolCall,
        ctx: ToolContext,
        *,
        deadlines: Deadlines | None = None,
        lane: Lane | None = None,
    ) -> Outcome:
        """Run one call through the pipeline and return its outcome.

        Cancellation propagates (it is never a result). Every other problem, including a failing hook, becomes a
        :class:`Failed` outcome for this call only. Both outcomes are bounded (law 6). ``deadlines``: the shared
        timer of the caller's calls (a session's turn), else the call's deadline has a timer of its own.
        ``lane``: the call is one of a task's calls under one cancel scope (``tether.tools._deadlines``); its
        timeout then unwinds it as a cancellation of that scope, and the task finishes it with :meth:`expired`.
        """
        if self.final_step:
            return Failed(error=FINAL_STEP_ERROR, kind="final_step")
        hook = ""  # the phase of the hooks running now: a defect there names them
        try:
            raw = call.input
            outcome: Outcome | None = None
            if self._before:
                event = BeforeEvent(
                    tool=call.name,
                    session_id=ctx.session_id,
                    agent=ctx.agent,
                    message_id=ctx.message_id,
                    call_id=ctx.call_id,
                    input=raw,
                )
                hook = "before"
                outcome = await _guard_hooks(call.name, self._before, event)
                hook = ""
                raw = event.input
            if outcome is None:
                if lane is not None:
                    lane.raw = raw
                outcome = await self._run(call.name, raw, ctx, deadlines, lane)
                if self._after:
                    hook = "after"
                    outcome = await self._after_hooks(call, ctx, raw, outcome)
        except _Defect as exc:
            log.error("tool %s broke its contract: %s", call.name, exc)
            outcome = Failed(error=visible(f"Tool execution failed: {exc}"), kind="defect")
        except Exception as exc:  # the one translation of a defect into a result (law 3)
            outcome = _defect(call.name, hook, exc)
        return await self._bound(outcome, ctx.session_id) if self._needs_bounding(outcome) else outcome

    async def expired(self, call: ToolCall, ctx: ToolContext, lane: Lane) -> Outcome:
        """The outcome of a call settled on ``lane`` whose deadline cancelled it: its timeout, after its after hooks
        and bounding, as :meth:`settle` would have returned it (the lane's task calls this out of the scope)."""
        plan = self._plans[call.name]
        outcome: Outcome = _timed_out(call.name, plan.timeout)
        if self._after:
            try:
                outcome = await self._after_hooks(call, ctx, lane.raw, outcome)
            except Exception as exc:  # as in settle: a hook's defect fails this call only (law 3)
                outcome = _defect(call.name, "after", exc)
        return await self._bound(outcome, ctx.session_id) if self._needs_bounding(outcome) else outcome

    def _needs_bounding(self, outcome: Outcome) -> bool:
        # Measured here, synchronously: an outcome that fits (almost every call) costs no coroutine.
        if isinstance(outcome, Completed):
            return self._output.needs_bounding(outcome.content, outcome.output)
        return self._output.needs_bounding((Text(outcome.error), *outcome.partial))

    async def _after_hooks(self, call: ToolCall, ctx: ToolContext, raw: Any, outcome: Outcome) -> Outcome:
        """Run the after hooks; a hook may replace the outcome (its content is normalized again).

        Raises:
            Exception: a hook's defect (``settle`` turns it into the failed call, naming the hook).
        """
        after = AfterEvent(
            tool=call.name,
            session_id=ctx.session_id,
            agent=ctx.agent,
            message_id=ctx.message_id,
            call_id=ctx.call_id,
            input=raw,
            outcome=outcome,
        )
        failed = await _guard_hooks(call.name, self._after, after)
        if failed is not None:
            return failed
        if after.outcome is not outcome and isinstance(after.outcome, Completed):
            try:
                return Completed(
                    content=normalize_content(after.outcome.content),
                    output=after.outcome.output,
                    metadata=_check_metadata(call.name, after.outcome.metadata),
                    output_paths=after.outcome.output_paths,
                    title=after.outcome.title,
                )
            except _Defect as exc:
                return Failed(error=f"Tool execution failed: after hook {exc}", kind="defect")
        return after.outcome

    async def _bound(self, outcome: Outcome, session: str) -> Outcome:
        # Retained under the session's own directory: only that session reads it without asking.
        # Called only for an outcome that needs bounding (``_needs_bounding``).
        if isinstance(outcome, Failed):
            return await self._bound_failure(outcome, session)
        try:
            # Already measured: go straight to the blocking retention in a worker thread (law 9).
            bounded = await anyio.to_thread.run_sync(
                functools.partial(self._output.bound_sync, outcome.content, outcome.output, session=session)
            )
        except OutputStoreError as exc:
            return Failed(error=str(exc), kind="output_store")
        paths = tuple(dict.fromkeys((*outcome.output_paths, *bounded.output_paths)))
        return Completed(
            content=bounded.content,
            output=bounded.output,
            metadata=outcome.metadata,
            output_paths=paths,
            title=outcome.title,
        )

    async def _bound_failure(self, outcome: Failed, session: str) -> Outcome:
        # The error text and the partial content are bounded separately: the error stays one message.
        store = self._output
        try:
            error = await store.bound((Text(outcome.error),), session=session)
            partial = await store.bound(outcome.partial, session=session) if outcome.partial else None
        except OutputStoreError as exc:
            return Failed(error=str(exc), kind="output_store")
        paths = [*outcome.output_paths, *error.output_paths]
        if partial is not None:
            paths.extend(partial.output_paths)
        return Failed(
            error=error.content[0].text,  # type: ignore[union-attr]
            kind=outcome.kind,
            partial=partial.content if partial is not None else (),
            metadata=outcome.metadata,
            output_paths=tuple(dict.fromkeys(paths)),
        )

    def _plan(self, name: str) -> _Plan | None:
        """The plan of the tool captured under ``name``, made at its first call in this step (``None``: unknown)."""
        entry = self._captured.get(name)
        if entry is None:
            return None
        plan = self._plans[name] = _Plan(entry)
        return plan

    async def _run(
        self, name: str, raw: Any, ctx: ToolContext, deadlines: Deadlines | None, lane: Lane | None
    ) -> Outcome:
        plan = self._plans.get(name) or self._plan(name)
        if plan is None:
            return Failed(error=f"Unknown tool: {name}", kind="unknown")
        if self._registry.current(name) is not plan.entry:
            return Failed(error=f"Stale tool call: {name}", kind="stale")
        if plan.object_input and isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError as exc:
                return Failed(
                    error=_invalid_input(name, raw, [f"the arguments are not valid JSON ({exc})"]),
                    kind="invalid_input",
                )
        try:
            value = plan.decode(raw)
        except DecodeError as exc:
            return Failed(error=_invalid_input(name, raw, [str(i) for i in exc.issues]), kind="invalid_input")
        try:
            if lane is not None and plan.timeout is not None:
                return await _execute_on_lane(name, plan, value, ctx, lane, plan.timeout)
            return await _execute(name, plan, value, ctx, deadlines)
        except ToolFailure as exc:
            partial = ()
            if exc.partial:
                try:
                    partial = normalize_content(exc.partial)
                except _Defect:
                    partial = ()
            return Failed(
                error=visible(exc.message),
                kind="tool",
                partial=partial,
                metadata=_check_metadata(name, exc.metadata),
            )
        except BlockedError as exc:
            return Failed(error=exc.message, kind="blocked")
        except CorrectedError as exc:
            return Failed(error=exc.message, kind="corrected")
        except DeclinedError:
            return Failed(error=DECLINED_ERROR, kind="declined")
        except OutputStoreError as exc:
            return Failed(error=exc.message, kind="output_store")


class _Plan:
    """What settle needs of one captured tool, read once per step and name instead of once per call."""

    __slots__ = ("decode", "entry", "execute", "is_async", "object_input", "timeout", "tool")

    def __init__(self, entry: Entry) -> None:
        tool = entry.tool
        self.entry = entry
        self.tool = tool
        codec = tool.input_codec
        self.decode = codec.decode
        self.object_input = codec.schema.get("type") == "object"  # a JSON text is parsed first
        self.execute = tool._execute
        self.is_async = tool._is_async
        self.timeout = tool.timeout


async def _execute(
    name: str, plan: _Plan, value: Any, ctx: ToolContext, deadlines: Deadlines | None
) -> Outcome:
    timeout = plan.timeout
    result: Any = UNSET
    # An async tool is awaited right here (no extra coroutine per call); a sync one runs in a worker thread.
    if timeout is None:
        result = await plan.execute(value, ctx) if plan.is_async else await _in_thread(plan, value, ctx)
        return _complete(name, plan.tool, value, result)
    # The deadline cancels a scope of this call alone (a sibling's timeout never touches it): on the caller's
    # shared timer when there is one, else on a timer of its own.
    scope = (
        anyio.CancelScope()
        if deadlines is not None
        else anyio.CancelScope(deadline=anyio.current_time() + timeout)
    )
    watch = deadlines.watch(scope, timeout) if deadlines is not None else None
    try:
        with scope:
            result = await plan.execute(value, ctx) if plan.is_async else await _in_thread(plan, value, ctx)
    finally:
        if watch is not None:
            watch.done = True
    if scope.cancelled_caught and (watch is None or watch.expired):
        return _timed_out(name, timeout)
    return _complete(name, plan.tool, value, result)


async def _execute_on_lane(
    name: str, plan: _Plan, value: Any, ctx: ToolContext, lane: Lane, seconds: float
) -> Outcome:
    # No scope of the call's own: the deadline cancels the lane's scope, and a timeout unwinds from here as a
    # cancellation (``Lane``); the watch is over the moment the tool returns or raises.
    watch = lane.watch = lane.deadlines.watch(lane.scope, seconds)
    try:
        result = await plan.execute(value, ctx) if plan.is_async else await _in_thread(plan, value, ctx)
    finally:
        watch.done = True
    return _complete(name, plan.tool, value, result)


def _timed_out(name: str, timeout: float | None) -> Failed:
    return Failed(error=f'Tool "{name}" timed out after {_fmt_seconds(timeout or 0)}s', kind="timeout")


def _defect(name: str, hook: str, exc: Exception) -> Failed:
    """A tool's (or, with ``hook``, its before/after hooks') unexpected exception as this call's failure."""
    if hook:
        log.exception("%s hook failed for tool %s", hook, name)
        return Failed(error=visible(f"Tool execution failed: {hook} hook raised {exc}"), kind="defect")
    log.exception("tool %s raised", name)
    return Failed(error=visible(f"Tool execution failed: {exc}"), kind="defect")


async def _in_thread(plan: _Plan, value: Any, ctx: ToolContext) -> Any:
    result = await anyio.to_thread.run_sync(
        functools.partial(plan.execute, value, ctx), abandon_on_cancel=True
    )
    if hasattr(result, "__await__"):
        result = await result
    return result


def _complete(name: str, tool: Tool[Any, Any], value: Any, result: Any) -> Outcome:
    if isinstance(result, ToolResponse):
        output, content, metadata, title = result.output, result.content, result.metadata, result.title
    else:
        output, content, metadata, title = result, None, None, None
    codec = tool.output_codec
    encoded: Any = None
    if codec is None:
        if output is not UNSET and output is not None:
            if content is None and isinstance(output, str | Text | File | list | tuple):
                content = output
            else:
                raise _Defect(
                    "tool returned an output but declares no output schema; return ToolResponse(content=...)"
                )
    else:
        if output is UNSET:
            return Failed(error="Tool did not return its declared output", kind="invalid_output")
        try:
            encoded = codec.encode(output)
        except DecodeError as exc:
            return Failed(
                error=f"Tool returned an invalid value for its output schema: {exc}", kind="invalid_output"
            )
    if content is None:
        if tool._to_model_output is not None:
            content = tool._to_model_output(value, encoded)
        elif codec is not None:
            content = encoded if isinstance(encoded, str) else json.dumps(encoded, ensure_ascii=False)
        else:
            raise _Defect("tool returned no content")
    return Completed(
        content=normalize_content(content),
        output=encoded,
        metadata=_check_metadata(name, metadata),
        title=None if title is None else visible(title),
    )
