"""Activate plugins and project tools in one Location: :func:`activate` returns an :class:`Activation`.

Order (later wins a name, as registries do): the built-ins and MCP tools (registered by the runtime before this),
then each plugin in entry point name order, each in its own :class:`~tether.plugins.PluginAPI` scope, then the
user's tool files (``<config dir>/tools``), then the project's, each in file name order, one registration per file. Closing the activation (when the Location closes) closes them
all, latest first, revealing what was there before.

A plugin that raises (or whose coroutine raises, or does not finish within :data:`ACTIVATION_DEADLINE` seconds) is
skipped: what it registered before is closed, and the problem is a notice naming its entry point and the error. Notices are also what an untrusted project's tool files
get: they are never imported, and the notice says so once and how to trust the project.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path

import anyio
import anyio.to_thread

from .._record import record
from ..tools import Registration, ToolRegistry
from ._api import PluginAPI
from ._sources import (
    TOOLS_DIR,
    LoadedPlugin,
    Problem,
    ToolFile,
    load_entry_points,
    load_project_tools,
    load_user_tools,
    project_tool_files,
)

__all__ = ["ACTIVATION_DEADLINE", "Activation", "Plugins", "activate"]

log = logging.getLogger("tether.plugins")

ACTIVATION_DEADLINE = 30.0
"""Seconds an async plugin may take to activate in one Location (every command opens one: a hung plugin must not
hang them all)."""


@record(frozen=False)
class Activation:
    """What plugins and project tools registered in one Location, and what was skipped (``notices``)."""

    plugins: list[PluginAPI] = field(default_factory=list[PluginAPI])
    files: list[Registration] = field(default_factory=list[Registration])
    notices: list[str] = field(default_factory=list[str])

    def close(self) -> None:
        """Close every registration, latest first (idempotent)."""
        while self.files:
            self.files.pop().close()
        while self.plugins:
            self.plugins.pop().close()


async def activate(
    registry: ToolRegistry,
    *,
    root: Path,
    directory: Path,
    trusted: bool,
    plugins: Sequence[LoadedPlugin | Problem],
    user_tools: Path | None = None,
) -> Activation:
    """Activate ``plugins`` (loaded entry points, or the problems of those that did not load), the tool files of
    ``user_tools`` (the user's folder) and, when ``trusted``, the project's, in ``registry`` (a Location's
    placement). Never raises for a plugin's or a file's fault.
    """
    done = Activation()
    for loaded in plugins:
        if isinstance(loaded, Problem):
            done.notices.append(str(loaded))
            continue
        api = PluginAPI(registry, name=loaded.name, origin=loaded.origin, root=root, directory=directory)
        try:
            result = loaded.plugin(api)
            if inspect.isawaitable(result):
                with anyio.move_on_after(ACTIVATION_DEADLINE) as deadline:
                    await result
                if deadline.cancelled_caught:
                    api.close()
                    done.notices.append(
                        f"plugin {loaded.name} ({loaded.value}): did not finish activating within "
                        f"{ACTIVATION_DEADLINE:g} s; skipped"
                    )
                    continue
        except Exception as exc:  # the plugin's boundary: reported and skipped, never fatal
            api.close()
            log.debug("plugin %s failed", loaded.name, exc_info=True)
            done.notices.append(
                f"plugin {loaded.name} ({loaded.value}): raised {type(exc).__name__}: {exc}; skipped"
            )
            continue
        done.plugins.append(api)
    if user_tools is not None:
        _register(done, registry, await anyio.to_thread.run_sync(load_user_tools, user_tools))
    if not trusted:
        files = await anyio.to_thread.run_sync(project_tool_files, root)
        if files:
            count = f"{len(files)} tool file{'s' if len(files) != 1 else ''}"
            done.notices.append(
                f"{TOOLS_DIR.as_posix()}: {count} not loaded: the project is not trusted "
                f"(trust it with: tether trust {root})"
            )
        return done
    _register(done, registry, await anyio.to_thread.run_sync(load_project_tools, root))
    return done


class Plugins:
    """A runtime's plugins: the entry points, loaded once (the first Location), activated in each Location.

    Args:
        exclude: folders whose installed distributions are not the user's plugins (an untrusted project's own
            ``.dist-info`` folders, when tether runs from inside it).
        user_tools: the user's own tool files folder (``<config dir>/tools``).
    """

    __slots__ = ("_exclude", "_loaded", "_user_tools")

    def __init__(self, *, exclude: Sequence[Path] = (), user_tools: Path | None = None) -> None:
        self._exclude = tuple(exclude)
        self._user_tools = user_tools
        self._loaded: Sequence[LoadedPlugin | Problem] | None = None

    async def activate(
        self, registry: ToolRegistry, *, root: Path, directory: Path, trusted: bool
    ) -> Activation:
        """:func:`activate` the plugins, the user's tool files and (when ``trusted``) the project's in ``registry``.
        Never raises for a plugin's or a file's fault; the caller closes the activation with the Location."""
        if self._loaded is None:
            self._loaded = await anyio.to_thread.run_sync(load_entry_points, self._exclude)
        return await activate(
            registry,
            root=root,
            directory=directory,
            trusted=trusted,
            plugins=self._loaded,
            user_tools=self._user_tools,
        )


def _register(done: Activation, registry: ToolRegistry, found: Sequence[ToolFile | Problem]) -> None:
    for item in found:
        if isinstance(item, Problem):
            done.notices.append(str(item))
        else:
            done.files.append(registry.register(item.tools, origin=item.origin))
