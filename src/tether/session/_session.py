"""Sessions: the handle a caller prompts and cancels, and the service that creates, finds and lists them.

A :class:`Session` runs one turn at a time (``prompt`` while busy is a usage error). ``cancel()`` cancels the running
turn: the turn ends with ``stop == "cancelled"``; an outer cancel scope cancels it too, and then the cancellation
propagates. A live session keeps its model-facing history in memory and only appends to it; reopening a stored
session replays it once, when the reopened handle's first turn starts.

A handle lives as long as someone holds it (the application, a server, a running turn): :class:`Sessions` keeps only
a weak reference, so a process that prompts many sessions holds the ones in use, not every one it ever touched (law
10). While a handle is alive, :meth:`Sessions.get` returns that same object, which is what keeps "one turn at a time"
per session in this process; once nobody holds it, it is released, with what lived only in memory (``deps``, the
``tools`` placement, the doom-loop count), and the next ``get`` reopens it from the store.

Permission decisions do not pass through here: each call's context carries its step's recorder (``_dispatch``), and
the permission service reports to it directly.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import anyio

from .. import ids
from ..bus import Bus
from ..content import text_of
from ..errors import UsageError
from ..llm import Model
from ..records import SessionInfo, SessionStatus, SessionUpdated
from ..records.internal import check_session_rules, now_ms
from ..rules import Rule
from ..storable import visible
from ..store import SessionStore, StoredMessage
from ..tools import Content, ToolRegistry
from ..tools.internal import Entry
from ._dispatch import DoomLoopDetector, PermissionAsserter
from ._failures import turn_calls
from ._history import History
from ._observer import Observe
from ._onecall import OneCallModel
from ._processor import Emitter
from ._runner import AgentLike, RetryPolicy, TurnContext, TurnProgress, TurnResult, resolve_agent, run_turn
from ._step import CANCEL_GRACE

__all__ = ["Session", "SessionLocation", "Sessions"]

_TITLE_CHARS = 50


class SessionLocation(Protocol):
    """Where a session runs: the Location's registry, its project root and its directory."""

    @property
    def tools(self) -> ToolRegistry: ...
    @property
    def root(self) -> Path: ...
    @property
    def directory(self) -> Path: ...


def _title(content: str | Sequence[Content]) -> str:
    text = content if isinstance(content, str) else text_of(content, " ")
    line = " ".join(visible(text).split())  # user input: visible escapes, like the prompt
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"


