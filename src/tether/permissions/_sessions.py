"""The rules resolver of a runtime's sessions: what the permission service decides a session's requests by.

:class:`SessionRules` is the :data:`~._resolve.RulesResolver` the runtime hands to :class:`~._service.PermissionService`.
For a session it gives, in evaluation order, its agent's layers (agent, config, agent-config, project), the allow for
reading its own and its ancestors' retained outputs (:func:`~._outputs.retained_output_rules`), and its own rules;
for a child session (a subagent's) also each caller's whole rules (parent, grandparent, ...), which only tighten.

The resolver runs twice per tool call, so a session's answer is kept (bounded) and the hit path does no import and
no allocation. The sessions open in this process answer synchronously (``info``); a child whose ancestors are not
all open here (a child prompted on its own after its parent was released) is resolved from the store (``stored``),
and then an ancestor whose record is gone is a caller that denies everything.

This package stands below the session layer and never imports it: a session is read through :class:`SessionView`,
which the stored session record satisfies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import NotFoundError
from ._agents import Agent
from ._outputs import retained_output_rules
from ._resolve import UNRESOLVED, CallerRules, ResolvedRules
from ._ruleset import Ruleset
from ._types import Rule

if TYPE_CHECKING:
    from ..output import OutputStore

__all__ = ["SessionRules", "SessionView"]

_MAX_DEPTH = 32
"""The most ancestors followed (a longer chain, or a cycle in damaged records, stops there)."""
_MAX_KEPT = 4096
"""The most answers (and session rule layers) kept: a long-running server's cache stays bounded."""


class SessionView(Protocol):
    """What the resolver reads of a session (the stored session record is one)."""

    @property
    def id(self) -> str: ...
    @property
    def project(self) -> str: ...
    @property
    def agent(self) -> str: ...
    @property
    def parent_id(self) -> str | None: ...
    @property
    def rules(self) -> tuple[Rule, ...]: ...


