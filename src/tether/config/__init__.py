"""Configuration: loading ``tether.json`` (user file, then project ``.tether/tether.json``), merged, project wins.

This package parses the keys it owns (``permission``, the legacy ``tools``, ``agent.<name>``) into typed values and
keeps the raw merged object in :attr:`Config.data` for everything else. It turns config into rules; it does not decide
anything (``tether.permissions`` does).
"""

from ._load import (
    CONFIG_FILE,
    PERMISSION_ENV,
    PROJECT_CONFIG,
    AgentConfig,
    AgentMode,
    Config,
    load_config,
    parse_config,
    parse_permission,
    user_config_path,
)

__all__ = [
    "CONFIG_FILE",
    "PERMISSION_ENV",
    "PROJECT_CONFIG",
    "AgentConfig",
    "AgentMode",
    "Config",
    "load_config",
    "parse_config",
    "parse_permission",
    "user_config_path",
]
