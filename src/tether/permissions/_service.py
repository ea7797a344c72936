"""The permission service: evaluate a request, hold it pending for a person's reply, and apply that reply.

The leaf that acts calls :meth:`PermissionService.assert_` at the point of action (law 4). The service evaluates the
request against the rules the session layer resolves for it plus the project's saved approvals; ``allow`` returns,
``deny`` raises :class:`~tether.errors.BlockedError`, ``ask`` publishes ``permission.asked`` and waits for
:meth:`PermissionService.reply`. The service never decides what a session is; it only calls the resolver.

Every decision on a request is reported to the request's recorder (the calling tool's context): a decision by the
rules when it is taken, an ask when it starts waiting, a reply by the waiter when it wakes (in the call's own task,
so a recorder that refuses, a full store, fails the call before it acts). The bus events are for watchers only.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import replace

import anyio

from ..bus import Bus
from ..errors import BlockedError, CorrectedError, DeclinedError, NotFoundError, PermissionOutcome, UsageError
from ..ids import ascending
from ..tools.internal import PermissionRecord
from ._always import always_saves
from ._evaluate import Decision, Verdict, evaluate_request, rules_for_action, tightened
from ._events import (
    AskResult,
    PendingRequest,
    PermissionAsked,
    PermissionDecided,
    PermissionReplied,
    permission_record,
)
from ._resolve import UNRESOLVED, ResolvedRules, RulesResolver
from ._ruleset import Ruleset
from ._saved import SavedApprovals
from ._types import PermissionRequest, Reply, Rule

__all__ = ["DECLINED_MESSAGE", "PermissionService"]

DECLINED_MESSAGE = "The user rejected permission to use this specific tool call."
_REPLIES: tuple[Reply, ...] = ("once", "always", "reject")
_DECISIONS_KEPT = 1024
"""Distinct requests whose decision is remembered (all are forgotten at once when the memo is full)."""


class _Entry:
    """A pending request and the one-shot outcome its waiter reads."""

    __slots__ = ("done", "error", "message", "outcome", "pending", "waited", "withdrawn")

    def __init__(self, pending: PendingRequest, *, waited: bool) -> None:
        self.pending = pending
        # An ``assert_`` waits for it and records the reply itself; an ``ask`` entry has no waiter.
        self.waited = waited
        self.withdrawn = False  # its waiter is gone (cancelled): never hold it pending again
        self.done = anyio.Event()
        self.outcome: Decision | None = None
        self.error: PermissionOutcome | None = None
        self.message: str | None = None

    def approve(self, decision: Decision) -> None:
        self.outcome = decision
        self.done.set()

    def fail(self, error: PermissionOutcome) -> None:
        self.error = error
        self.done.set()


def _blocked(request: PermissionRequest, decision: Decision, configured: tuple[Ruleset, ...]) -> BlockedError:
    denied = [v for v in decision.verdicts if v.effect == "deny"]
    first: Verdict = denied[0]
    if first.source == UNRESOLVED.source:
        message = (
            f"Permission denied: {request.action}. No rules could be resolved for this session and agent, so every "
            "action is denied."
        )
    else:
        more = f" (and {len(denied) - 1} more)" if len(denied) > 1 else ""
        rule = first.rule
        message = (
            f'Permission denied: {request.action} on "{first.resource}"{more}, by the rule {rule.action} '
            f'"{rule.resource}" -> deny ({first.source}). This call cannot be approved: do not retry it; take a '
            "different approach or ask the user to change the rule."
        )
    return BlockedError(
        message,
        action=request.action,
        resources=request.resources,
        rules=rules_for_action(request.action, configured),
        decision=decision,
    )


class PermissionService:
    """Evaluates permission requests, holds the ones that ask, and applies replies.

    Args:
        bus: where ``permission.asked`` and ``permission.replied`` are published.
        saved: the saved approvals (``always`` replies persist there).
        resolve: returns the configured rules for ``(session_id, agent)``, or ``None`` to deny everything.
    """

    def __init__(self, *, bus: Bus, saved: SavedApprovals, resolve: RulesResolver) -> None:
        self._bus = bus
        self._saved = saved
        self._resolve = resolve
        self._entries: dict[str, _Entry] = {}
        self._decisions: dict[
            tuple[str, tuple[str, ...], str | None], tuple[ResolvedRules, Ruleset, Decision]
        ] = {}
        self._records: dict[int, tuple[Decision, PermissionRecord]] = {}
        self._closed = False

    def _evaluated(
        self, request: PermissionRequest
    ) -> tuple[Decision, ResolvedRules | None] | Awaitable[tuple[Decision, ResolvedRules | None]]:
        """The decision on ``request`` and the rules it was decided by; an awaitable when something must be read.

        Twice per tool call: when the session's rules are settled and the saved approvals fresh (the common case) the
        answer is returned as it is, without a coroutine to await.
        """
        resolved = self._resolve(request.session_id, request.agent)
        if resolved is None:
            return evaluate_request(request.action, request.resources, (UNRESOLVED,)), None
        if isinstance(resolved, ResolvedRules):  # no ABC check when settled
            saved = self._saved.fresh(resolved.project)
            if saved is not None:
                return self._remembered(request, resolved, saved), resolved
        return self._evaluate(request, resolved)

    async def _evaluate(
        self, request: PermissionRequest, resolving: ResolvedRules | Awaitable[ResolvedRules | None]
    ) -> tuple[Decision, ResolvedRules | None]:
        resolved = resolving if isinstance(resolving, ResolvedRules) else await resolving
        if resolved is None:
            return evaluate_request(request.action, request.resources, (UNRESOLVED,)), None
        saved = await self._saved.rules(resolved.project)
        return self._remembered(request, resolved, saved), resolved

    def _remembered(self, request: PermissionRequest, resolved: ResolvedRules, saved: Ruleset) -> Decision:
        # A decision is a pure function of immutable values: the same rules (the same objects: a change to a
        # session's rules or to the saved approvals makes new ones) and the same request decide alike. Kept per
        # rules object, so a doom-loop check, asked before every call with the same resource, is decided once.
        key = (request.action, tuple(request.resources), request.protected)
        memo = self._decisions.get(key)
        if memo is not None and memo[0] is resolved and memo[1] is saved:
            return memo[2]
        decision = self._decide(request, resolved, saved)
        if len(self._decisions) >= _DECISIONS_KEPT:
            self._decisions.clear()
            self._records.clear()
        self._decisions[key] = (resolved, saved, decision)
        return decision

    def _decide(self, request: PermissionRequest, resolved: ResolvedRules, saved: Ruleset) -> Decision:
        decision = evaluate_request(
            request.action, request.resources, resolved.rulesets, saved, protected=request.protected
        )
        for caller in resolved.callers:  # a subagent: never looser than any agent that called it
            if decision.effect == "deny":
                break
            theirs = evaluate_request(
                request.action, request.resources, caller.rulesets, saved, protected=request.protected
            )
            decision = tightened(decision, theirs, f"calling agent {caller.agent}")
        return decision

    def _closed_decision(self, request: PermissionRequest) -> Decision:
        rule = Rule("*", "*", "deny")
        verdicts = tuple(Verdict(resource=r, rule=rule, source="closed") for r in request.resources)
        return Decision(action=request.action, effect="deny", verdicts=verdicts)

    def _decided(self, request: PermissionRequest, decision: Decision) -> None:
        recorder = request.recorder
        if recorder is not None:
            recorder(self._decided_record(request, decision))
        if self._bus.delivers(PermissionDecided):  # twice per call: no event built for no one
            self._bus.publish(PermissionDecided(request=request, decision=decision))

    def _decided_record(self, request: PermissionRequest, decision: Decision) -> PermissionRecord:
        """The record of a decision by the rules: one object per remembered decision (``_evaluate``'s memo).

        A remembered decision is one object per distinct request (action, resources, protected anchor), and so is its
        record: a recorder may keep what it made of a record by the record's identity (the session keeps its
        storable JSON), so 1,000 identical checks in a step build and check one record, not 1,000.
        """
        kept = self._records.get(id(decision))
        if kept is not None and kept[0] is decision:
            record = kept[1]
            if (
                record.resources == request.resources
                and record.action == request.action
                and record.protected == request.protected
            ):
                return record
        record = permission_record(request, decision)
        if len(self._records) >= _DECISIONS_KEPT:
            self._records.clear()
        self._records[id(decision)] = (
            decision,
            record,
        )  # the decision kept alive: its id is not reused meanwhile
        return record

    def _open(self, request: PermissionRequest, project: str, decision: Decision, *, waited: bool) -> _Entry:
        pending = PendingRequest(id=ascending("per"), request=request, project=project, decision=decision)
        recorder = request.recorder
        if recorder is not None:
            recorder(permission_record(request, decision, request_id=pending.id))
        entry = self._entries[pending.id] = _Entry(pending, waited=waited)
        self._bus.publish(PermissionAsked(request=pending))
        return entry

    def _replied(self, entry: _Entry, reply: Reply, decision: Decision | None = None) -> None:
        pending = entry.pending
        request = pending.request
        if not entry.waited and request.recorder is not None:
            request.recorder(
                permission_record(
                    request,
                    decision or pending.decision,
                    request_id=pending.id,
                    reply=reply,
                    message=entry.message,
                )
            )
        self._bus.publish(
            PermissionReplied(session_id=pending.session_id, request_id=pending.id, reply=reply)
        )

    def _record_reply(self, entry: _Entry) -> None:
        """The waiter records the reply it woke to (in the call's task, before the call acts on it)."""
        request = entry.pending.request
        if request.recorder is None:
            return
        outcome = entry.outcome
        if outcome is None:
            record = permission_record(
                request,
                entry.pending.decision,
                request_id=entry.pending.id,
                reply="reject",
                message=entry.message,
            )
        else:
            record = permission_record(request, outcome, request_id=entry.pending.id, reply=outcome.reply)
        request.recorder(record)

    async def ask(self, request: PermissionRequest) -> AskResult:
        """Evaluate ``request``; for ``ask``, hold it pending and publish ``permission.asked``. Never waits.

        After :meth:`close` every request is denied.

        Raises:
            UsageError: the request has no resources.
        """
        if self._closed:
            return AskResult(id=None, effect="deny", decision=self._closed_decision(request))
        evaluated = self._evaluated(request)
        decision, resolved = evaluated if isinstance(evaluated, tuple) else await evaluated
        if decision.effect != "ask" or resolved is None:
            self._decided(request, decision)
            return AskResult(id=None, effect=decision.effect, decision=decision)
        if self._closed:
            return AskResult(id=None, effect="deny", decision=self._closed_decision(request))
        entry = self._open(request, resolved.project, decision, waited=False)
        return AskResult(id=entry.pending.id, effect="ask", decision=decision)

    async def assert_(self, request: PermissionRequest) -> Decision:
        """Return when ``request`` is allowed, by the rules or by a person's reply; raise otherwise.

        On ``ask`` this publishes ``permission.asked`` and waits for :meth:`reply`. If the wait is cancelled the
        request is withdrawn and nothing is published for it.

        Returns:
            The decision; after a reply its ``effect`` is ``allow`` and ``reply`` says which.

        Raises:
            BlockedError: a configured rule denies the request (``rules``: the rules for its action).
            CorrectedError: the user rejected it with feedback for the model.
            DeclinedError: the user rejected it without feedback, or the service is closed.
            UsageError: the request has no resources.
        """
        if self._closed:
            raise DeclinedError(DECLINED_MESSAGE)
        evaluated = self._evaluated(request)
        decision, resolved = evaluated if isinstance(evaluated, tuple) else await evaluated
        if decision.effect == "allow":
            self._decided(request, decision)
            return decision
        if decision.effect == "deny" or resolved is None:
            self._decided(request, decision)
            configured = resolved.every_ruleset() if resolved is not None else (UNRESOLVED,)
            raise _blocked(request, decision, configured)
        if self._closed:
            raise DeclinedError(DECLINED_MESSAGE)
        entry = self._open(request, resolved.project, decision, waited=True)
        try:
            await entry.done.wait()
        finally:
            entry.withdrawn = True
            if self._entries.get(entry.pending.id) is entry:
                del self._entries[entry.pending.id]
        self._record_reply(entry)
        if entry.error is not None:
            raise entry.error
        assert entry.outcome is not None
        return entry.outcome

    async def reply(self, request_id: str, reply: Reply, message: str | None = None) -> None:
        """Answer a pending request; every reply publishes ``permission.replied``.

        * ``once`` approves this request only.
        * ``always`` saves the request's ``save`` patterns for its project (for a protected path: its exact
          resources), approves it, then approves every other pending request (any session) that the saved approvals
          now allow. Without anything to save it acts as ``once``.
        * ``reject`` with ``message`` fails the waiter with ``CorrectedError(message)``; without, with
          ``DeclinedError``, and every other pending request of the same session is rejected too.

        Raises:
            NotFoundError: no pending request has this id.
            UsageError: ``reply`` is not ``once``, ``always`` or ``reject``.
            StoreError: saving an ``always`` failed; the request stays pending.
        """
        if reply not in _REPLIES:
            raise UsageError(f"A permission reply is one of {', '.join(_REPLIES)}; got {reply!r}")
        entry = self._entries.pop(request_id, None)
        if entry is None:
            raise NotFoundError(f"No pending permission request {request_id}")
        pending = entry.pending
        with anyio.CancelScope(shield=True):
            save = always_saves(pending.request) if reply == "always" else ()
            if save:
                try:
                    await self._saved.add(pending.project, pending.request.action, save)
                except Exception:
                    if not entry.withdrawn:  # still pending: the person can reply again
                        self._entries[request_id] = entry
                    raise
            if reply == "reject":
                entry.message = message or None
            self._replied(entry, reply)
            if reply == "reject":
                if message:
                    entry.fail(CorrectedError(message))
                else:
                    entry.fail(DeclinedError(DECLINED_MESSAGE))
                    self._reject_session(pending.session_id)
                return
            entry.approve(replace(pending.decision, effect="allow", reply=reply))
            if save:
                await self._recheck()

    def _reject_session(self, session_id: str) -> None:
        for other in [e for e in self._entries.values() if e.pending.session_id == session_id]:
            del self._entries[other.pending.id]
            self._replied(other, "reject")
            other.fail(DeclinedError(DECLINED_MESSAGE))

    async def _recheck(self) -> None:
        """Approve every pending request that the saved approvals now allow (each with its own rules)."""
        for entry in list(self._entries.values()):
            request = entry.pending.request
            try:
                evaluated = self._evaluated(request)
                decision, resolved = evaluated if isinstance(evaluated, tuple) else await evaluated
            except NotFoundError:  # its session is gone; leave it to its waiter
                continue
            if (
                resolved is None
                or decision.effect != "allow"
                or self._entries.get(entry.pending.id) is not entry
            ):
                continue
            del self._entries[entry.pending.id]
            self._replied(entry, "always", decision)
            entry.approve(replace(decision, reply="always"))

    def pending(self, session_id: str | None = None) -> list[PendingRequest]:
        """The pending requests, oldest first, of one session or of all sessions."""
        return [
            e.pending
            for e in self._entries.values()
            if session_id is None or e.pending.session_id == session_id
        ]

    async def close(self) -> None:
        """Reject every pending request with ``DeclinedError``; afterwards ``ask`` denies and ``assert_`` declines."""
        self._closed = True
        for entry in list(self._entries.values()):
            del self._entries[entry.pending.id]
            self._replied(entry, "reject")
            entry.fail(DeclinedError(DECLINED_MESSAGE))

    async def __aenter__(self) -> PermissionService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
