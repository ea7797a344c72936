"""Child sessions: a subagent's turn run for a parent's ``task`` call, new or resumed.

:class:`Children` is what the runtime hands the ``task`` tool (``BuiltinDeps.children``). For one call it:

* checks the subagent (an agent whose mode is ``subagent`` or ``all``) and the depth of the session tree
  (:data:`MAX_DEPTH`: a runaway chain of subagents stops with a message, never recursion without end);
* creates the child session (``parent_id``: the parent session, ``parent_call_id``: the ``task`` call; the title
  says the task and the subagent) in the
  parent's Location with the parent's deps, or, for ``task_id``, reopens a child **of this parent** (anything else is
  refused: a model must not drive another session's conversation);
* gives the child derived session rules, as OpenCode does: the parent session's own ``deny`` and
  ``external_directory`` rules, then ``task`` and ``todowrite`` denied unless the subagent's own config rules name
  them (a subagent does not spawn subagents by default). Unlike OpenCode, these are not all that binds it: the
  runtime's rules resolver gives a child's requests its callers' whole rules (``tether.permissions.CallerRules``:
  the parent's agent, config, agent-config, project and session layers, then the grandparent's, ...), and the
  permission service decides the stricter, so a subagent never does what the agent that called it may not;
* runs one turn of the child with the subagent's configured model, else the parent's running model.

The child is an ordinary session: its tool calls are recorded in it, its permission requests carry its session id
and agent (an approver that answers the parent answers its children, labelled), and it runs inside the parent's
call, so cancelling the parent's turn (or the call) cancels the child's turn, whose running calls end interrupted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from .._record import record
from ..errors import NotFoundError, ProviderError, ToolFailure
from ..llm import Model
from ..permissions import Agent, evaluate_request
from ..records import SessionInfo, SessionUpdated
from ..rules import Rule
from ._onecall import OneCallModel
from ._runner import StopReason
from ._session import Session

__all__ = ["MAX_DEPTH", "ChildRequest", "ChildResult", "ChildSessions", "Children", "Subagent"]

MAX_DEPTH = 4
"""The most levels of sessions under a top-level session (a child is level 1): a deeper ``task`` call fails."""

_DEFAULT_DENIED = ("task", "todowrite")


@record
class Subagent:
    """An agent the ``task`` tool may run, as its description lists it."""

    name: str
    description: str


@record
class ChildRequest:
    """One ``task`` call: who calls (session, agent, tool call), which subagent, the prompt, and ``task_id`` to resume."""

    parent_session: str
    parent_call: str
    agent: str
    prompt: str
    description: str
    task_id: str | None = None
    started: Callable[[Mapping[str, Any]], None] | None = None
    """Told the child's session id, agent and model once the child exists (the task call's progress)."""


@record
class ChildResult:
    """What the child's turn did: its session (the ``task_id``), agent, model, why it stopped and its final text."""

    session_id: str
    agent: str
    model: str
    stop: StopReason
    text: str
    steps: int
    tool_calls: int


class ChildSessions(Protocol):
    """How children are created and reopened: ``rt.sessions`` (which gives each session its own ``task`` tool)."""

    async def create(
        self,
        location: Any,
        *,
        agent: str | None = None,
        title: str = "",
        rules: Sequence[Rule | Sequence[str]] = (),
        parent_id: str | None = None,
        deps: Any = None,
        parent_call_id: str | None = None,
    ) -> Session: ...

    async def get(self, session_id: str) -> Session: ...


def subagents(agents: Mapping[str, Agent], caller: Agent | None) -> tuple[Subagent, ...]:
    """The subagents ``caller`` may run, sorted by name: mode ``subagent``/``all``, not hidden, and not denied by the
    caller's ``task`` rules for that name (OpenCode's list; visibility only: the call asks ``task`` again)."""
    found: list[Subagent] = []
    for name, agent in sorted(agents.items()):
        if agent.mode == "primary" or agent.hidden:
            continue
        if caller is not None and evaluate_request("task", [name], caller.rulesets).effect == "deny":
            continue
        text = agent.description or "This subagent should only be called manually by the user."
        found.append(Subagent(name=name, description=text))
    return tuple(found)


def child_rules(parent: SessionInfo, agent: Agent) -> tuple[Rule, ...]:
    """The child's session rules: the parent session's denies and ``external_directory`` rules, then ``task`` and
    ``todowrite`` denied unless the subagent's own config rules (``agent.<name>.permission``) name them."""
    inherited = [r for r in parent.rules if r.effect == "deny" or r.action == "external_directory"]
    own = {r.action for layer in agent.rulesets if layer.source == "agent-config" for r in layer.rules}
    denied = [Rule(action, "*", "deny") for action in _DEFAULT_DENIED if action not in own]
    return (*inherited, *denied)


def _unknown(name: str, agents: Mapping[str, Agent]) -> ToolFailure:
    names = ", ".join(s.name for s in subagents(agents, None)) or "(none)"
    return ToolFailure(
        f"Unknown agent type: {name} is not a valid agent type. Available subagents: {names}. Call task again with "
        "one of them as subagent_type."
    )


