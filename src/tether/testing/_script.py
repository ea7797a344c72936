"""Scripted steps: what a test double model emits for one step, written compactly.

A step is a sequence of items: a ``str`` is a text block, :func:`tool_call` a complete call, :func:`invalid_call`
a call whose arguments are not JSON, :func:`incomplete_call` a call cut off by max tokens, an exception is raised
at that point of the stream, and any :mod:`tether.llm` event passes through unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import field
from typing import Any

from .._record import record
from ..llm import (
    Event,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallEvent,
    ToolInputStart,
    Usage,
)

__all__ = ["Reasoning", "Step", "StepItem", "incomplete_call", "invalid_call", "tool_call"]

_ids = itertools.count(1)


@record(kw_only=False)
class Reasoning:
    """A reasoning block."""

    text: str


StepItem = str | Reasoning | ToolCallEvent | BaseException | Event


@record(kw_only=False)
class Step:
    """One scripted step: its items in stream order, the finish reason (default: ``tool-calls`` when it calls a tool,
    else ``stop``) and usage."""

    items: tuple[StepItem, ...]
    finish: str | None = None
    usage: Usage | None = field(default=None)

    def __init__(self, *items: StepItem, finish: str | None = None, usage: Usage | None = None) -> None:
        object.__setattr__(self, "items", items)
        object.__setattr__(self, "finish", finish)
        object.__setattr__(self, "usage", usage)

    @classmethod
    def of(cls, value: Step | StepItem | Sequence[StepItem]) -> Step:
        """Accept a :class:`Step`, one item, or a list of items."""
        if isinstance(value, Step):
            return value
        if isinstance(value, str | Reasoning | ToolCallEvent | BaseException):
            return cls(value)
        if isinstance(value, Sequence):
            return cls(*value)
        return cls(value)

    def events(self) -> Iterator[Event | BaseException]:
        """The stream of this step (an exception item is yielded for the model to raise)."""
        yield StepStart()
        calls = False
        for n, item in enumerate(self.items):
            if isinstance(item, str):
                block = f"text-{n}"
                yield TextStart(id=block)
                yield TextDelta(id=block, text=item)
                yield TextEnd(id=block)
            elif isinstance(item, Reasoning):
                block = f"reasoning-{n}"
                yield ReasoningStart(id=block)
                yield ReasoningDelta(id=block, text=item.text)
                yield ReasoningEnd(id=block)
            elif isinstance(item, ToolCallEvent):
                calls = True
                yield ToolInputStart(id=item.id, name=item.name)
                yield item
            else:
                yield item
        finish: Any = self.finish or ("tool-calls" if calls else "stop")
        yield StepFinish(reason=finish, usage=self.usage)


def tool_call(name: str, input: Any = None, *, id: str | None = None) -> ToolCallEvent:
    """A complete call of ``name`` with ``input`` (default ``{}``)."""
    return ToolCallEvent(id=id or f"call_{next(_ids)}", name=name, input={} if input is None else input)


def invalid_call(name: str, raw: str, *, id: str | None = None) -> ToolCallEvent:
    """A call whose argument text is not valid JSON (the model sees the invalid-input message)."""
    return ToolCallEvent(id=id or f"call_{next(_ids)}", name=name, input=raw, invalid="not valid JSON")


def incomplete_call(name: str, raw: str = '{"', *, id: str | None = None) -> ToolCallEvent:
    """A call cut off by max tokens before its arguments were complete (never executed)."""
    return ToolCallEvent(id=id or f"call_{next(_ids)}", name=name, input=raw, incomplete=True)
