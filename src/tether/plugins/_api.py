"""The narrow capability a plugin receives: :class:`PluginAPI`.

A plugin gets this object and nothing else of the runtime: it can register tools and add the three hooks
(``tool.definition``, ``execute.before``, ``execute.after``), and it can read where it runs. It never sees the
registry, the session store, the permission service or the runtime (OpenCode's ``Tools.Service``: registration
only). Everything it registers belongs to its own activation and is closed with the Location, revealing what was
registered under the same names before (registries are scoped: latest wins, closing reveals the previous).

Hooks are wrapped at this boundary, the plugin's edge:

- a definition hook that raises is skipped for that tool (what it changed is undone) and reported once, with the
  plugin's name, in the ``tether.plugins`` log: a plugin must never break a step's catalog;
- an ``execute.before`` / ``execute.after`` hook that raises fails that call only, as any hook does (settle's one
  defect translation), and the error names the plugin. A ``ToolFailure`` (or a permission outcome) it raises keeps
  its meaning: that is how a hook fails a call on purpose.
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..errors import TetherError, UsageError
from ..tools import AfterEvent, BeforeEvent, Registration, Tool, ToolRegistry
from ..tools.internal import DefinitionEvent

__all__ = ["Plugin", "PluginAPI", "PluginHookError"]

log = logging.getLogger("tether.plugins")

Plugin = Callable[["PluginAPI"], Awaitable[None] | None]
"""A plugin: called once per Location with its :class:`PluginAPI`; may be async."""


class PluginHookError(Exception):
    """A plugin's execute hook raised: the call fails with this (naming the plugin), chained to the hook's error."""


class PluginAPI:
    """What a plugin may do in one Location (see the module docstring).

    Attributes:
        name: the plugin's name (the entry point's, or the project tool file's path).
        root: the project's root directory (OpenCode's ``worktree``).
        directory: the working directory of the Location (OpenCode's ``directory``).
    """

    __slots__ = ("_closed", "_origin", "_registrations", "_registry", "directory", "name", "root")

    def __init__(
        self, registry: ToolRegistry, *, name: str, origin: str, root: Path, directory: Path
    ) -> None:
        self._registry = registry
        self._origin = origin
        self._registrations: list[Registration] = []
        self._closed = False
        self.name = name
        self.root = root
        self.directory = directory

    def __repr__(self) -> str:
        return f"<PluginAPI {self.name}>"

    def tool(self, name: str, tool: Tool[Any, Any]) -> None:
        """Register ``tool`` as ``name`` in this Location (it wins over a built-in or earlier tool of that name).

        Raises:
            RegistrationError: ``name`` is not a valid tool name or ``tool`` is not a ``Tool``.
            UsageError: the Location is closed.
        """
        self._keep(self._registry.register({name: tool}, origin=self._origin))

    def on_definition(self, hook: Callable[[DefinitionEvent], None]) -> None:
        """Add a ``tool.definition`` hook: it sees each tool of every step's catalog and may change its
        ``description`` and ``input_schema`` (what the model is told; the input is still checked by the tool).

        Raises:
            UsageError: the Location is closed.
        """
        self._keep(self._registry.definition(_DefinitionGuard(self.name, hook)))

    def before(self, hook: Callable[[BeforeEvent], Awaitable[None] | None]) -> None:
        """Add an ``execute.before`` hook: it sees each call's input before the tool runs and may replace it.

        Raises:
            UsageError: the Location is closed.
        """
        self._keep(self._registry.before(_ExecuteGuard(self.name, "before", hook)))

    def after(self, hook: Callable[[AfterEvent], Awaitable[None] | None]) -> None:
        """Add an ``execute.after`` hook: it sees each call's outcome and may replace it.

        Raises:
            UsageError: the Location is closed.
        """
        self._keep(self._registry.after(_ExecuteGuard(self.name, "after", hook)))

    def _keep(self, registration: Registration) -> None:
        if self._closed:
            registration.close()
            raise UsageError(f"plugin {self.name}: its Location is closed; nothing more can be registered")
        self._registrations.append(registration)

    @property
    def registered(self) -> int:
        """How many registrations (tools and hooks) this activation holds."""
        return len(self._registrations)

    def close(self) -> None:
        """Close everything this activation registered (latest first) and refuse later registrations."""
        self._closed = True
        while self._registrations:
            self._registrations.pop().close()


class _DefinitionGuard:
    """A plugin's definition hook: a failure undoes its changes to that tool and is reported once."""

    __slots__ = ("_hook", "_plugin", "_reported")

    def __init__(self, plugin: str, hook: Callable[[DefinitionEvent], None]) -> None:
        self._plugin = plugin
        self._hook = hook
        self._reported: set[tuple[str, str]] = set()

    def __call__(self, event: DefinitionEvent) -> None:
        description, schema = event.description, copy.deepcopy(event.input_schema)
        try:
            self._hook(event)
        except Exception as exc:  # the plugin's boundary: its defect never breaks a step's catalog
            event.description, event.input_schema = description, schema
            key = (event.tool, f"{type(exc).__name__}: {exc}")
            if key not in self._reported:
                self._reported.add(key)
                log.warning(
                    "plugin %s: its tool.definition hook raised %s for tool %s; the hook is skipped for it",
                    self._plugin,
                    key[1],
                    event.tool,
                )


class _ExecuteGuard:
    """A plugin's execute hook: an unexpected exception fails the call naming the plugin."""

    __slots__ = ("_hook", "_phase", "_plugin")

    def __init__(self, plugin: str, phase: str, hook: Callable[[Any], Awaitable[None] | None]) -> None:
        self._plugin = plugin
        self._phase = phase
        self._hook = hook

    def __repr__(self) -> str:
        return f"<{self._phase} hook of plugin {self._plugin}>"

    async def __call__(self, event: Any) -> None:
        try:
            result = self._hook(event)
            if inspect.isawaitable(result):
                await result
        except TetherError:
            raise  # ToolFailure and the permission outcomes: a hook's intended way to fail a call
        except Exception as exc:
            raise PluginHookError(f"plugin {self._plugin}: {type(exc).__name__}: {exc}") from exc
