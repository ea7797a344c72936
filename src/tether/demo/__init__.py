"""The offline demo: a small buggy sample project and a replay model that fixes it through the real runtime.

``tether demo`` copies :func:`sample_project` to a temporary directory and runs a real session on it with
:class:`ReplayModel`. :class:`ScriptModel` plays JSON scripts (the ``--model scripted:<path>`` test hook).
"""

from ._project import SAMPLE_CONFIG, copy_sample_project, sample_project
from ._replay import DEMO_PROMPT, ReplayModel
from ._script import ScriptModel

__all__ = [
    "DEMO_PROMPT",
    "SAMPLE_CONFIG",
    "ReplayModel",
    "ScriptModel",
    "copy_sample_project",
    "sample_project",
]
