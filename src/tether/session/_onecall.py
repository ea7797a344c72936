"""The built-in model of a turn that makes exactly one tool call: ``tether tool call`` and ``tether mcp serve``.

Settling a call through a real turn (rather than calling ``settle`` directly) records it like any model's call: the
session has its user input, the assistant message holding the tool part with its input, permission decisions,
output or error, timings and output paths, so ``tether session show`` shows it. The model's second step receives
the call's result exactly as a model reads it (bounded content, or the error text); the model keeps it as
:attr:`OneCallModel.result` for a caller that forwards it (an MCP client).
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
    ToolResultContent,
)

__all__ = ["OneCallModel"]


class OneCallModel(Model):
    """Step 1 calls ``name`` with ``tool_input``; any later step (the call's result is in the history) stops.

    It never writes text, so the turn's only output is the tool part. ``result`` is the result of the call as the
    model's next request carries it (``None`` until then, and when the turn ended before: cancelled, or the store
    failed).
    """

    provider = "tether"
    model_id = "tool-call"

    def __init__(self, name: str, tool_input: Any, call_id: str) -> None:
        self.tool = name
        self.tool_input = tool_input
        self.call_id = call_id
        self.result: ToolResultContent | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        yield StepStart()
        last = request.messages[-1] if request.messages else None
        if isinstance(last, ToolMessage):
            self.result = next((r for r in last.results if r.call_id == self.call_id), None)
            yield StepFinish(reason="stop")
            return
        yield ToolInputStart(id=self.call_id, name=self.tool)
        yield ToolInputEnd(id=self.call_id, name=self.tool)
        yield ToolCallEvent(id=self.call_id, name=self.tool, input=self.tool_input)
        yield StepFinish(reason="tool-calls")