class SessionRules:
    """``(session_id, agent) -> ResolvedRules | None`` for the sessions of one runtime (see the module docstring).

    Args:
        agents: the runtime's agents by name; a session whose agent is not there resolves to ``None`` (deny all).
        info: an open session's record, ``None`` when no handle on it is alive in this process.
        stored: a session's record from the store; raises :class:`~tether.errors.NotFoundError` when there is none.
        output: the managed output store, whose per-session directories hold the retained outputs.
        output_root: the real path of ``output``'s directory (permission resources are canonical paths).
    """

    __slots__ = ("_agents", "_info", "_kept", "_layers", "_output", "_output_root", "_stored")

    def __init__(
        self,
        *,
        agents: Mapping[str, Agent],
        info: Callable[[str], SessionView | None],
        stored: Callable[[str], Awaitable[SessionView]],
        output: OutputStore,
        output_root: str,
    ) -> None:
        self._agents = agents
        self._info = info
        self._stored = stored
        self._output = output
        self._output_root = Path(output_root)
        self._kept: dict[tuple[str, int], ResolvedRules] = {}
        self._layers: dict[tuple[Rule, ...], tuple[Ruleset, ...]] = {}

    def __call__(
        self, session_id: str, agent: str | None
    ) -> ResolvedRules | Awaitable[ResolvedRules | None] | None:
        """The rules of ``session_id`` as ``agent`` (default: the session's own agent); ``None`` denies everything
        (no such open session, or no such agent); an awaitable when an ancestor must be read from the store."""
        info = self._info(session_id)
        if info is None:
            return None
        found = self._agents.get(agent or info.agent)
        if found is None:
            return None
        per_session = (session_id, id(found))
        resolved = self._kept.get(per_session)
        if resolved is not None:
            return resolved
        outputs = self._session_outputs(session_id, info.parent_id, found)
        # after the agent's layers (and the config's), before the session's own rules
        rulesets = (*found.rulesets, *outputs, *self._session_layer(info.rules))
        ancestors: list[SessionView] = []
        parent_id = info.parent_id
        seen = {session_id}
        while parent_id is not None and len(ancestors) < _MAX_DEPTH and parent_id not in seen:
            seen.add(parent_id)
            parent = self._info(parent_id)
            if parent is None:  # no handle on it is alive here (a child prompted on its own): read the store
                return self._resolve_stored(per_session, info, found)
            ancestors.append(parent)
            parent_id = parent.parent_id
        callers = self._callers(ancestors, outputs)
        return self._keep(
            per_session, ResolvedRules(project=info.project, rulesets=rulesets, callers=callers)
        )

    async def _resolve_stored(
        self, per_session: tuple[str, int], info: SessionView, found: Agent
    ) -> ResolvedRules:
        """As :meth:`__call__` for a child whose ancestors are not all open here: their records come from the store (a
        missing one is a caller that denies everything), and so does the retained-output chain."""
        ancestors: list[SessionView | str] = []
        parent_id = info.parent_id
        seen = {info.id}
        while parent_id is not None and len(ancestors) < _MAX_DEPTH and parent_id not in seen:
            seen.add(parent_id)
            parent = self._info(parent_id)
            if parent is None:
                try:
                    parent = await self._stored(parent_id)
                except NotFoundError:
                    ancestors.append(parent_id)
                    break
            ancestors.append(parent)
            parent_id = parent.parent_id
        chain = [info.id, *(a.id for a in ancestors if not isinstance(a, str))]
        outputs = self._outputs_of(chain, found)
        rulesets = (*found.rulesets, *outputs, *self._session_layer(info.rules))
        callers = self._callers(ancestors, outputs)
        return self._keep(
            per_session, ResolvedRules(project=info.project, rulesets=rulesets, callers=callers)
        )

    def _callers(
        self, ancestors: Sequence[SessionView | str], outputs: tuple[Ruleset, ...]
    ) -> tuple[CallerRules, ...]:
        """Each ancestor session's whole rules as a caller of a child (with the child's retained-output allow, so the
        child may read its own outputs); an ancestor whose record (a bare id) or agent is gone denies everything."""
        callers: list[CallerRules] = []
        for ancestor in ancestors:
            agent = self._agents.get(ancestor.agent) if not isinstance(ancestor, str) else None
            if isinstance(ancestor, str) or agent is None:
                name = ancestor if isinstance(ancestor, str) else ancestor.id
                callers.append(CallerRules(session_id=name, agent="(unknown)", rulesets=(UNRESOLVED,)))
                continue
            chain = (*agent.rulesets, *outputs, *self._session_layer(ancestor.rules))
            callers.append(CallerRules(session_id=ancestor.id, agent=agent.name, rulesets=chain))
        return tuple(callers)

    def _session_layer(self, rules: tuple[Rule, ...]) -> tuple[Ruleset, ...]:
        """A session's own rules as one ``session`` ruleset, shared by the sessions with equal rules (warm index)."""
        if not rules:
            return ()
        layer = self._layers.get(rules)
        if layer is None:
            if len(self._layers) >= _MAX_KEPT:
                self._layers.clear()
            layer = self._layers[rules] = (Ruleset(source="session", rules=rules),)
        return layer

    def _keep(self, per_session: tuple[str, int], resolved: ResolvedRules) -> ResolvedRules:
        if len(self._kept) >= _MAX_KEPT:
            self._kept.clear()
        self._kept[per_session] = resolved
        return resolved

    def _session_outputs(self, session_id: str, parent_id: str | None, agent: Agent) -> tuple[Ruleset, ...]:
        """The allow for reading this session's (and its open ancestors') retained outputs, and nothing else there."""
        chain = [session_id]
        while parent_id is not None and parent_id not in chain and len(chain) < _MAX_DEPTH:
            chain.append(parent_id)
            parent = self._info(parent_id)
            parent_id = parent.parent_id if parent is not None else None
        return self._outputs_of(chain, agent)

    def _outputs_of(self, chain: Sequence[str], agent: Agent) -> tuple[Ruleset, ...]:
        """The allow for reading the retained outputs of the sessions of ``chain`` (a session, then its ancestors)."""
        root = self._output_root
        directories = [(root / self._output.session_directory(s).name).as_posix() for s in chain]
        found = retained_output_rules(agent, directories, root=root.as_posix())
        return (found,) if found is not None else ()
