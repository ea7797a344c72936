"""The built-in model behind ``tether tool call``: one scripted tool call, then a silent stop.

Settling the call through a real turn (rather than calling ``settle`` directly) records it like any model's call:
the session has its user input, the assistant message holding the tool part with its input, permission decisions,
output or error, timings and output paths, so ``tether session show`` shows it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ..llm import (
    Event,
    Model,
    ModelRequest,
    StepFinish,
    StepStart,
    ToolCallEvent,
    ToolInputEnd,
    ToolInputStart,
    ToolMessage,
)

__all__ = ["OneCallModel"]


class OneCallModel(Model):
    """Step 1 calls ``name`` with ``tool_input``; any later step (the call's result is in the history) stops.

    It never writes text, so the turn's only output is the tool part.
    """

    provider = "tether"
    model_id = "tool-call"

    def __init__(self, name: str, tool_input: Any, call_id: str) -> None:
        self.tool = name
        self.tool_input = tool_input
        self.call_id = call_id

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        yield StepStart()
        if request.messages and isinstance(request.messages[-1], ToolMessage):
            yield StepFinish(reason="stop")
            return
        yield ToolInputStart(id=self.call_id, name=self.tool)
        yield ToolInputEnd(id=self.call_id, name=self.tool)
        yield ToolCallEvent(id=self.call_id, name=self.tool, input=self.tool_input)
        yield StepFinish(reason="tool-calls")
