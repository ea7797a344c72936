"""Where plugins and project tools come from: entry points and ``.tether/tools/*.py`` files. Blocking (imports).

- **Entry points** in the group ``tether.plugins`` (``importlib.metadata``): installed packages, so the user's own
  choice, loaded once per runtime. Each must be a callable plugin (:data:`~tether.plugins.Plugin`). The current
  directory is not searched, even when ``sys.path`` holds it (``python -m tether.cli`` puts it first): a cloned
  repository with a ``*.dist-info`` folder at its root must not run code because tether was started there.
- **Tool files**: each ``<name>.py`` of the user's ``<config dir>/tools`` and of the project's ``.tether/tools``
  (names starting with ``_`` or ``.`` are helpers, not tool files) is imported on its own, and every public
  module-level value that is a ``Tool`` is registered under its variable name (one rule: ``word_count = ...`` is the
  tool ``word_count``). Only a trusted project's files are imported (law 11); a file (or the folder) that is not the
  user's own, like a config file (``config._discover.foreign``), is refused, trusted or not.

A file or entry point that fails to import, is not a plugin or defines no tool is a :class:`Problem`: reported with
its path or entry point and the error, and skipped; it never stops the runtime.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import EntryPoint, distributions
from pathlib import Path
from types import ModuleType
from typing import Any

from .._record import record
from ..config.internal import foreign
from ..tools import Tool
from ._api import Plugin

__all__ = [
    "GROUP",
    "TOOLS_DIR",
    "LoadedPlugin",
    "Problem",
    "ToolFile",
    "load_entry_points",
    "load_project_tools",
    "load_user_tools",
    "project_tool_files",
    "tool_files",
]

GROUP = "tether.plugins"
"""The entry point group tether loads plugins from."""

TOOLS_DIR = Path(".tether") / "tools"
"""Where a project's tool files live, relative to its root."""


@record
class Problem:
    """A plugin or tool file that was skipped: ``source`` names it (entry point or path), ``message`` says why."""

    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


@record
class LoadedPlugin:
    """An entry point whose object loaded: ``name`` (the entry point's), ``value`` (``module:attr``), ``plugin``."""

    name: str
    value: str
    plugin: Plugin

    @property
    def origin(self) -> str:
        return f"plugin:{self.name}"


@record
class ToolFile:
    """The tools one tool file defines; ``origin`` is ``project:<path from the root>`` or ``user:<path>``."""

    origin: str
    tools: dict[str, Tool[Any, Any]]


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _search_path(exclude: Sequence[Path] = ()) -> list[str]:
    """``sys.path`` without relative entries (``""``, ``"."``, ``src`` from a relative ``PYTHONPATH``: they resolve
    against the current directory, a cloned repository's), the current directory itself, and entries at or inside
    ``exclude`` (an untrusted project's root): a ``.dist-info`` there is the repository's, not an installed plugin."""
    here = os.path.realpath(os.getcwd())
    roots = [os.path.realpath(root).rstrip(os.sep) + os.sep for root in exclude]
    kept: list[str] = []
    for entry in sys.path:
        if not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if real == here or any((real + os.sep).startswith(root) for root in roots):
            continue
        kept.append(entry)
    return kept


def _entry_points(exclude: Sequence[Path] = ()) -> list[EntryPoint]:
    """The group's entry points of the distributions on :func:`_search_path`; of two distributions with one name that both
    declare plugins, the first on the path (as ``importlib.metadata.entry_points`` does)."""
    seen: set[str] = set()
    points: list[EntryPoint] = []
    for dist in distributions(path=_search_path(exclude)):
        # most distributions declare no plugin: read their entry_points.txt only, not their METADATA (its parsing is
        # most of the cost of a scan, paid by every command)
        declared = dist.read_text("entry_points.txt")
        if not declared or f"[{GROUP}]" not in declared:
            continue
        name = re.sub(r"[-_.]+", "-", str(dist.metadata["Name"] or "")).lower()
        if name in seen:
            continue
        if name:
            seen.add(name)
        points.extend(dist.entry_points.select(group=GROUP))
    return points


