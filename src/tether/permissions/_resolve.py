"""How the permission service learns a request's configured rules: the ``RulesResolver`` the session layer supplies.

The service knows nothing about sessions or agents' storage. For every request it calls
``resolve(session_id, agent)`` and gets back a :class:`ResolvedRules` (the project, for saved approvals, and the
ordered labelled rulesets: the agent's layers, then the session's rules; for a subagent's child session also its
callers' whole rulesets, which only tighten), or ``None`` when the session or agent cannot be resolved, which denies
everything. :class:`StaticRules` is a ready-made resolver for embedding and tests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import field

from .._record import record
from ._agents import DEFAULT_AGENT, Agent
from ._ruleset import Ruleset
from ._types import Rule

__all__ = ["UNRESOLVED", "CallerRules", "ResolvedRules", "RulesResolver", "StaticRules"]

UNRESOLVED = Ruleset(source="unresolved", rules=(Rule("*", "*", "deny"),))
"""The configured rules used when the resolver returns ``None``: everything is denied."""


@record
class CallerRules:
    """The whole resolved rules of an agent that called a subagent: a child session's parent (and grandparent, ...).

    ``rulesets`` are the caller's agent layers (agent, config, agent-config, project), the retained-output allow of
    the child, and the caller session's own rules: what that caller would be decided by. A child's request is decided
    as the stricter of its own decision and each caller's, so a subagent never does what its caller may not (a caller's
    ``deny`` or ``ask`` is never loosened). ``session_id`` and ``agent`` name the caller in the verdicts.
    """

    session_id: str
    agent: str
    rulesets: tuple[Ruleset, ...]


@record
class ResolvedRules:
    """The configured rules for one request.

    ``project`` keys the saved approvals; ``rulesets`` are in evaluation order (later wins), each labelled with its
    source (``"agent"``, ``"config"``, ``"agent-config"``, ``"session"``, ...). Reuse the same :class:`Ruleset` values
    across requests: they keep their compiled index.
    """

    project: str
    rulesets: tuple[Ruleset, ...]
    callers: tuple[CallerRules, ...] = ()
    """For a child session: its callers' rules, parent first (tighten-only, see :class:`CallerRules`)."""

    def every_ruleset(self) -> tuple[Ruleset, ...]:
        """The session's rulesets, then every caller's (what a denial lists as the rules for its action)."""
        return (*self.rulesets, *(r for caller in self.callers for r in caller.rulesets))


RulesResolver = Callable[[str, str | None], ResolvedRules | Awaitable[ResolvedRules | None] | None]
"""``(session_id, agent) -> ResolvedRules | None`` (or an awaitable of it). ``None`` denies everything."""


@record
class StaticRules:
    """A fixed resolver: one project, and either one ``agent`` for every request or ``agents`` looked up by name.

    With ``agents``, a request's agent name is used, else ``default_agent``; a name that is not there resolves to
    ``None`` (deny everything). ``session`` rules are appended after the agent's rules for every session.
    """

    project: str
    agent: Agent | None = None
    agents: Mapping[str, Agent] = field(default_factory=dict[str, Agent])
    default_agent: str = DEFAULT_AGENT
    session: Sequence[Rule] = ()
    _resolved: dict[str, ResolvedRules] = field(
        default_factory=dict[str, ResolvedRules], init=False, repr=False
    )

    def __post_init__(self) -> None:
        extra = (Ruleset(source="session", rules=tuple(self.session)),) if self.session else ()
        candidates = dict(self.agents)
        if self.agent is not None:
            candidates[""] = self.agent
        for name, agent in candidates.items():
            self._resolved[name] = ResolvedRules(project=self.project, rulesets=(*agent.rulesets, *extra))

    def __call__(self, session_id: str, agent: str | None) -> ResolvedRules | None:
        if self.agent is not None:
            return self._resolved[""]
        return self._resolved.get(agent or self.default_agent)
