"""The process scope: ``Runtime`` wires the bus, the stores, the application registry, permissions and sessions.

``async with Runtime(data_dir=...) as rt`` opens, under the data directory: the session store (``tether.db``; the
saved approvals use their own table in the same file), the managed tool-output store (``tool-output/``, cleaned once
at start and hourly), the permission service and the built-in agents. ``await rt.location(path)`` returns the
Location scope for a working directory (in the config's project root when it lies inside it, or ``root=...``): its own
registry (Location placement, parent ``rt.tools``) with the built-in tools registered, then the plugins' (entry points
in the ``tether.plugins`` group) and, in a trusted project, its ``.tether/tools`` files' (``tether.plugins``; what
was skipped is in ``RuntimeLocation.notices``). Everything is closed on exit.

The data directory holds every session's outputs and the store: tether creates it 0700 and the store file
(``tether.db``, and so its ``-wal``/``-shm``, which SQLite creates with the database's mode) 0600. The permission
rules that guard it (``<data>/*`` asks even inside ``<tmp>/*``) are built from the real paths of both directories, so
a data directory named through a symlink is still the data directory.

Imports here stay light (the CLI imports ``tether`` and must start fast): the heavy packages load in ``__aenter__``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import weakref
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from .errors import UsageError

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from .bus import Bus
    from .config import Config
    from .llm import Model
    from .llm.internal import ModelCache
    from .location import Location
    from .mcp.internal import McpRoots, McpServers
    from .output import OutputStore
    from .permissions import Agent, PermissionService, Rule, SavedApprovals, SessionRules
    from .plugins.internal import Plugins
    from .session import QuestionService, Session, SessionInfo, Sessions, TurnResult
    from .store import PostgresStore, SQLiteStore
    from .tools import Content, Tool, ToolRegistry

__all__ = ["Runtime", "RuntimeLocation", "RuntimeSessions"]

_STORE = "tether.db"


def _prepare_data_dir(data_dir: Path, sqlite: bool = True) -> tuple[Path, Path]:
    """Create the data directory (0700) and, for the SQLite store, its file (0600); return the real data and temp
    directories."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    real = Path(os.path.realpath(data_dir))
    store = real / _STORE
    try:
        # created here, before SQLite opens it: an empty file is a new database, and its -wal/-shm get its mode
        if sqlite:
            os.close(os.open(store, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        pass
    for path in (store, real / f"{_STORE}-wal", real / f"{_STORE}-shm"):
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if info.st_mode & 0o077 and not path.is_symlink():
            path.chmod(info.st_mode & 0o700)  # a store written by an older tether: readable by others
    return real, Path(os.path.realpath(tempfile.gettempdir()))


_CLEANUP_INTERVAL = 3600.0


def _probe_sandbox(config: Config) -> None:
    """Start the sandbox's detection (one bubblewrap start: 5-12 ms, mostly waiting) in a thread of its own, so it
    runs while the store opens; ``detect`` caches the answer, and the runtime's own call further on takes it (or
    waits for it under the same lock)."""
    import threading

    from .sandbox import SandboxSettings, detect

    mode = SandboxSettings.from_config(config.get("sandbox")).mode

    def probe() -> None:
        # A failure here is the runtime's own call's to raise (nothing is cached): only the head start is lost.
        with contextlib.suppress(Exception):
            detect(mode)

    threading.Thread(target=probe, name="tether-sandbox-probe", daemon=True).start()


def _output_root(config: Config, data_dir: Path) -> Path:
    """Where retained outputs go: ``output_dir`` (a relative one is taken from the directory of the config file that
    set it, not from wherever tether was started), else ``tool-output`` in the data directory."""
    value = config.get("output_dir")
    if not isinstance(value, str):
        return data_dir / "tool-output"
    path = Path(value).expanduser()
    origin = config.origins.get(("output_dir",))
    if not path.is_absolute() and origin is not None:
        path = origin.parent / path
    return path


def _store_url(config: Config) -> str | None:
    """The shared store's URL: ``$TETHER_STORE_URL``, else the config's ``store``; ``None``: the SQLite file. The
    one resolution (``tether.config._store``) every command's store comes from.

    Raises:
        UsageError: ``$TETHER_STORE_URL`` is set but is not a ``postgresql://`` URL (the value is not echoed: it
            may hold a password).
    """
    from .config.internal import store_choice

    return store_choice(config).url


class RuntimeLocation:
    """One project directory in a runtime: path resolution (``location``) and its registry (``tools``).

    ``tools`` is the Location placement: its registrations win over the application's (``rt.tools``); the built-in
    tools are registered in it.
    """

    __slots__ = ("builtins", "location", "mcp", "notices", "tools")

    def __init__(self, location: Location, tools: ToolRegistry) -> None:
        self.location = location
        self.tools = tools
        self.builtins: tuple[str, ...] = ()
        self.mcp: McpServers | None = None
        """The project's MCP servers (``tether.mcp``; shared by the Locations of one root), when any is configured."""
        self.notices: tuple[str, ...] = ()
        """Plugins and project tool files that were skipped, one line each (say them once, as ``tether run``)."""

    def __repr__(self) -> str:
        return f"<RuntimeLocation {self.location.root}>"

    @property
    def root(self) -> Path:
        """The project's real root directory (also the project key of saved approvals)."""
        return self.location.root

    @property
    def directory(self) -> Path:
        """The real working directory (the root or inside it): a session created here records it."""
        return self.location.directory


class RuntimeSessions:
    """``rt.sessions``: create, get and list sessions (wraps :class:`~tether.session.Sessions`)."""

    __slots__ = ("_runtime", "service")

    def __init__(self, runtime: Runtime, service: Sessions) -> None:
        self._runtime = runtime
        self.service = service

    async def create(
        self,
        location: RuntimeLocation | str | os.PathLike[str],
        *,
        agent: str | None = None,
        title: str = "",
        rules: Sequence[Rule | Sequence[str]] = (),
        parent_id: str | None = None,
        deps: Any = None,
        parent_call_id: str | None = None,
    ) -> Session:
        """Create a session in ``location`` (a Location scope or a directory) for ``agent`` (default ``build``).

        ``deps`` are the application dependencies its tool calls read as ``ctx.deps``: kept in memory on the returned
        handle, never stored, for as long as someone holds it (a released session reopens with ``deps=None``).
        ``parent_id`` / ``parent_call_id``: a child session's parent and the parent's tool call (``task`` sets them).

        Raises:
            UsageError: no such agent, the directory does not exist, or a rule is neither a ``Rule`` nor a valid
                ``(action, resource, effect)`` triple (effect ``allow``, ``ask`` or ``deny``).
        """
        if not isinstance(location, RuntimeLocation):
            location = await self._runtime.location(location)
        from .permissions import DEFAULT_AGENT

        session = await self.service.create(
            location,
            agent=agent or DEFAULT_AGENT,
            title=title,
            rules=rules,
            parent_id=parent_id,
            deps=deps,
            parent_call_id=parent_call_id,
        )
        return self._runtime._own_task(session)  # pyright: ignore[reportPrivateUsage]

    async def get(self, session_id: str) -> Session:
        """The session ``session_id``: the same handle while anyone holds one, else reopened from the store.

        Raises:
            NotFoundError: no such session.
        """
        return self._runtime._own_task(await self.service.get(session_id))  # pyright: ignore[reportPrivateUsage]

    async def list(self, *, project: str | None = None, limit: int = 100) -> Sequence[SessionInfo]:
        """Stored sessions, most recently updated first (of one project root if given)."""
        return await self.service.list(project=project, limit=limit)


class Runtime:
    """The process scope of tether (see the module docstring).

    Args:
        data_dir: where the store and tool outputs live (default ``$TETHER_DATA_DIR`` or the user data dir).
        config: the merged configuration (``tether.config.load_config``); ``None`` uses an empty one.
        concurrency: the most tool calls of one step that settle at once (``None``: no cap).
        plugins: activate the ``tether.plugins`` entry points and a trusted project's ``.tether/tools`` files in
            each Location (docs/plugins.md); ``False``: the built-in tools only.
    """

    def __init__(
        self,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        config: Config | None = None,
        concurrency: int | None = None,
        plugins: bool = True,
    ) -> None:
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._config = config
        self._concurrency = concurrency
        self._plugins_enabled = plugins
        self._plugins: Plugins | None = None  # the entry points, loaded once per runtime
        self._stack: AsyncExitStack | None = None
        self._locations: dict[tuple[str, str], RuntimeLocation] = {}
        self._mcp: McpRoots | None = None  # the MCP servers per project root, once a Location opens
        self._models: ModelCache | None = None
        """The models this runtime resolved from ``provider/model`` specs, one per spec, closed with the runtime."""

    # -- lifecycle ---------------------------------------------------------------------------------------------------

    async def __aenter__(self) -> Runtime:
        if self._stack is not None:
            raise UsageError("A Runtime can be entered only once")
        from .bus import Bus
        from .config import Config
        from .output import OutputStore
        from .paths import default_data_dir
        from .permissions import PermissionService, SavedApprovals, SessionRules, builtin_agents
        from .session import QuestionService, Sessions
        from .session.internal import Children
        from .store import SQLiteStore
        from .telemetry.internal import turn_trace
        from .tools import ToolRegistry
        from .tools.internal import ModelCatalog

        data_dir = self._data_dir or default_data_dir()
        config = self._config if self._config is not None else Config()
        url = _store_url(config)
        _probe_sandbox(config)
        # resources are canonical paths: the rules about the data and temp directories name their real paths
        real_data, real_tmp = await anyio.to_thread.run_sync(_prepare_data_dir, data_dir, url is None)
        self.data_dir: Path = data_dir
        self._real_data_dir = real_data
        self.config: Config = config
        stack = self._stack = AsyncExitStack()
        try:
            from .llm.internal import ModelCache

            # closed last: after every session and task has ended
            self._models = await stack.enter_async_context(ModelCache(self._build_model))
            self.bus: Bus = Bus()
            sqlite: SQLiteStore | None = None
            if url is None:
                # Its writer thread opens and migrates the file while the rest opens; awaited at the end (issue 38).
                sqlite = SQLiteStore(data_dir / _STORE)
                stack.push_async_callback(sqlite.aclose)
                sqlite.start()
            limits: Mapping[str, Any] = config.get("tool_output") or {}
            output_options: dict[str, Any] = {}
            if isinstance(limits.get("max_lines"), int):
                output_options["max_lines"] = limits["max_lines"]
            if isinstance(limits.get("max_bytes"), int):
                output_options["max_bytes"] = limits["max_bytes"]
            self.output: OutputStore = OutputStore(_output_root(config, data_dir), **output_options)
            await (
                self.output.open()
            )  # created 0700; another user's or a writable-by-others directory is refused
            # resources are canonical paths: the per-session output rules use the real directory
            self._output_root = await anyio.to_thread.run_sync(os.path.realpath, self.output.directory)
            self.tools: ToolRegistry = ToolRegistry(output=self.output)
            if sqlite is not None:
                self.store: SQLiteStore | PostgresStore = sqlite
                self.saved: SavedApprovals = await stack.enter_async_context(
                    SavedApprovals(data_dir / _STORE)
                )
            else:  # docs/postgres.md: sessions, claims and saved approvals in one database every worker shares
                from .store import PgSavedApprovals, PostgresStore

                assert url is not None

                self.store = await stack.enter_async_context(PostgresStore(url))
                self.saved = await stack.enter_async_context(PgSavedApprovals(url))
            from .sandbox import Sandbox, SandboxSettings, detect

            settings = SandboxSettings.from_config(config.get("sandbox"))
            detection = await anyio.to_thread.run_sync(detect, settings.mode)  # cached per process
            # the user's own rules only (an untrusted project's are tighten-only and never widen the sandbox)
            self.sandbox: Sandbox = Sandbox.make(settings, detection, real_tmp, config.permission)
            # dead runtimes' session temp directories go now, this one's when it closes (after every session)
            await anyio.to_thread.run_sync(self.sandbox.open)
            stack.push_async_callback(anyio.to_thread.run_sync, self.sandbox.close)
            self.agents: dict[str, Agent] = builtin_agents(
                real_data, real_tmp, config, sandboxed=self.sandbox.auto_allow
            )
            # the permission service's view of a session: its agent's layers, its retained outputs, its own rules
            self._resolve_rules: SessionRules = SessionRules(
                agents=self.agents,
                info=lambda session_id: self.sessions.service.info(session_id),
                stored=self.store.get_session,
                output=self.output,
                output_root=self._output_root,
            )
            self.permissions: PermissionService = await stack.enter_async_context(
                PermissionService(bus=self.bus, saved=self.saved, resolve=self._resolve_rules)
            )
            service = Sessions(
                store=self.store,
                bus=self.bus,
                agents=self.agents,
                permissions=self.permissions,
                locate=self._locate,
                concurrency=self._concurrency,
                instructions=self._instructions,
                trusted=self._trusted,
                catalog=ModelCatalog.from_config(config.get("catalog")).for_model,
                observe=turn_trace,  # telemetry traces each turn (None, at one check a turn, when untraced)
            )
            stack.callback(service.close)
            # Code Mode (docs/codemode.md): imported only when an agent has it on
            if _has_codemode(config.get("agent")):
                from .codemode import CodeMode

                service.codemode = CodeMode.from_config(config.get("agent"), service)
            self.sessions: RuntimeSessions = RuntimeSessions(self, service)
            # questions for a person (the question tool), answered like permission requests; closed before them
            self.questions: QuestionService = QuestionService(bus=self.bus)
            stack.push_async_callback(self.questions.close)
            self._children = Children(
                sessions=self.sessions,
                info=self.store.get_session,
                agents=self.agents,
                resolve_model=self._resolve_model,
                publish=self.bus.publish,
            )
            self._task_tools: dict[str, Tool[Any, Any]] = {}
            self._task_sessions: weakref.WeakSet[Session] = weakref.WeakSet()
            if sqlite is not None:
                await sqlite.open()  # a file that cannot be opened or migrated fails the runtime's open
            task_group: TaskGroup = await stack.enter_async_context(anyio.create_task_group())
            self._task_group = task_group
            stack.callback(task_group.cancel_scope.cancel)
            task_group.start_soon(self.output.run_cleanup, _CLEANUP_INTERVAL)
        except BaseException:
            await stack.aclose()
            raise
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        stack = self._stack
        if stack is None:
            return
        if isinstance(e, Exception):
            # Nothing here acts on the body's error, so it closes everything as a normal exit and propagates as
            # itself: the runtime's task group (output cleanup) never wraps it in an ExceptionGroup.
            await stack.aclose()
        else:
            await stack.__aexit__(t, e, tb)

    # -- Locations ---------------------------------------------------------------------------------------------------

    async def location(
        self, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None
    ) -> RuntimeLocation:
        """The Location scope with ``path`` as its working directory (one per real root and working directory,
        built-ins registered).

        The project root is ``root`` when given; else the config's :attr:`~tether.config.Config.root` when ``path``
        lies inside it (``load_config`` found it by walking up from ``path``: ``repo/pkg`` works in ``repo``); else
        ``path`` itself. Relative paths the tools receive are joined with ``path``; what is outside the root is an
        external directory; permission resources are relative to the root.

        Raises:
            UsageError: ``path`` (or ``root``) is not a directory, ``path`` lies outside ``root``, or the runtime is
                not open.
        """
        if self._stack is None:
            raise UsageError("Use the Runtime inside `async with Runtime(...) as rt`")
        from .builtins import BuiltinDeps, builtin_tools
        from .builtins.internal import discover_skills
        from .paths import default_config_dir
        from .tools import ToolRegistry

        named = self.config.get("instructions")
        # Protected paths, like AGENTS.md: the instruction files the config names, and tether's own directories (the
        # saved approvals and trusted projects live in the data directory, the user's config in the config one).
        protected = [i for i in named if isinstance(i, str)] if isinstance(named, list) else []
        protected += [
            f"{self.data_dir}{os.sep}",
            f"{self._real_data_dir}{os.sep}",
            f"{default_config_dir()}{os.sep}",
        ]
        location = await anyio.to_thread.run_sync(
            lambda: _open_location(path, root, self.config.root, protected)
        )
        key = (str(location.root), str(location.directory))
        found = self._locations.get(key)
        if found is not None:
            return found
        registry = ToolRegistry(parent=self.tools)
        shell = self.config.get("shell")
        skills = await anyio.to_thread.run_sync(discover_skills, location, default_config_dir())
        tools = builtin_tools(
            BuiltinDeps(
                location=location,
                permissions=self.permissions,
                output=self.output,
                shell=shell if isinstance(shell, str) else None,
                todos=self.store,
                bus=self.bus,
                skills=skills,
                questions=self.questions.ask_for_call,
                children=self._children.run,
                subagents=self._children.subagents(self._default_agent),
                sandbox=self.sandbox,
            )
        )
        scope = RuntimeLocation(location, registry)
        self._stack.callback(registry.register(tools, origin="builtin").close)
        scope.builtins = tuple(tools)
        await self._start_mcp(scope)
        if self._plugins_enabled:
            await self._activate_plugins(scope)
        from .sandbox import notice

        # skill files refused (foreign, leading out, malformed); the sandbox's one line when it is not bubblewrap
        sandboxing = notice(self.sandbox.detection, required=self.sandbox.settings.required)
        scope.notices = (*scope.notices, *skills.refused, *([sandboxing] if sandboxing else []))
        return self._locations.setdefault(key, scope)

    async def _start_mcp(self, scope: RuntimeLocation) -> None:
        """Connect the configured MCP servers (once per project root) and register their tools in ``scope``; closing
        the runtime stops them (``tether.mcp``). A config that names no server (neither ``mcp`` nor ``mcpServers``,
        the sections ``specs_from_config`` reads) loads nothing of ``tether.mcp`` (start-up, issue 38)."""
        assert self._stack is not None
        if not any(isinstance(self.config.data.get(key), Mapping) for key in ("mcp", "mcpServers")):
            return
        if self._mcp is None:
            from .mcp.internal import McpRoots

            self._mcp = McpRoots(
                self.config.data,
                sandbox=self.sandbox,
                data_dir=self._real_data_dir,
                task_group=self._task_group,
                stack=self._stack,
            )
        scope.mcp, notices = await self._mcp.start(
            scope.tools, root=scope.root, taken=scope.builtins, trusted=self._trusted(scope)
        )
        scope.notices = (*scope.notices, *notices)

    async def _activate_plugins(self, scope: RuntimeLocation) -> None:
        """Activate the plugins and (trusted project) tool files in ``scope``, closed when the runtime closes."""
        assert self._stack is not None
        if self._plugins is None:
            from .paths import default_config_dir
            from .plugins.internal import Plugins

            config = self.config  # an untrusted project's own .dist-info folders are not installed plugins
            untrusted = () if config.project_trusted or config.root is None else (config.root,)
            self._plugins = Plugins(exclude=untrusted, user_tools=default_config_dir() / "tools")
        activation = await self._plugins.activate(
            scope.tools, root=scope.root, directory=scope.directory, trusted=self._trusted(scope)
        )
        self._stack.callback(activation.close)
        scope.notices = (*scope.notices, *activation.notices)

    @property
    def _default_agent(self) -> str:
        found = self.config.get("default_agent")
        return found if isinstance(found, str) else "build"

    def _resolve_model(self, spec: str) -> Model:
        """A ``provider/model`` spec (``rt.run``'s ``model``, a subagent's configured one) resolved with this runtime's
        config, once per spec while the runtime is open: every turn given the same spec shares one model, so one SDK
        client and its connections (building a client loads the CA bundle: ~45 ms of CPU), closed with the runtime.

        Raises:
            ConfigError: the spec names an unknown provider.
            ProviderAuthError: the provider needs an API key and none is set.
        """
        assert self._models is not None, "the runtime is open"
        return self._models.get(spec)

    def _build_model(self, spec: str | None) -> Model:
        from .llm.providers import resolve_model

        assert spec is not None, "the runtime resolves specs only"
        return resolve_model(spec, self.config.data)

    def _own_task(self, session: Session) -> Session:
        """Give ``session`` a ``task`` tool in its own placement listing the subagents its agent may run (the
        Location's lists the default agent's); once per session, one tool per agent."""
        agent = session.info.agent
        if agent == self._default_agent or session in self._task_sessions:
            return session
        from .builtins.internal import deferred_task

        tool = self._task_tools.get(agent)
        if tool is None:
            subagents = self._children.subagents(agent)
            tool = self._task_tools[agent] = deferred_task(self.permissions, self._children.run, subagents)
        self._task_sessions.add(session)
        session.tools.register({"task": tool})
        return session

    async def _locate(self, directory: str, project: str | None = None) -> RuntimeLocation:
        """A stored session's Location: its working directory in its project root (the root it was created in),
        or as :meth:`location` finds it when that root is gone or no longer contains the directory."""
        if project is not None:
            try:
                return await self.location(directory, root=project)
            except UsageError:
                pass  # the root is gone or was moved: find the project as a new run would
        return await self.location(directory)

    def _instructions(self, location: object, agent: str) -> Callable[[], Sequence[str]]:
        """How to read the instruction texts of a Location for a turn's default system prompt: the project's files
        must pass ``agent``'s read rules (refused files are left out). Returns the blocking read, which the session
        runs in the worker thread that measures the environment; the MCP servers' texts are taken now, on the loop.
        """
        if not isinstance(location, RuntimeLocation):
            return lambda: ()
        from .config import load_instructions

        readable = self.readable(agent)
        config = self.config
        servers = location.mcp
        extra = () if servers is None else tuple(servers.instruction_texts())

        def read() -> Sequence[str]:
            found = load_instructions(location.location, config, readable=readable)
            return (*found.texts, *extra) if extra else found.texts

        return read

    def readable(self, agent: str | None = None) -> Callable[[str], bool]:
        """Whether ``agent``'s ``read`` rules (the built-in defaults, the config's, an untrusted project's tighten-only
        ones) allow a resource (relative to the project root) without asking: what instruction files the project
        names must pass (``load_instructions(readable=)``). Default: the config's ``default_agent``, else ``build``;
        an unknown agent allows nothing.
        """
        from .permissions import evaluate_request

        found = self.agents.get(agent or self.config.get("default_agent") or "build")
        rulesets = found.rulesets if found is not None else ()

        def readable(resource: str) -> bool:
            return bool(rulesets) and evaluate_request("read", [resource], rulesets).effect == "allow"

        return readable

    def _trusted(self, location: object) -> bool:
        """Whether the user trusts a Location's project: the config's trusted root (``git status`` runs only there)."""
        config = self.config
        return (
            isinstance(location, RuntimeLocation) and config.project_trusted and location.root == config.root
        )

    # -- convenience -------------------------------------------------------------------------------------------------

    async def prompt(
        self, directory: str | os.PathLike[str], text: str, *, model: Model, agent: str | None = None
    ) -> TurnResult:
        """Create a session in ``directory`` and run one turn (a shortcut for scripts)."""
        session = await self.sessions.create(directory, agent=agent)
        return await session.prompt(text, model=model)

    async def run(
        self,
        prompt: str | Sequence[Content],
        *,
        model: Model | str,
        directory: str | os.PathLike[str] = ".",
        tools: Mapping[str, Tool[Any, Any]] | None = None,
        agent: str | None = None,
        deps: Any = None,
    ) -> TurnResult:
        """Run one turn in a new session in ``directory``, with ``tools`` registered for that turn.

        ``tools`` (name → tool) are registered in the new session's own placement (``session.tools``), so they win
        over built-ins of the same name for this turn only: a concurrent turn on the same Location never sees them. ``model`` is a :class:`~tether.llm.Model` or a ``provider/model``
        spec resolved with this runtime's config, once: the turns naming one spec share its model (one SDK client,
        its connections kept alive), which the runtime closes when it closes; a ``Model`` given is the caller's.

        Raises:
            UsageError: the runtime is not open, no such agent, or ``directory`` is not a directory.
            ConfigError: ``model`` is a spec naming an unknown provider.
            ProviderAuthError: the provider needs an API key and none is set.
            ProviderError: the model failed and retrying did not help.
        """
        if self._stack is None:
            raise UsageError(
                "Use rt.run(...) inside `async with Runtime(...) as rt`, or call tether.run(...)"
            )
        _check_tools(tools)
        if isinstance(model, str):
            model = self._resolve_model(model)
        location = await self.location(directory)
        session = await self.sessions.create(location, agent=agent, deps=deps)
        with session.tools.register(tools or {}):
            return await session.prompt(prompt, model=model)

    def run_sync(
        self,
        prompt: str | Sequence[Content],
        *,
        model: Model | str,
        directory: str | os.PathLike[str] = ".",
        tools: Mapping[str, Tool[Any, Any]] | None = None,
        agent: str | None = None,
        deps: Any = None,
    ) -> TurnResult:
        """Open this runtime, :meth:`run` one turn, close it: the synchronous entry point for scripts.

        Raises:
            UsageError: called from a running event loop (use ``await rt.run(...)`` there), or the runtime was
                already opened; and as :meth:`run`.
        """
        _refuse_running_loop("Runtime.run_sync")
        if self._stack is not None:
            raise UsageError(
                "Runtime.run_sync opens the runtime itself; inside `async with Runtime(...) as rt` use await rt.run(...)"
            )

        async def main() -> TurnResult:
            async with self:
                return await self.run(
                    prompt, model=model, directory=directory, tools=tools, agent=agent, deps=deps
                )

        return anyio.run(main)


def _open_location(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str] | None,
    config_root: Path | None,
    protected: Sequence[str],
) -> Location:
    """The Location of working directory ``path`` (see :meth:`Runtime.location` for which root). Blocking.

    Raises:
        UsageError: as :class:`~tether.location.Location`.
    """
    from .location import Location

    if root is None and config_root is not None:
        real, top = os.path.realpath(path), os.path.realpath(config_root)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            root = top
    if root is None:
        return Location(path, protected=protected)
    return Location(root, directory=os.path.abspath(path), protected=protected)


def _check_tools(tools: object) -> None:
    """Refuse a ``tools`` argument that is not a mapping of names to tools, saying how to write it.

    Raises:
        UsageError: ``tools`` is not a mapping, or a value is a plain function or not a tool.
    """
    from .tools import Tool

    if tools is None:
        return
    if not isinstance(tools, Mapping):
        raise UsageError(
            "tools must map names to tools, e.g. tools={'line_count': line_count}: a tool is named where it is "
            "registered"
        )
    for name, value in tools.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(value, Tool):
            hint = (
                "decorate it with @tool (tether.tools.tool)"
                if callable(value)
                else "build it with @tool or Tool(...)"
            )
            raise UsageError(f"tools[{name!r}] is not a Tool: {hint}")


def _refuse_running_loop(name: str) -> None:
    """Raise when called from a running event loop: a nested ``anyio.run`` cannot start there.

    Raises:
        UsageError: an event loop is running in this thread.
    """
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UsageError(
        f"{name}() cannot run inside a running event loop: in async code use "
        "`async with Runtime(...) as rt: await rt.run(...)`"
    )


def _has_codemode(sections: object) -> bool:
    """Whether an ``agent.<name>`` section of the config turns Code Mode on (``codemode``: ``true`` or an object)."""
    if not isinstance(sections, Mapping):
        return False
    return any(
        isinstance(section, Mapping) and section.get("codemode", False) not in (False, None)  # pyright: ignore[reportUnknownMemberType]
        for section in sections.values()  # pyright: ignore[reportUnknownVariableType]
    )
