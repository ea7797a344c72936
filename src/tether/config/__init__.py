"""Configuration: loading ``tether.json`` (user file, then the project's), merged, project wins.

The project is found by walking up from the working directory (:func:`find_project`); files are JSONC and checked
whole against the pydantic models of :class:`TetherConfig` (unknown keys are errors). This package parses the keys it owns (``permission``, the legacy ``tools``, ``agent.<name>``) into typed values and
keeps the raw merged object in :attr:`Config.data` for everything else. It turns config into rules; it does not decide
anything (``tether.permissions`` does). A project's file is untrusted until the user trusts the project
(:class:`TrustStore`): until then it may only tighten, and what it may not set is reported in :attr:`Config.ignored`.
It also finds the instruction files (``AGENTS.md``, ``instructions``) and resolves them through the project's Location.
"""

from typing import TYPE_CHECKING, Any

from ._discover import PROJECT_FILES, find_project
from ._instructions import AGENTS_FILE, CLAUDE_FILE, Instructions, load_instructions
from ._load import (
    CONFIG_FILE,
    PERMISSION_ENV,
    PROJECT_CONFIG,
    AgentConfig,
    AgentMode,
    Config,
    Instruction,
    load_config,
    parse_config,
    parse_permission,
    user_config_path,
)
from ._permission import (
    BUILTIN_ACTIONS,
    RESERVED_ACTIONS,
    TOOL_ACTIONS,
    misspelled_permission,
    permission_action,
)
from ._restrict import Ignored
from ._schema import config_schema
from ._trust import TRUST_FILE, TrustStore, project_root

if TYPE_CHECKING:
    from ._models import TetherConfig

__all__ = [
    "AGENTS_FILE",
    "BUILTIN_ACTIONS",
    "CLAUDE_FILE",
    "CONFIG_FILE",
    "PERMISSION_ENV",
    "PROJECT_CONFIG",
    "PROJECT_FILES",
    "RESERVED_ACTIONS",
    "TOOL_ACTIONS",
    "TRUST_FILE",
    "AgentConfig",
    "AgentMode",
    "Config",
    "Ignored",
    "Instruction",
    "Instructions",
    "TetherConfig",
    "TrustStore",
    "config_schema",
    "find_project",
    "load_config",
    "load_instructions",
    "misspelled_permission",
    "parse_config",
    "parse_permission",
    "permission_action",
    "project_root",
    "user_config_path",
]


def __getattr__(name: str) -> Any:
    # The models load when first named (or a file is checked): a run with no config file never builds them (issue 38)
    if name == "TetherConfig":
        from ._models import TetherConfig

        return TetherConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
