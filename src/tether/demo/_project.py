"""The sample project shipped as package data (``project/``), and copying it somewhere writable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

__all__ = ["SAMPLE_CONFIG", "copy_sample_project", "sample_project"]

SAMPLE_CONFIG: dict[str, Any] = {
    "permission": {
        "edit": "ask",
        "bash": {
            "python3 -m unittest": "allow",
            "python -m unittest": "allow",
            "python3 report.py": "allow",
            "python report.py": "allow",
        },
    }
}
"""The demo project's ``.tether/tether.json``: edits ask, so the recording shows an approval at the point of action.

The recording's two commands (the test suite and the report) are allowed by their exact text: the built-in agents
ask for every command that is not read-only, and the demo should ask only for its edit."""


def sample_project() -> Path:
    """The directory of the sample project inside the installed package (read-only by convention)."""
    return Path(__file__).parent / "project"


def copy_sample_project(dest: Path) -> Path:
    """Copy the sample project into ``dest`` (created) with the demo's ``.tether/tether.json``; return ``dest``."""
    shutil.copytree(
        sample_project(), dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), dirs_exist_ok=True
    )
    config = dest / ".tether" / "tether.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps(SAMPLE_CONFIG, indent=2) + "\n", encoding="utf-8")
    return dest
