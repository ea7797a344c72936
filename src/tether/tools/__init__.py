"""The tool contract, scoped registries, materialize/settle and hooks.

The names here are the user surface, what README.md and docs/ show: ``@tool`` and :class:`Tool`, the context a tool
receives, what it returns or raises, content parts, the registry and the outcomes of settling a call, and the hook
events. What tether's own packages share beyond that (codecs, the pipeline's texts, the permission record) is in
:mod:`tether.tools.internal`. This package never imports ``tether.permissions``: the registry does not authorize
(law 4).
"""

from ..content import Content, File, Text
from ..errors import ToolFailure
from ._decorator import tool
from ._hooks import AfterEvent, BeforeEvent
from ._outcome import Completed, Failed, Outcome
from ._registry import Registration, ToolRegistry
from ._tool import Tool, ToolCall, ToolContext, ToolDefinition, ToolResponse

__all__ = [
    "AfterEvent",
    "BeforeEvent",
    "Completed",
    "Content",
    "Failed",
    "File",
    "Outcome",
    "Registration",
    "Text",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinition",
    "ToolFailure",
    "ToolRegistry",
    "ToolResponse",
    "tool",
]
