"""Default locations on disk (overridable everywhere: ``Runtime(data_dir=...)``, ``TETHER_DATA_DIR``)."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_config_dir, user_data_dir

__all__ = ["default_config_dir", "default_data_dir"]


def default_data_dir() -> Path:
    """``$TETHER_DATA_DIR`` or the platform's user data directory for tether."""
    env = os.environ.get("TETHER_DATA_DIR")
    return Path(env) if env else Path(user_data_dir("tether"))


def default_config_dir() -> Path:
    """``$TETHER_CONFIG_DIR`` or the platform's user config directory for tether."""
    env = os.environ.get("TETHER_CONFIG_DIR")
    return Path(env) if env else Path(user_config_dir("tether"))
