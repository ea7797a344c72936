"""Before/after hooks around settle: scoped registrations run in registration order.

A before hook sees a mutable :class:`BeforeEvent` and may replace ``input``. An after hook sees a mutable
:class:`AfterEvent` and may replace ``outcome`` (settle then re-normalizes and bounds it again). Hooks may be plain or
async callables; their return value is ignored. A definition hook (OpenCode's ``tool.definition``) sees a mutable
:class:`DefinitionEvent` while a step's catalog is built and may change what the model is told; it is a plain
(synchronous) callable, because materialize is.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from .._record import record
from ._outcome import Outcome

__all__ = [
    "AfterEvent",
    "AfterHook",
    "BeforeEvent",
    "BeforeHook",
    "DefinitionEvent",
    "DefinitionHook",
    "run_hooks",
]


@record(frozen=False)
class BeforeEvent:
    tool: str
    session_id: str
    agent: str
    message_id: str
    call_id: str
    input: Any


@record(frozen=False)
class AfterEvent:
    tool: str
    session_id: str
    agent: str
    message_id: str
    call_id: str
    input: Any
    outcome: Outcome


@record(frozen=False)
class DefinitionEvent:
    """What the model is told about one tool of a step's catalog; a definition hook may replace ``description`` and
    ``input_schema`` (a copy: changing it in place changes nothing else). The call's input is still checked by the
    tool's own input codec, so a changed schema should only describe the same input differently."""

    tool: str
    description: str
    input_schema: dict[str, Any]


BeforeHook = Callable[[BeforeEvent], Awaitable[None] | None]
AfterHook = Callable[[AfterEvent], Awaitable[None] | None]
DefinitionHook = Callable[[DefinitionEvent], None]


async def run_hooks(hooks: tuple[Callable[[Any], Any], ...], event: Any) -> None:
    """Call each hook in order on the same mutable event, awaiting async ones."""
    for hook in hooks:
        result = hook(event)
        if inspect.isawaitable(result):
            await result
