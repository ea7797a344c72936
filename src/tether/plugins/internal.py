"""What tether's own packages (the runtime, the CLI) use from ``tether.plugins`` beyond its user surface."""

from ._activate import Activation, Plugins, activate
from ._sources import GROUP, TOOLS_DIR, LoadedPlugin, Problem, load_entry_points, project_tool_files

__all__ = [
    "GROUP",
    "TOOLS_DIR",
    "Activation",
    "LoadedPlugin",
    "Plugins",
    "Problem",
    "activate",
    "load_entry_points",
    "project_tool_files",
]
