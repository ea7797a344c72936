"""What tether's own packages (the runtime, the CLI) use of ``tether.mcp``: the servers of a project root, their
statuses, and the specs read from the config. Import-light: nothing here loads the ``mcp`` SDK."""

from ._roots import McpRoots
from ._servers import McpServers, ServerStatus
from ._spec import ServerSpec, specs_from_config

__all__ = ["McpRoots", "McpServers", "ServerSpec", "ServerStatus", "specs_from_config"]