class Session:
    """One session: prompt it, cancel it, read its messages.

    ``tools`` is the session's own placement, above its Location's: what is registered there is in this session's
    catalog only (and wins over the Location's and the application's tools of the same name), never in another
    session's on the same Location. ``Runtime.run(tools=...)`` registers there. Like ``deps``, it lives with this
    handle: hold the handle for as long as they should last (a reopened session starts without them).
    """

    def __init__(
        self,
        service: Sessions,
        info: SessionInfo,
        location: SessionLocation,
        history: History | None,
        deps: Any = None,
    ) -> None:
        self._service = service
        self.deps = deps
        self._info = info
        self.location = location
        self.tools = ToolRegistry(parent=location.tools)
        self._history = history  # None: reopened, replayed from the store when its first turn starts
        self._doom = DoomLoopDetector()
        self._scope: anyio.CancelScope | None = None
        self._model: Model | None = None

    def __repr__(self) -> str:
        return f"<Session {self._info.id} agent={self._info.agent!r}>"

    @property
    def id(self) -> str:
        return self._info.id

    @property
    def info(self) -> SessionInfo:
        return self._info

    @property
    def busy(self) -> bool:
        return self._scope is not None

    @property
    def model(self) -> Model | None:
        """The model of the running (else the last) turn in this process; ``None`` before the first turn.

        A subagent's child session runs with its parent's model unless its agent names one (``builtins/task``)."""
        return self._model

    def beside(self) -> Session:
        """Another handle on this session, whose turns run beside this handle's (one turn at a time each).

        Turns on different handles record into the same session at the same time (their messages interleave, each
        with its own ids). A handle's model sees only its own turns' history, and each handle has its own ``tools``
        placement and doom-loop count, so this suits turns that do not read the conversation: ``tether mcp serve``
        settles each client call as a one-call turn on its own handle, so one client's calls run in parallel and
        cancelling one cancels only its turn.
        """
        return Session(self._service, self._info, self.location, History(), self.deps)

    async def prompt(
        self,
        content: str | Sequence[Content],
        *,
        model: Model,
        system: Sequence[str] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> TurnResult:
        """Append the user input and run steps until the model stops calling tools (one turn).

        Args:
            content: the user's text, or text and file parts.
            model: the model for every step of this turn.
            system: the system texts of every request of this turn, in order, replacing tether's default whole;
                ``None`` (the default) builds the default when the turn starts (:meth:`Sessions.system_prompt`: the
                agent's text, the environment block, the instruction files).
            options: provider-neutral request options (temperature, max_tokens, ...).

        Raises:
            UsageError: the session is busy, its agent does not exist, or ``content`` is empty.
            ProviderError: the model failed and retrying did not help (recorded on the assistant message first).
            StoreError: the store failed to write.
        """
        if self._scope is not None:
            raise UsageError(f"Session {self.id} is busy: wait for its turn to finish or cancel it")
        service = self._service
        if self._info.title == "" and content:
            self._info = replace(self._info, title=_title(content), updated=now_ms())
            service.emitter.durable(SessionUpdated(self._info))
        concurrency = service.concurrency
        progress = TurnProgress()
        self._model = model
        service.emitter.live(SessionStatus(session_id=self.id, status="busy"))
        scope = self._scope = anyio.CancelScope()
        try:
            with scope:
                history = self._history
                if history is None:
                    history = self._history = History.from_stored(await service.store.load_messages(self.id))
                if system is None:
                    system = await service.system_prompt(
                        self.location,
                        agent=self._info.agent,
                        model=model.name,
                        directory=self._info.directory,
                    )
                async with turn_calls() as pool:
                    turn = TurnContext(
                        info=self._info,
                        tools=self.tools,
                        agents=service.agents,
                        emitter=service.emitter,
                        history=history,
                        doom=self._doom,
                        permissions=service.permissions,
                        retry=service.retry,
                        model=model,
                        visible=_model_catalog(service.catalog, model),
                        pool=pool,
                        # config and instruction files: storable, sendable text (law 12)
                        system=tuple(visible(text) for text in system),
                        options=options or {},
                        limiter=None if concurrency is None else anyio.CapacityLimiter(concurrency),
                        cancel_grace=service.cancel_grace,
                        root=self.location.root,
                        deps=self.deps,
                        codemode=service.codemode,
                        trace=None if service.observe is None else service.observe(self._info, model),
                    )
                    await run_turn(turn, progress, content)
        finally:
            # No flush here: the store commits within its short window, and closing it drains the queue. A write
            # failure surfaces from the next append (or from ``store.flush()`` for callers that need a barrier).
            self._scope = None
            service.emitter.live(SessionStatus(session_id=self.id, status="idle"))
        if scope.cancelled_caught:
            progress.stop = "cancelled"
        return progress.result(self.id)

    def cancel(self) -> None:
        """Cancel the running turn, if any (running tools are cancelled; their parts become interrupted errors)."""
        if self._scope is not None:
            self._scope.cancel()

    async def messages(self) -> Sequence[StoredMessage]:
        """Every stored message of this session with its parts (reads the store)."""
        return await self._service.store.load_messages(self.id)


def _model_catalog(
    catalog: Callable[[str], Callable[[Entry], bool] | None] | None, model: Model
) -> Callable[[Entry], bool] | None:
    """The per-model catalog rules of a turn. A one-call turn (``tether tool call``, an MCP client's call) runs the
    call a person or a client named, which no model chose from a catalog: the rules do not apply to it."""
    if catalog is None or isinstance(model, OneCallModel):
        return None
    return catalog(model.name)


class Sessions:
    """Creates, finds and lists sessions; owns what their turns share.

    Args:
        store: where sessions are persisted.
        bus: where live events are published.
        agents: agents by name (read at every step, so a live mapping may change between steps).
        permissions: the permission service, asked for ``doom_loop``; ``None`` fails doom-loop calls.
        locate: turns a stored session's working directory and project root (``info.directory``,
            ``info.project``) back into its Location (needed by :meth:`get`).
        retry: the provider retry policy.
        concurrency: the most tool calls of one step that settle at the same time (``None``: no cap).
        cancel_grace: seconds a cancelled step gives its running calls to finish their cleanup before their parts
            are marked aborted (``CANCEL_GRACE``).
        instructions: how to read the instruction texts (``AGENTS.md``, the config's ``instructions``) of a Location
            for an agent (whose read rules the project's files must pass): called on the loop when a turn builds its
            default system prompt, it returns the blocking read, which runs in the worker thread that measures the
            environment (one hand-off for both), or an awaitable of the texts (an ``async def``: awaited on its
            own, before the environment is measured); ``None``: no instruction texts.
        trusted: whether the user trusts the project of a Location: only then does the environment block run
            ``git status`` in it (a repository's git config can start programs); ``None``: no project is trusted.
        catalog: the per-model catalog rules: a model's ``provider/model`` name → the ``visible`` predicate every
            step of its turns materializes with (``tether.tools.internal.ModelCatalog.for_model``); ``None``: no
            per-model rules.
        observe: called once per turn, returns the turn's observer (``_observer.py``; the runtime installs
            telemetry's ``turn_trace``); ``None``: no turn is observed.
    """

    def __init__(
        self,
        *,
        store: SessionStore,
        bus: Bus,
        agents: Mapping[str, AgentLike],
        permissions: PermissionAsserter | None = None,
        locate: Callable[[str, str], Awaitable[SessionLocation]] | None = None,
        retry: RetryPolicy | None = None,
        concurrency: int | None = None,
        cancel_grace: float = CANCEL_GRACE,
        instructions: Callable[[SessionLocation, str], Callable[[], Sequence[str]] | Awaitable[Sequence[str]]]
        | None = None,
        trusted: Callable[[SessionLocation], bool] | None = None,
        catalog: Callable[[str], Callable[[Entry], bool] | None] | None = None,
        observe: Observe | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.agents = agents
        self.permissions = permissions
        self.retry = retry or RetryPolicy()
        self.concurrency = concurrency
        self.cancel_grace = cancel_grace
        self.emitter = Emitter(store, bus)
        self._locate = locate
        self._instructions = instructions
        self._trusted = trusted
        self.catalog = catalog
        self.observe = observe
        self.codemode: Callable[[str, Any, ToolRegistry], Any] | None = None
        """Code Mode's catalog transform for every turn (the runtime sets it when an agent has ``codemode``)."""
        # Weak: a handle nobody holds is released (its history with it); while one is alive, ``get`` returns it.
        self._live: weakref.WeakValueDictionary[str, Session] = weakref.WeakValueDictionary()

    async def system_prompt(
        self,
        location: SessionLocation,
        *,
        agent: str,
        model: str,
        directory: str | Path | None = None,
        instructions: Sequence[str] | Callable[[], Sequence[str]] | None = None,
    ) -> tuple[str, ...]:
        """The default system texts of a turn (:func:`tether.prompts.system_prompt`), storable (law 12).

        In order: the agent's configured ``prompt`` or tether's built-in text for it and the model's family, the
        environment block (measured now: git runs in a worker thread), then the instruction texts.

        Args:
            location: where the turn runs.
            agent: the agent's name.
            model: ``provider/model``.
            directory: the working directory (default: the Location's).
            instructions: the instruction texts to use, or the blocking read that returns them (run in the worker
                thread that measures the environment); default: read through ``instructions`` of the service.

        Raises:
            UsageError: no such agent.
        """
        from ..prompts import compose, measure_environment

        found = resolve_agent(self.agents, agent)
        given: Sequence[str] = ()
        read: Callable[[], Sequence[str]] | None = None
        if callable(instructions):
            read = instructions
        elif instructions is not None:
            given = instructions
        elif self._instructions is not None:
            reader = self._instructions(location, found.name)
            if inspect.isawaitable(reader):
                given = await reader
            else:
                read = reader
        got: list[Sequence[str]] = []
        # The instruction files are read in the worker thread that measures the environment: one hand-off a turn,
        # not two one after the other (each waits for a thread to wake and for the loop to take the answer back:
        # ~0.3 ms at load 2-4, the two were ~0.85 ms of a 10-step turn's 4 ms).
        environment = await measure_environment(
            root=location.root,
            directory=directory if directory is not None else location.directory,
            model=model,
            trusted=self._trusted is not None and self._trusted(location),
            beside=None if read is None else lambda: got.append(read()),
        )
        # read beside: git's bound starts only when the read ends, so a measurement that returned has the texts
        texts = compose(
            agent=found.name,
            environment=environment,
            instructions=got[0] if got else given,
            prompt=found.prompt,
        )
        return tuple(visible(text) for text in texts)

    def close(self) -> None:
        """Release what the service holds: today nothing, as it subscribes to nothing. Sessions stay readable."""

    async def create(
        self,
        location: SessionLocation,
        *,
        agent: str = "build",
        title: str = "",
        rules: Sequence[Rule | Sequence[str]] = (),
        parent_id: str | None = None,
        deps: Any = None,
        parent_call_id: str | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Create a session in ``location`` for ``agent``.

        Args:
            rules: extra rules for this session only, after the agent's: :class:`~tether.permissions.Rule` values
                or ``(action, resource, effect)`` triples (effect ``allow``, ``ask`` or ``deny``).
            deps: application dependencies every tool call of this session reads as ``ctx.deps``: kept in memory
                on the returned handle, never stored. They last as long as someone holds the handle; once nobody
                does, the session is released and :meth:`get` reopens it from the store with ``deps=None`` (set
                ``session.deps`` again, or keep the handle). A ``task`` child inherits its parent's.
            session_id: the new session's id (default: a new ascending ``ses_`` id). A durable runner derives it
                from its turn, so a retry of the activity that created the session finds it (``tether.temporal``).

        Raises:
            UsageError: no such agent, or a rule is not a valid ``(action, resource, effect)`` triple.
        """
        resolve_agent(self.agents, agent)
        checked = check_session_rules(rules)
        now = now_ms()
        info = SessionInfo(
            id=session_id if session_id is not None else ids.ascending("ses"),
            project=str(location.root),
            directory=str(location.directory),
            title=title,
            agent=agent,
            parent_id=parent_id,
            parent_call_id=parent_call_id,
            rules=checked,
            created=now,
            updated=now,
        )
        self.emitter.durable(SessionUpdated(info))
        session = self._live[info.id] = Session(self, info, location, History(), deps)
        return session

    async def get(self, session_id: str) -> Session:
        """The session ``session_id``: the live handle while anyone holds one, else reopened from the store (its
        history is replayed once, when the reopened handle's first turn starts; ``deps`` is ``None``).

        Raises:
            NotFoundError: no such session.
            UsageError: the session is stored but no ``locate`` was given to reopen it.
        """
        live = self._live.get(session_id)
        if live is not None:
            return live
        info = await self.store.get_session(session_id)
        if self._locate is None:
            raise UsageError("Sessions(locate=...) is needed to reopen a stored session")
        location = await self._locate(info.directory, info.project)
        # A concurrent get may have reopened it while this one awaited: one handle per session, the first one.
        # No await between this check and the insert, so no third get can slip in between.
        live = self._live.get(session_id)
        if live is not None:
            return live
        session = self._live[session_id] = Session(self, info, location, None)
        return session

    async def list(self, *, project: str | None = None, limit: int = 100) -> Sequence[SessionInfo]:
        """Stored sessions, most recently updated first."""
        return await self.store.list_sessions(project=project, limit=limit)

    def info(self, session_id: str) -> SessionInfo | None:
        """The session's record if a handle on it is alive in this process, else ``None`` (sync; used to resolve
        permission rules: a session running a turn is always alive, and a caller that finds none reads the store)."""
        live = self._live.get(session_id)
        return live.info if live is not None else None
