"""Driving one turn from the terminal: live view, approvals, Ctrl-C, and the final summary. Shared by run and demo.

Ctrl-C (SIGINT) cancels the turn through ``session.cancel()`` (law 3): the runner stops the stream, cancels running
tools and marks their parts interrupted; the session stays usable (``tether run --continue``). A second Ctrl-C
exits at once, after SIGKILLing every live bash process group: shells run in their own session, so the terminal's
SIGINT never reaches them, and a bash call between SIGTERM and SIGKILL of its group would otherwise outlive us.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio

from .._record import record
from ..content import Content
from ..errors import ProviderError, TetherError
from ..llm import Model, Usage
from ..llm.internal import Price, dollars, usage_cost
from ..permissions import PermissionService
from ..session import AssistantInfo, ToolPart, TurnResult, UserInfo
from ..storable import printable
from ._approve import ApprovalMode, Approver
from ._common import CANCELLED, OK, TURN_FAILED, Output
from ._live import LiveView, TurnStats
from ._preview import Preview

if TYPE_CHECKING:
    from ..session import QuestionService
    from ._jsonevents import JsonEvents

__all__ = ["OutputFormat", "TurnOutcome", "drive_turn", "kill_live_shells", "write_done"]


@record
class TurnOutcome:
    """How a turn ended, for the summary and the exit code."""

    code: int
    stop: str
    steps: int
    calls: int
    failed_calls: int
    input_tokens: int
    output_tokens: int
    seconds: float
    error: str | None = None
    cost: float | None = None
    """USD: the provider's own figure, else priced by ``drive_turn(price=...)``; ``None``: unknown (tokens only)."""
    usage: Usage | None = None
    """The turn's whole usage (reasoning and cache tokens too), when known (the JSON ``done`` event's)."""
    text: str = ""
    """The turn's final text as the JSON stream saw it (``--format json``'s ``result``; empty otherwise)."""


OutputFormat = Literal["text", "json", "quiet"]
"""How ``tether run`` reports a turn: the live view, JSON event lines (``--format json``), or only the final text."""


def _decided_by(approval: ApprovalMode, why_deny: str) -> str:
    """Who answers an asked permission request in this run, as the JSON stream names it."""
    if approval == "ask":
        return "user"
    if approval == "yes":
        return "--yes"
    return "--deny-asks" if why_deny == "--deny-asks" else "no-terminal"


def write_done(outcome: TurnOutcome, session_id: str) -> None:
    """The JSON stream's last lines (``--format json``), written once the turn is durable: ``done`` (the totals, as
    version 1.0 ended) and ``result`` (the final text, the totals and the cost), the last."""
    from ._jsonevents import dumps, result_event, usage_json

    done = {
        "v": 1,
        "type": "done",
        "session": session_id,
        "stop": outcome.stop,
        "exit_code": outcome.code,
        "steps": outcome.steps,
        "calls": outcome.calls,
        "failed_calls": outcome.failed_calls,
        "usage": usage_json(outcome.usage),
        "seconds": round(outcome.seconds, 3),
    }
    sys.stdout.write(dumps(done) + "\n" + dumps(result_event(outcome, session_id, outcome.text)) + "\n")
    sys.stdout.flush()


SHELL_RUN_MODULE = "tether.builtins._shell_run"


