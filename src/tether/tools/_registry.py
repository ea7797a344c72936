"""Scoped tool registries: the application placement and Location placements.

A :class:`ToolRegistry` holds a stack of registrations per effective name; the latest active one wins and closing a
:class:`Registration` removes exactly its entries, revealing the previous one. A Location registry has the
application registry as its ``parent``: Location registrations win over application ones of the same name. Hooks are
scoped registrations too. ``materialize`` snapshots the effective tools for one step (law 5); a step first awaits
:meth:`ToolRegistry.caught_up`, so a source that announced a change of its tools (an MCP server's
``list_changed``) has registered it (``pending``).

Each registration carries its ``origin`` (``builtin``, ``application``, ``plugin:<entry point>``,
``user:<file>``, ``project:<file>``, ``mcp:<server>``): whoever registers says where the tools come from (``register(origin=)``, or
the placement's default, ``ToolRegistry(origin=)``), and ``tether tools`` shows it. Origin is information, never a
permission: nothing decides on it.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError, RegistrationError
from ..output import OutputStore
from ..paths import default_data_dir
from ..rules import Rule
from ._entry import Entry
from ._hooks import AfterHook, BeforeHook, DefinitionHook
from ._names import effective_name
from ._tool import Tool

if TYPE_CHECKING:
    from ._settle import Materialization

__all__ = ["Entry", "Registration", "ToolRegistry"]

_tokens = itertools.count(1)


class Registration:
    """A handle to one registration; closing it (idempotent) removes exactly what it registered.

    Usable as a sync or async context manager.
    """

    __slots__ = ("_closed", "_registry", "_token")

    def __init__(self, registry: ToolRegistry, token: int) -> None:
        self._registry = registry
        self._token = token
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._registry._remove(self._token)

    def __enter__(self) -> Registration:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Registration:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class ToolRegistry:
    """A placement of tool registrations (application when ``parent`` is None, else a Location).

    Args:
        parent: the application registry beneath this Location registry.
        output: the output store used to bound results; a Location registry inherits its parent's, an
            application registry defaults to ``<default data dir>/tool-output``.
        origin: the origin of registrations here that do not name their own (default ``application``).
    """

    def __init__(
        self,
        *,
        parent: ToolRegistry | None = None,
        output: OutputStore | None = None,
        origin: str = "application",
    ) -> None:
        self.parent = parent
        self.origin = origin
        if output is None and parent is None:
            # An application registry always bounds somewhere: the Runtime passes <data>/tool-output; a bare
            # registry uses the default data directory ($TETHER_DATA_DIR or the platform's).
            output = OutputStore(default_data_dir() / "tool-output")
        self._output = output
        self._stacks: dict[str, list[Entry]] = {}
        self._before: list[tuple[int, BeforeHook]] = []
        self._after: list[tuple[int, AfterHook]] = []
        self._definition: list[tuple[int, DefinitionHook]] = []
        self._pending: list[tuple[int, Callable[[], Awaitable[None]]]] = []
        self._version = 0
        # Materializations are snapshots; the same placement state and rules give an equal one, so reuse it.
        self._materialized: dict[tuple[Any, ...], Materialization] = {}

    @property
    def output(self) -> OutputStore:
        """The output store that bounds results of this placement (a Location inherits the application's)."""
        if self._output is not None:
            return self._output
        assert self.parent is not None
        return self.parent.output

    # -- registration ------------------------------------------------------------------------------------------------

    def register(
        self,
        tools: Mapping[str, Tool[Any, Any]],
        *,
        namespace: str | None = None,
        deps: Any = None,
        origin: str | None = None,
    ) -> Registration:
        """Register ``tools`` (authored name → tool) in this placement.

        The record is copied now: later changes to ``tools`` have no effect. Names are normalized (characters outside
        ``[A-Za-z0-9_-]`` become ``_``) and validated before anything is registered; later duplicates win. ``deps``
        (when not ``None``) is what these tools' calls read as ``ctx.deps``, whatever the session's. ``origin`` says
        where the tools come from (default: this placement's ``origin``).

        Raises:
            RegistrationError: an invalid name, namespace or tool value; nothing is registered.
        """
        staged: dict[str, Tool[Any, Any]] = {}
        for authored, tool in dict(tools).items():
            if not isinstance(tool, Tool):
                raise RegistrationError(f"Invalid Tool value for {authored!r}", name=str(authored))
            staged[effective_name(authored, namespace)] = tool if deps is None else tool.with_deps(deps)
        token = next(_tokens)
        source = self.origin if origin is None else origin
        for name, tool in staged.items():
            self._stacks.setdefault(name, []).append(Entry(name, tool, token, source))
        self._version += 1
        return Registration(self, token)

    def before(self, hook: BeforeHook) -> Registration:
        """Register a before hook (may replace a call's input)."""
        token = next(_tokens)
        self._before.append((token, hook))
        self._version += 1
        return Registration(self, token)

    def after(self, hook: AfterHook) -> Registration:
        """Register an after hook (may replace a call's outcome)."""
        token = next(_tokens)
        self._after.append((token, hook))
        self._version += 1
        return Registration(self, token)

    def definition(self, hook: DefinitionHook) -> Registration:
        """Register a definition hook (may change what the model is told about a tool, at every step's catalog)."""
        token = next(_tokens)
        self._definition.append((token, hook))
        self._version += 1
        return Registration(self, token)

    def pending(self, catch_up: Callable[[], Awaitable[None]]) -> Registration:
        """Register ``catch_up``: a source of this placement's registrations whose announced changes may still be on
        their way (an MCP server re-listing its tools). :meth:`caught_up` awaits it; it returns at once when nothing
        is owed and bounds its own wait."""
        token = next(_tokens)
        self._pending.append((token, catch_up))
        return Registration(self, token)

    async def caught_up(self) -> None:
        """Wait until every source of this placement and its parents has registered the changes it announced (each
        bounded by the source). A step awaits this before it materializes, so it advertises what was announced."""
        registry: ToolRegistry | None = self
        while registry is not None:
            for _, catch_up in registry._pending:
                await catch_up()
            registry = registry.parent

    def _remove(self, token: int) -> None:
        for name in list(self._stacks):
            stack = [e for e in self._stacks[name] if e.token != token]
            if stack:
                self._stacks[name] = stack
            else:
                del self._stacks[name]
        self._before = [(t, h) for t, h in self._before if t != token]
        self._after = [(t, h) for t, h in self._after if t != token]
        self._definition = [(t, h) for t, h in self._definition if t != token]
        self._pending = [(t, w) for t, w in self._pending if t != token]
        self._version += 1

    # -- lookup ------------------------------------------------------------------------------------------------------

    def current(self, name: str) -> Entry | None:
        """The effective registration for ``name`` now: this placement's latest, else the parent's."""
        stack = self._stacks.get(name)
        if stack:
            return stack[-1]
        return self.parent.current(name) if self.parent is not None else None

    def require(self, name: str) -> Entry:
        """The effective registration for ``name`` now, which must exist (:meth:`current` without the ``None``).

        Raises:
            NotFoundError: nothing is registered under ``name`` here or in the parent placement.
        """
        entry = self.current(name)
        if entry is None:
            names = sorted(self.effective())
            shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "") if names else "(none)"
            raise NotFoundError(f"No tool is registered as {name!r}. Registered tools: {shown}")
        return entry

    def effective(self) -> dict[str, Entry]:
        """Every effective registration, by name (this placement wins over the parent)."""
        merged = self.parent.effective() if self.parent is not None else {}
        for name, stack in self._stacks.items():
            merged[name] = stack[-1]
        return merged

    def versions(self) -> tuple[int, ...]:
        """The change counters of this placement and its parents (any registration or close changes them)."""
        own = (self._version,)
        return own if self.parent is None else own + self.parent.versions()

    def hooks(self) -> tuple[tuple[BeforeHook, ...], tuple[AfterHook, ...]]:
        """Before and after hooks in registration order (application hooks first)."""
        before: tuple[BeforeHook, ...] = ()
        after: tuple[AfterHook, ...] = ()
        if self.parent is not None:
            before, after = self.parent.hooks()
        return (*before, *(h for _, h in self._before)), (*after, *(h for _, h in self._after))

    def definition_hooks(self) -> tuple[DefinitionHook, ...]:
        """Definition hooks in registration order (application hooks first)."""
        inherited = self.parent.definition_hooks() if self.parent is not None else ()
        return (*inherited, *(h for _, h in self._definition)) if self._definition else inherited

    # -- materialize -------------------------------------------------------------------------------------------------

    def materialize(
        self,
        rules: Sequence[Rule] = (),
        *,
        final_step: bool = False,
        visible: Callable[[Entry], bool] | None = None,
    ) -> Materialization:
        """Snapshot the catalog for one step: visible definitions (sorted by name) and the captured tools.

        A tool is hidden only when the last rule whose action matches its permission action is a deny on ``*``
        (visibility only, law 4). ``visible`` can hide more (for example the per-model catalog rules,
        ``_catalog.ModelCatalog``). Definition hooks then change what the model is told. On the final step the
        definitions are kept but every call fails.
        """
        if final_step:  # the catalog of the steps before it, every call refused: filtered and built once
            return self.materialize(rules, visible=visible).finalized()
        # Rules are usually an agent's immutable tuple: identity is enough; otherwise compare their contents.
        rules_key: Any = rules if isinstance(rules, tuple) else tuple(rules)
        key = (self.versions(), visible, id(rules_key) if rules_key is rules else None)
        cached = self._materialized.get(key)
        if cached is not None and (cached.rules is rules_key or cached.rules == rules_key):
            # every step but a new catalog's first: no import statement runs (one a step, measured)
            return cached
        if len(self._materialized) >= 8:
            self._materialized.clear()
        parent = self.parent
        if parent is not None and not (self._stacks or self._before or self._after or self._definition):
            # A placement with nothing of its own (a session's, over its Location's) has its parent's catalog: the
            # parent's snapshot, shared by every such placement, with the stale check asked here.
            materialization = parent.materialize(rules_key, visible=visible).placed(self)
            self._materialized[key] = materialization
            return materialization
        from ._catalog import apply_definition_hooks
        from ._settle import Materialization, Visibility

        captured: dict[str, Entry] = {}
        hidden = Visibility(rules).hidden
        for name, entry in sorted(self.effective().items()):
            if hidden(entry.action):
                continue
            if visible is not None and not visible(entry):
                continue
            captured[name] = entry
        materialization = Materialization(registry=self, captured=captured, final_step=False, rules=rules_key)
        definition_hooks = self.definition_hooks()
        if definition_hooks:
            materialization.definitions = apply_definition_hooks(
                materialization.definitions, definition_hooks
            )
        self._materialized[key] = materialization
        return materialization
