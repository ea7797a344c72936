"""Configuration: loading ``tether.json`` (user file, then project ``.tether/tether.json``), merged, project wins.

This package parses the keys it owns (``permission``, the legacy ``tools``, ``agent.<name>``) into typed values and
keeps the raw merged object in :attr:`Config.data` for everything else. It turns config into rules; it does not decide
anything (``tether.permissions`` does). A project's file is untrusted until the user trusts the project
(:class:`TrustStore`): until then it may only tighten, and what it may not set is reported in :attr:`Config.ignored`.
It also finds the instruction files (``AGENTS.md``, ``instructions``) and resolves them through the project's Location.
"""

from ._instructions import AGENTS_FILE, Instructions, load_instructions
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
from ._restrict import Ignored
from ._trust import TRUST_FILE, TrustStore, project_root

__all__ = [
    "AGENTS_FILE",
    "CONFIG_FILE",
    "PERMISSION_ENV",
    "PROJECT_CONFIG",
    "TRUST_FILE",
    "AgentConfig",
    "AgentMode",
    "Config",
    "Ignored",
    "Instruction",
    "Instructions",
    "TrustStore",
    "load_config",
    "load_instructions",
    "parse_config",
    "parse_permission",
    "project_root",
    "user_config_path",
]
