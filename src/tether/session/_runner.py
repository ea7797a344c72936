"""The run loop of one turn: append the user input, then run steps until the model stops calling tools.

Per step: resolve the agent, decide whether this is the final step (the agent's ``steps`` limit), materialize the
catalog (law 5), and run the step (``_step``). The loop stops when a step made no local tool call, when a call was
declined (the user rejected without feedback), after the final step, or on a provider error that is not retryable
(recorded on the assistant message, then raised). Retryable provider errors are retried by the model's
:class:`~tether.llm.RetryPolicy` (its provider's ``retry`` config), else the session's: jittered exponential backoff,
``retry_after`` when the provider said, never longer than ``max_retry_after``. Without an agent ``steps`` limit a turn
has at most :data:`DEFAULT_MAX_STEPS` steps. What any other exception or a cancellation does to the turn is decided
by its failure policy (``_failures``); the loop itself catches nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from .. import ids
from .._record import record
from ..content import text_of
from ..errors import UsageError
from ..llm import RetryPolicy, Usage
from ..records import (
    FilePart,
    MessageUpdated,
    Part,
    PartUpdated,
    SessionStatus,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
    UserInfo,
)
from ..records.internal import ToolErrorKind, now_ms
from ..rules import Rule
from ..storable import has_surrogates, visible
from ..tools import Content, Text
from ._step import run_step
from ._turn import AgentLike, TurnContext

__all__ = [
    "DEFAULT_MAX_STEPS",
    "AgentLike",
    "RetryPolicy",
    "StopReason",
    "TurnCall",
    "TurnContext",
    "TurnProgress",
    "TurnResult",
    "run_turn",
]

StopReason = Literal["done", "declined", "max_steps", "cancelled"]


DEFAULT_MAX_STEPS = 100
"""Steps per turn when the agent sets no ``steps``: the last one runs without tools and the turn stops "max_steps"."""


@record
class TurnCall:
    """One tool call of a turn, as its tool part recorded it when its step ended.

    Attributes:
        call_id: the model's call id.
        name: the tool name the model called.
        input: the decoded JSON input the model sent (``None`` when its arguments did not parse).
        outcome: ``completed`` or ``error``.
        content: the text the model read (on error: the text of the partial content kept, if any).
        error: the error the model read, on error.
        error_kind: why it failed (``tool``, ``blocked``, ``declined``, ``invalid_input``, ``timeout``, ...).
        provider_executed: the provider ran the call (a server-side tool such as web search), not tether.
    """

    call_id: str
    name: str
    input: Any
    outcome: Literal["completed", "error"]
    content: str = ""
    error: str | None = None
    error_kind: ToolErrorKind | None = None
    provider_executed: bool = False

    @property
    def ok(self) -> bool:
        return self.outcome == "completed"


def _text(content: Sequence[Content]) -> str:
    """``text_of(content)``; a call's usual content, one text part, without a join (every call of a turn)."""
    if len(content) == 1 and type(first := content[0]) is Text:
        return first.text
    return text_of(content)


def _step_outcome(parts: Iterable[Part], calls: list[TurnCall]) -> str:
    """Append the step's calls to ``calls`` and return its text (its text parts joined): one pass over its parts."""
    texts: list[str] = []
    for p in parts:
        kind = type(p)
        if kind is StepStartPart or kind is StepFinishPart:  # two a step, neither a call nor text
            continue
        if isinstance(p, ToolPart):
            calls.append(
                TurnCall(
                    call_id=p.call_id,
                    name=p.tool,
                    input=p.input,
                    outcome="completed" if p.state == "completed" else "error",
                    content=_text(p.content),
                    error=p.error,
                    error_kind=p.error_kind,
                    provider_executed=p.provider_executed,
                )
            )
        elif isinstance(p, TextPart) and p.text:
            texts.append(p.text)
    return texts[0] if len(texts) == 1 else "\n".join(texts)


@record
class TurnResult:
    """What a turn did: why it stopped, how many steps and tool calls, the final text, total usage.

    ``calls`` lists the tool calls of the turn's finished steps in the model's order (a cancelled step's calls are
    in the store, not here).
    """

    session_id: str
    stop: StopReason
    steps: int
    tool_calls: int
    text: str
    usage: Usage
    message_ids: tuple[str, ...] = field(default=())
    calls: tuple[TurnCall, ...] = field(default=())


def resolve_agent(agents: Mapping[str, AgentLike], name: str) -> AgentLike:
    """The agent called ``name``.

    Raises:
        UsageError: no such agent.
    """
    agent = agents.get(name)
    if agent is None:
        available = ", ".join(sorted(agents)) or "(none)"
        raise UsageError(f'Agent not found: "{name}". Available agents: {available}')
    return agent


