"""Starting a runtime's MCP servers: one :class:`~._servers.McpServers` per project root, attached to each Location.

:class:`McpRoots` is what ``Runtime.location`` calls for every new Location. The first Location of a project root
starts the configured servers (in parallel, each within its connect deadline, in the runtime's task group); every
Location of that root gets their tools registered in its own registry. Closing the runtime (its exit stack) detaches
the tools and stops the servers, so no stdio process outlives it.

Where a stdio server runs is decided here, once per root. An untrusted project is never its working directory:
``python -m pkg``, ``npx pkg`` and a relative command would run the repository's own files (docs/security.md), so
it starts in ``<data>/mcp-cwd``, an empty private directory (``McpServers(workdir=...)``). A server marked
``"sandbox": true`` is wrapped in the sandbox (docs/sandbox.md): without bubblewrap it starts unconfined, or is left
out with a notice when ``sandbox.required`` is set.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ._servers import McpServers
from ._spec import ServerSpec, specs_from_config

if TYPE_CHECKING:
    from contextlib import AsyncExitStack

    from anyio.abc import TaskGroup

    from ..sandbox import Sandbox
    from ..tools import ToolRegistry

__all__ = ["McpRoots"]


class McpRoots:
    """The MCP servers of each project root of one runtime (see the module docstring).

    Args:
        config: the merged config's data (its ``mcp`` and ``mcpServers`` keys; an untrusted project's never reach it).
        sandbox: the runtime's sandbox, which holds the servers marked ``"sandbox": true``.
        data_dir: the real data directory (``mcp-cwd`` is made in it).
        task_group: the runtime's task group, where the supervisors run.
        stack: the runtime's exit stack: what is started here is stopped when it closes.
    """

    __slots__ = ("_config", "_data_dir", "_roots", "_sandbox", "_stack", "_task_group")

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        sandbox: Sandbox,
        data_dir: Path,
        task_group: TaskGroup,
        stack: AsyncExitStack,
    ) -> None:
        self._config = config
        self._sandbox = sandbox
        self._data_dir = data_dir
        self._task_group = task_group
        self._stack = stack
        self._roots: dict[Path, McpServers] = {}

    async def start(
        self, registry: ToolRegistry, *, root: Path, taken: Sequence[str], trusted: bool
    ) -> tuple[McpServers | None, tuple[str, ...]]:
        """Connect the servers of ``root`` (the first time) and register their tools in ``registry``.

        Args:
            registry: the Location's registry (the Location placement).
            root: the Location's real project root.
            taken: the names already registered there (the built-ins), which a server's tool never takes.
            trusted: whether the user trusts the project (then it is the stdio servers' working directory).

        Returns:
            The root's servers (``None`` when none is configured), and the notices of this start, one line each
            (a sandboxed server left out); a later Location of the same root gets none.
        """
        notices: list[str] = []
        servers = self._roots.get(root)
        if servers is None:
            specs = specs_from_config(self._config)
            if not specs:
                return None, ()
            workdir = None if trusted else await anyio.to_thread.run_sync(self._workdir)
            if any(spec.sandbox for spec in specs):
                specs = await anyio.to_thread.run_sync(self._sandboxed, specs, root, workdir, notices)
            servers = McpServers(specs, root, taken=taken, workdir=workdir)
            self._roots[root] = servers
            self._stack.push_async_callback(servers.aclose)
        await servers.start(self._task_group)
        self._stack.callback(servers.attach(registry).close)
        return servers, tuple(notices)

    def _sandboxed(
        self, specs: Sequence[ServerSpec], root: Path, workdir: Path | None, notices: list[str]
    ) -> list[ServerSpec]:
        """The stdio servers marked ``"sandbox": true`` wrapped in the sandbox; without bubblewrap they start
        unconfined, or are left out (a line in ``notices``) when ``sandbox.required`` is set. Blocking."""
        out: list[ServerSpec] = []
        for spec in specs:
            if not spec.sandbox or spec.transport != "stdio" or not spec.command:
                out.append(spec)
                continue
            cwd = workdir if workdir is not None and not spec.run_in_project else root
            launch = self._sandbox.wrap_server(spec.name, list(spec.command), str(root), str(cwd))
            if launch is None:
                if self._sandbox.settings.required:
                    notices.append(
                        f"MCP server {spec.name}: not started, the sandbox is required and only bubblewrap holds "
                        "MCP servers (tether doctor)"
                    )
                    continue
                out.append(spec)
                continue
            out.append(dataclasses.replace(spec, command=tuple(launch.argv), env={**spec.env, **launch.env}))
        return out

    def _workdir(self) -> Path:
        """``<data>/mcp-cwd``: the empty private directory stdio MCP servers of untrusted projects start in."""
        workdir = self._data_dir / "mcp-cwd"
        workdir.mkdir(mode=0o700, exist_ok=True)
        os.chmod(workdir, 0o700)
        return workdir
