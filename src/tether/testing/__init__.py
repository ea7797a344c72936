"""Test doubles shipped with tether: scripted and function models, and an in-memory session store.

``ScriptedModel([...])`` plays one scripted step per request and fails loudly on an unexpected or leftover step;
``FunctionModel(fn)`` computes each step from the request. Steps are written with :class:`Step` and the helpers
:func:`tool_call`, :func:`invalid_call`, :func:`incomplete_call` (a ``str`` item is a text block, an exception item is
raised mid-stream).
"""

from ._memory import MemoryStore
from ._models import FunctionModel, ScriptedModel, ScriptError
from ._script import Reasoning, Step, StepItem, incomplete_call, invalid_call, tool_call

__all__ = [
    "FunctionModel",
    "MemoryStore",
    "Reasoning",
    "ScriptError",
    "ScriptedModel",
    "Step",
    "StepItem",
    "incomplete_call",
    "invalid_call",
    "tool_call",
]