def kill_live_shells() -> int:
    """SIGKILL every process group a bash call still has alive; returns how many groups were signalled.

    The bash tool's runner keeps the registry (``live_groups()``: the groups spawned and not yet seen dead). It is
    read from ``sys.modules`` only: if the runner was never imported, no shell ever ran.
    """
    module = sys.modules.get(SHELL_RUN_MODULE)
    live_groups = getattr(module, "live_groups", None)
    if live_groups is None:
        return 0
    killed = 0
    for pgid in tuple(live_groups()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
            killed += 1
    return killed


async def _watch_interrupt(session: Any, console: Output, flags: dict[str, bool]) -> None:
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            if flags.get("interrupted"):
                kill_live_shells()  # os._exit skips the bash calls' cleanup: their groups must not outlive us
                from ._typeahead import restore_terminals

                restore_terminals()  # and the terminal's echo, which the interactive session turns off in a turn
                os._exit(CANCELLED)  # a second Ctrl-C: the person wants out now
            flags["interrupted"] = True
            console.line(("\n^C cancelling the turn… (Ctrl-C again to exit at once)", "yellow"))
            session.cancel()


async def drive_turn(
    *,
    session: Any,
    bus: Any,
    permissions: PermissionService,
    prompt: str | Sequence[Content],
    model: Model,
    approval: ApprovalMode,
    why_deny: str,
    console: Output,
    system: Sequence[str] | None = None,
    price: Price | None = None,
    view: LiveView | None = None,
    output: OutputFormat = "text",
    continued: bool = False,
    questions: QuestionService | None = None,
    preview: Preview | None = None,
    whole: bool = False,
) -> TurnOutcome:
    """Run one turn of ``session`` with the live view (``view``, default a plain :class:`LiveView`) and approvals;
    never raises for a failed turn. ``price`` prices the turn's usage for the summary; ``system`` replaces the
    session's default system texts (``None``: the default, as ``Session.prompt`` builds it)."""
    # ``output``: ``text`` renders the live view on ``console``; ``json`` writes the turn's events to stdout as
    # JSON lines (``_jsonevents``; the caller writes the ``done`` line, :func:`write_done`, once the turn is durable);
    # ``quiet`` renders nothing while the turn runs. In both, approval notices and prompts go to stderr.
    # ``continued``: the session existed before this turn (the ``session`` JSON event says so).
    # ``questions``: the question service; with it, in ``ask`` mode, the approver answers the question tool too.
    # ``preview``: what an approval prompt shows (the change from the file, the sandbox) and the terminal settings.
    # ``whole``: with ``json``, text and reasoning come as whole blocks, not deltas (``--whole-text``).
    preview = preview or Preview()
    view = (view or LiveView(console, session.id, preview.settings)) if output == "text" else None
    events: JsonEvents | None = None
    notices = console if output == "text" else Output(stderr=True)
    if output == "json":
        from ._jsonevents import JsonEvents

        events = JsonEvents(session.id, decided_by=_decided_by(approval, why_deny), whole=whole)
        events.write(
            {
                "v": 1,
                "type": "session",
                "session": session.id,
                "agent": session.info.agent,
                "model": model.name,
                "directory": session.info.directory,
                "continued": continued,
            }
        )

    def call_info(call_id: str) -> tuple[str | None, Any]:
        part = (view.parts if view is not None else events.parts if events is not None else {}).get(call_id)
        return (part.tool, part.input) if part is not None else (None, None)

    approver = Approver(
        mode=approval,
        service=permissions,
        console=notices,
        session_id=session.id,
        call_info=call_info,
        pause=view.paused if view is not None else None,
        why_deny=why_deny,
        questions=questions,
        preview=preview,
    )
    flags: dict[str, bool] = {}
    started = time.monotonic()
    result: TurnResult | None = None
    error: ProviderError | None = None
    # the watcher first: it sees a request before the approver prompts about it
    if view is not None:
        subscriptions = view.subscribe(bus)
    else:
        subscriptions = [] if events is None else [bus.subscribe("*", events.on_event)]
    subscriptions.extend(approver.subscribe(bus))
    try:
        with view if view is not None else contextlib.nullcontext():
            async with anyio.create_task_group() as tg:
                tg.start_soon(approver.run)
                if view is not None:
                    tg.start_soon(view.run)
                tg.start_soon(_watch_interrupt, session, notices, flags)
                try:
                    result = await session.prompt(prompt, model=model, system=system)
                except ProviderError as exc:
                    error = exc
                finally:
                    tg.cancel_scope.cancel()
    finally:
        for subscription in subscriptions:
            subscription.close()
    if events is not None and error is not None:
        events.write(
            {"v": 1, "type": "error", "session": session.id, "kind": "provider", "message": error.message}
        )
    # A turn that ran to its end is summarized from its own record, which holds what the store has for it; one cut
    # short (cancelled, failed) from the store: a cancelled step is there even when prompt() could not count it.
    if result is not None and error is None and result.stop != "cancelled" and not flags.get("interrupted"):
        stats = result_stats(result)
    else:
        stats = await _stored_stats(session) or (view.stats if view is not None else TurnStats())
    usage = stats.usage
    stop = "failed" if error is not None else str(result.stop) if result is not None else "done"
    if stop == "cancelled" or flags.get("interrupted"):
        code, stop = CANCELLED, "cancelled"
    elif error is not None or stop == "declined":
        code = TURN_FAILED
    else:
        code = OK
    return TurnOutcome(
        usage=usage,
        code=code,
        stop=stop,
        steps=stats.steps,
        calls=stats.calls,
        failed_calls=stats.failed_calls,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        seconds=time.monotonic() - started,
        error=error.message if error is not None else None,
        cost=usage_cost(usage, price),
        text=events.final_text if events is not None else "",
    )


def result_stats(result: TurnResult) -> TurnStats:
    """Steps, tool calls and usage of a turn that ran to its end, from its :class:`~tether.session.TurnResult`.

    The same figures :func:`_stored_stats` reads from the store (every assistant message the turn wrote is in
    ``message_ids``, a retried step's too; every tool part in ``calls``; ``usage`` sums the steps'), without reading
    the whole session back: a 1,000-call step's outputs were decoded again only to be counted (~75 µs per call).
    """
    calls = [call for call in result.calls if not call.provider_executed]
    return TurnStats(
        steps=len(result.message_ids),
        calls=len(calls),
        failed_calls=sum(not call.ok for call in calls),
        usage=result.usage,
    )


async def _stored_stats(session: Any) -> TurnStats | None:
    """Steps, tool calls and usage of the session's last turn as the store has them (``None``: unreadable)."""
    try:
        messages = await session.messages()
    except TetherError:
        return None
    turn = list(messages)
    for index in range(len(turn) - 1, -1, -1):
        if isinstance(turn[index].info, UserInfo):
            turn = turn[index + 1 :]
            break
    stats = TurnStats()
    for message in turn:
        info = message.info
        if not isinstance(info, AssistantInfo):
            continue
        stats.steps += 1
        if info.usage is not None:
            stats.usage = stats.usage + info.usage
        for part in message.parts:
            if isinstance(part, ToolPart) and not part.provider_executed:
                stats.calls += 1
                stats.failed_calls += part.state == "error"
    return stats


def print_summary(console: Output, outcome: TurnOutcome, session_id: str) -> None:
    """The final line(s): steps, tool calls, tokens, duration, session id, and what to do next."""
    if outcome.error is not None:
        console.line((printable(f"✗ the turn failed: {outcome.error}", lines=True), "red bold"))
    failed = f", {outcome.failed_calls} failed" if outcome.failed_calls else ""
    read = outcome.usage.cache_read_tokens if outcome.usage is not None else 0
    cached = f" ({read:,} cached)" if read else ""
    cost = f" · {dollars(outcome.cost)}" if outcome.cost is not None else ""
    line = (
        f"{outcome.steps} step{'s' if outcome.steps != 1 else ''} · {outcome.calls} tool call"
        f"{'s' if outcome.calls != 1 else ''}{failed} · {outcome.input_tokens:,} tokens in{cached} / "
        f"{outcome.output_tokens:,} out{cost} · {outcome.seconds:.1f}s · session {session_id}"
    )
    label = {
        "done": ("done", "green"),
        "max_steps": ("stopped at the step limit", "yellow"),
        "declined": ("stopped: a permission request was rejected", "yellow"),
        "cancelled": ("cancelled", "yellow"),
        "failed": ("failed", "red"),
    }.get(outcome.stop, (outcome.stop, "white"))
    console.line((f"── {label[0]}: ", f"{label[1]} bold"), (line, "dim"))
    if outcome.stop == "cancelled":
        console.line(('   the session is intact: continue it with `tether run --continue "..."`', "dim"))