class Children:
    """Runs subagent turns in child sessions (see the module docstring).

    Args:
        sessions: creates and reopens sessions (``rt.sessions``).
        info: a stored session's record by id (the store's ``get_session``), to measure depth and check ``task_id``.
        agents: the runtime's agents by name.
        resolve_model: a ``provider/model`` spec (a subagent's configured ``model``) to a model.
        max_depth: the deepest level of a child session.
        publish: the bus's ``publish``: a resumed child is announced again (``session.updated``, live), so an
            approver that answers the parent learns it is the parent's even when it was created by another process.
    """

    def __init__(
        self,
        *,
        sessions: ChildSessions,
        info: Callable[[str], Awaitable[SessionInfo]],
        agents: Mapping[str, Agent],
        resolve_model: Callable[[str], Model],
        max_depth: int = MAX_DEPTH,
        publish: Callable[[Any], None] | None = None,
    ) -> None:
        self._publish = publish
        self._sessions = sessions
        self._info = info
        self._agents = agents
        self._resolve_model = resolve_model
        self._max_depth = max_depth

    def subagents(self, caller: str | None) -> tuple[Subagent, ...]:
        """The subagents the agent named ``caller`` may run (every subagent when ``caller`` is unknown)."""
        return subagents(self._agents, self._agents.get(caller) if caller is not None else None)

    async def _depth(self, info: SessionInfo) -> int:
        depth = 0
        seen = {info.id}
        parent_id = info.parent_id
        while parent_id is not None and parent_id not in seen and depth <= self._max_depth:
            depth += 1
            seen.add(parent_id)
            try:
                parent_id = (await self._info(parent_id)).parent_id
            except NotFoundError:
                break
        return depth

    async def _child(self, request: ChildRequest, parent: Session, agent: Agent) -> Session:
        task_id = request.task_id
        if task_id is None:
            title = f"{request.description} (@{agent.name} subagent)"
            return await self._sessions.create(
                parent.location,
                agent=agent.name,
                title=title,
                rules=child_rules(parent.info, agent),
                parent_id=parent.id,
                deps=parent.deps,
                parent_call_id=request.parent_call,
            )
        try:
            info = await self._info(task_id)
        except NotFoundError:
            info = None
        if info is None or info.parent_id != parent.id:
            raise ToolFailure(
                f"task_id {task_id} is not a task of this session (only a task_id that an earlier task call of this "
                "session returned can be resumed). Call task without task_id to start a new task."
            )
        if info.agent != agent.name:
            raise ToolFailure(
                f"task_id {task_id} is a task of the {info.agent} subagent, not {agent.name}: call task again with "
                f"subagent_type {info.agent!r}, or without task_id to start a new task."
            )
        child = await self._sessions.get(task_id)
        if self._publish is not None:
            self._publish(SessionUpdated(child.info))
        if child.busy:
            raise ToolFailure(
                f"The task {task_id} is still running (another call resumed it). Wait for that call's result, then "
                "resume it again if needed."
            )
        if (
            child.deps is None
        ):  # reopened from the store (nobody held it since its last turn): the parent's again
            child.deps = parent.deps
        return child

    async def run(self, request: ChildRequest) -> ChildResult:
        """Run one turn of the subagent in a new or resumed child session of ``request.parent_session``.

        Raises:
            ToolFailure: an unknown or primary-only agent, the depth limit, a ``task_id`` that is not a child of this
                session (or of another subagent, or still running), or the child's model failed.
        """
        agents = self._agents
        agent = agents.get(request.agent)
        if agent is None or agent.mode == "primary":
            raise _unknown(request.agent, agents)
        parent = await self._sessions.get(request.parent_session)
        depth = await self._depth(parent.info)
        if depth + 1 > self._max_depth:
            raise ToolFailure(
                f"Subagents are nested {depth} deep here, the most tether allows is {self._max_depth}: do this part "
                "of the work yourself instead of starting another task."
            )
        model = self._resolve_model(agent.model) if agent.model else parent.model
        if model is None or isinstance(model, OneCallModel):
            # a one-call turn (`tether tool call`, an MCP client's call) has no model that could run a subagent
            raise ToolFailure(
                f"The {agent.name} subagent has no model to run with: this call was made outside a model's turn "
                f"(tether tool call, an MCP client). Set agent.{agent.name}.model in the config, or call task from a "
                "session with a model."
            )
        child = await self._child(request, parent, agent)
        if request.started is not None:
            request.started({"session_id": child.id, "agent": agent.name, "model": model.name})
        try:
            result = await child.prompt(request.prompt, model=model)
        except ProviderError as exc:
            raise ToolFailure(
                f'<task id="{child.id}" state="error">\n<task_error>\nThe subagent\'s model failed: {exc.message}\n'
                f"</task_error>\n</task>\nResume it with task_id {child.id}, or do the work yourself."
            ) from exc
        return ChildResult(
            session_id=child.id,
            agent=agent.name,
            model=model.name,
            stop=result.stop,
            text=result.text,
            steps=result.steps,
            tool_calls=result.tool_calls,
        )