def _user_parts(content: str | Sequence[Content]) -> tuple[Content, ...]:
    # The user's text is made storable where it enters the session (law 12): a prompt from a non-UTF-8 terminal or
    # file has lone surrogates, shown as visible escapes (``tether.storable``).
    if isinstance(content, str):
        return (Text(visible(content)),)
    parts = tuple(content)
    if not parts:
        raise UsageError("A prompt needs at least one text or file part")
    return tuple(
        Text(visible(p.text)) if isinstance(p, Text) and has_surrogates(p.text) else p for p in parts
    )


@dataclass(kw_only=True, slots=True)
class TurnProgress:
    """What a turn has done so far (kept up to date step by step, so a cancelled turn can still report it)."""

    steps: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    text: str = ""
    message_ids: list[str] = field(default_factory=list[str])
    calls: list[TurnCall] = field(default_factory=list[TurnCall])
    stop: StopReason = "done"

    def result(self, session_id: str) -> TurnResult:
        return TurnResult(
            session_id=session_id,
            stop=self.stop,
            steps=self.steps,
            tool_calls=self.tool_calls,
            text=self.text,
            usage=self.usage,
            message_ids=tuple(self.message_ids),
            calls=tuple(self.calls),
        )


async def run_turn(turn: TurnContext, progress: TurnProgress, content: str | Sequence[Content]) -> None:
    """Run one turn to completion (see the module docstring), recording what happened in ``progress``.

    Raises:
        UsageError: the session's agent does not exist, or the prompt is empty.
        ProviderError: the model failed with an error that is not retryable (or retries ran out).
        StoreError: the store refused a write (raised by the first write after the store reports the failure).
    """
    info = turn.info
    emitter = turn.emitter
    parts = _user_parts(content)
    agent = resolve_agent(turn.agents, info.agent)
    user = UserInfo(id=ids.ascending("msg"), session_id=info.id, agent=agent.name, created=now_ms())
    emitter.durable(MessageUpdated(user))
    for part in parts:
        pid = ids.ascending("prt")
        if isinstance(part, Text):
            emitter.durable(
                PartUpdated(TextPart(id=pid, session_id=info.id, message_id=user.id, text=part.text))
            )
        else:
            emitter.durable(
                PartUpdated(FilePart(id=pid, session_id=info.id, message_id=user.id, content=part))
            )
    turn.history.add_user(parts)
    if turn.trace is not None:  # an observer (telemetry: the turn's invoke_agent span) around its steps
        return await turn.trace.run(
            _run_steps(turn, progress, user.id), turn.system, progress, user.id, parts
        )
    await _run_steps(turn, progress, user.id)


async def _run_steps(turn: TurnContext, progress: TurnProgress, user_id: str) -> None:
    info = turn.info
    model = turn.model
    step = 0
    attempt = 0
    cached_agent: AgentLike | None = None
    rules: Sequence[Rule] = ()
    while True:
        agent = resolve_agent(turn.agents, info.agent)
        if agent is not cached_agent:
            cached_agent = agent
            rules = (*agent.rules, *info.rules) if info.rules else agent.rules
        step += 1
        final = step >= (agent.steps if agent.steps is not None else DEFAULT_MAX_STEPS)
        # what a source announced before this step (an MCP server's list_changed) is in its catalog
        await turn.tools.caught_up()
        materialization = turn.tools.materialize(rules, final_step=final, visible=turn.visible)
        if turn.codemode is not None:  # Code Mode (tether.codemode): execute and pinned tools
            materialization = turn.codemode(agent.name, materialization, turn.tools)
        result = await run_step(
            turn, parent_id=user_id, agent=agent, materialization=materialization, step=step
        )
        progress.message_ids.append(result.info.id)
        progress.steps = step
        progress.tool_calls += result.calls
        step_text = _step_outcome(result.processor.parts.values(), progress.calls)
        if result.info.usage is not None:
            progress.usage = progress.usage + result.info.usage
        if step_text:
            progress.text = step_text
        error = result.error
        if error is not None:
            attempt += 1
            retry = model.retry or turn.retry  # the provider's policy when it has one (one retry layer)
            if not error.retryable or attempt >= retry.attempts:
                raise error
            delay = retry.delay(attempt, error)
            turn.emitter.live(
                SessionStatus(
                    session_id=info.id, status="retry", attempt=attempt, message=error.message, retry_in=delay
                )
            )
            step -= 1
            await anyio.sleep(delay)
            turn.emitter.live(SessionStatus(session_id=info.id, status="busy"))
            continue
        attempt = 0
        if result.declined:
            progress.stop = "declined"
            return
        if final:
            progress.stop = "max_steps"
            return
        if result.calls == 0:
            return