def load_entry_points(exclude: Sequence[Path] = ()) -> list[LoadedPlugin | Problem]:
    """Load every ``tether.plugins`` entry point, in name order (then value, for equal names), of the distributions
    on the absolute ``sys.path`` entries outside the current directory and ``exclude`` (an untrusted project root)."""
    found: list[LoadedPlugin | Problem] = []
    points = sorted(_entry_points(exclude), key=lambda e: (e.name, e.value))
    for point in points:
        source = f"plugin {point.name} ({point.value})"
        try:
            plugin: object = point.load()
        except Exception as exc:  # a broken plugin is reported and skipped, never fatal
            found.append(Problem(source=source, message=f"failed to import: {_error(exc)}"))
            continue
        if not callable(plugin):
            found.append(
                Problem(source=source, message="is not a plugin: expected a callable taking a PluginAPI")
            )
            continue
        found.append(LoadedPlugin(name=point.name, value=point.value, plugin=plugin))  # pyright: ignore[reportArgumentType]
    return found


def tool_files(folder: Path) -> list[Path]:
    """The tool files of ``folder``, sorted by name (none when it does not exist)."""
    try:
        names = sorted(p.name for p in folder.iterdir())
    except OSError:
        return []
    return [folder / n for n in names if n.endswith(".py") and not n.startswith(("_", "."))]


def project_tool_files(root: Path) -> list[Path]:
    """The tool files of the project at ``root``."""
    return tool_files(root / TOOLS_DIR)


def load_project_tools(root: Path) -> list[ToolFile | Problem]:
    """Import the project's tool files (the caller decided the project is trusted) and collect their tools."""
    return _load_folder(root / TOOLS_DIR, kind="project", shown=lambda p: p.relative_to(root).as_posix())


def load_user_tools(folder: Path) -> list[ToolFile | Problem]:
    """Import the user's own tool files (``<config dir>/tools``, as OpenCode's global ``tool/`` folder)."""
    home = Path.home()

    def shown(path: Path) -> str:
        return f"~/{path.relative_to(home).as_posix()}" if path.is_relative_to(home) else path.as_posix()

    return _load_folder(folder, kind="user", shown=shown)


def _load_folder(folder: Path, *, kind: str, shown: Callable[[Path], str]) -> list[ToolFile | Problem]:
    found: list[ToolFile | Problem] = []
    files = tool_files(folder)
    if not files:
        return found
    folder_refused = foreign(folder)
    for path in files:
        label = shown(path)
        refused = folder_refused and f"its folder {shown(folder)}: {folder_refused}"
        refused = refused or foreign(path)
        if refused:
            found.append(Problem(source=label, message=f"not loaded: {refused}"))
            continue
        if not path.is_file():
            found.append(Problem(source=label, message="not loaded: not a regular file"))
            continue
        try:
            module = _import(folder, path)
        except Exception as exc:  # a broken tool file is reported and skipped, never fatal
            found.append(Problem(source=label, message=f"failed to import: {_error(exc)}"))
            continue
        tools = {
            name: value
            for name, value in vars(module).items()
            if not name.startswith("_") and isinstance(value, Tool)
        }
        if not tools:
            found.append(
                Problem(
                    source=label,
                    message="defines no tool (a module-level value made with @tool or Tool(...))",
                )
            )
            continue
        found.append(ToolFile(origin=f"{kind}:{label}", tools=tools))  # pyright: ignore[reportUnknownArgumentType]
    return found


def _import(folder: Path, path: Path) -> ModuleType:
    """Import one tool file as its own module (named after its folder and the file, so two projects never share
    one), registered in ``sys.modules`` while it runs (pydantic and dataclasses look their module up there).

    The source is compiled as read, never through the bytecode cache: nothing is written into the project
    (``__pycache__``), and a ``.pyc`` shipped next to the file (its timestamp made to match) cannot run instead of
    the source the user read before trusting the project.
    """
    digest = hashlib.sha256(str(folder).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    stem = re.sub(r"\W", "_", path.stem)
    name = f"_tether_project_tools_{digest}_{stem}"
    code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    module = ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
