"""Code Mode: the ``execute`` tool, model-written Python run in pydantic-monty that calls the step's tools.

See ``docs/codemode.md``. Enabled per agent (``"codemode": true`` in ``agent.<name>``); the runtime then installs
:class:`CodeMode` as the turn's catalog transform. Nothing here is imported by a runtime without it.
"""

from ._catalog import CodeMode, CodeModeStep
from ._execute import ExecuteInput, ExecuteOutput
from ._settings import CodeModeSettings

__all__ = ["CodeMode", "CodeModeSettings", "CodeModeStep", "ExecuteInput", "ExecuteOutput"]
