"""What the model is told: the system texts of a request.

A request's system texts are, in order (:func:`system_prompt`):

1. the **base text**: the agent's configured ``prompt`` if it has one, else tether's built-in text for the agent
   (``plan``, ``explore``, else the coding text followed by a note for the model's family);
2. the **environment block** (:func:`render_environment`): project root, working directory, platform, date, git
   branch and status, model id;
3. the **instruction texts** (``AGENTS.md`` files, the config's ``instructions``, then each connected MCP server's
   ``instructions`` as :func:`server_instructions` words them), given by the caller.

This package reads no config and imports nothing above it; ``tether.session`` builds the default of a turn with
it, and ``tether run --show-prompt`` prints the same texts.
"""

from ._compose import compose, format_system, server_instructions, system_prompt
from ._environment import (
    GIT_TIMEOUT,
    Environment,
    GitState,
    git_state,
    measure_environment,
    parse_status,
    render_environment,
)
from ._texts import ModelFamily, base_prompt, model_family

__all__ = [
    "GIT_TIMEOUT",
    "Environment",
    "GitState",
    "ModelFamily",
    "base_prompt",
    "compose",
    "format_system",
    "git_state",
    "measure_environment",
    "model_family",
    "parse_status",
    "render_environment",
    "server_instructions",
    "system_prompt",
]
