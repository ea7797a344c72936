"""Summaries of event streams for assertions, and the invariants every adapter stream must keep."""

from __future__ import annotations

from typing import Any

from tether.llm import (
    Event,
    ProviderErrorEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallEvent,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
)


def summarize(events: list[Event]) -> dict[str, Any]:
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    calls = [
        {
            "id": e.id,
            "name": e.name,
            "input": e.input,
            "invalid": e.invalid is not None,
            "incomplete": e.incomplete,
        }
        for e in events
        if isinstance(e, ToolCallEvent)
    ]
    finish = next((e for e in events if isinstance(e, StepFinish)), None)
    error = next((e for e in events if isinstance(e, ProviderErrorEvent)), None)
    usage = None
    if finish is not None and finish.usage is not None:
        u = finish.usage
        usage = [
            u.input_tokens,
            u.output_tokens,
            u.reasoning_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
        ]
    return {
        "text": text,
        "reasoning": reasoning,
        "calls": calls,
        "finish": None if finish is None else finish.reason,
        "usage": usage,
        "error": None if error is None else type(error.error).__name__,
    }


def check_invariants(events: list[Event]) -> None:
    """Law 8's contract: StepStart first, one terminal event last, blocks opened before use and closed once."""
    assert isinstance(events[0], StepStart)
    assert isinstance(events[-1], StepFinish | ProviderErrorEvent)
    assert sum(isinstance(e, StepFinish | ProviderErrorEvent) for e in events) == 1
    open_text: set[str] = set()
    open_reasoning: set[str] = set()
    inputs: dict[str, str] = {}
    ended: set[str] = set()
    called: set[str] = set()
    for e in events:
        if isinstance(e, TextStart):
            assert e.id not in open_text
            open_text.add(e.id)
        elif isinstance(e, TextDelta):
            assert e.id in open_text
        elif isinstance(e, TextEnd):
            open_text.remove(e.id)
        elif isinstance(e, ReasoningStart):
            open_reasoning.add(e.id)
        elif isinstance(e, ReasoningDelta):
            assert e.id in open_reasoning
        elif isinstance(e, ReasoningEnd):
            open_reasoning.remove(e.id)
        elif isinstance(e, ToolInputStart):
            assert e.id not in inputs, "call ids are unique within a step"
            inputs[e.id] = e.name
        elif isinstance(e, ToolInputDelta):
            assert inputs[e.id] == e.name and e.id not in ended
        elif isinstance(e, ToolInputEnd):
            assert inputs[e.id] == e.name
            ended.add(e.id)
        elif isinstance(e, ToolCallEvent):
            assert e.id in ended and e.id not in called
            called.add(e.id)
    if isinstance(events[-1], StepFinish):
        assert not open_text and not open_reasoning
        assert called == ended
