"""The ``todoread`` tool: the session's todo list as ``todowrite`` stored it (one key range of the store, law 10)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..tools import Tool, ToolContext, ToolResponse
from ._deps import BuiltinDeps
from ._schemas import committed_codec
from .todowrite import ask_todo, todo_store, todos_json

__all__ = ["TodoReadInput", "make"]

DESCRIPTION = """Read the todo list of this session (as the last `todowrite` call left it).

Use it when you are unsure of the current plan: at the start of a resumed session, or before choosing the next item.
Returns the items as JSON (content, status, priority, id), in order; `[]` when there is no list yet."""


class TodoReadInput(BaseModel):
    """The todoread tool takes no parameters."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built at the first call (_schemas)


def make(deps: BuiltinDeps) -> Tool[TodoReadInput, Any]:
    """Build the todoread tool bound to ``deps`` (its ``todos`` store must be set).

    Raises:
        ValueError: ``deps.todos`` is not set.
    """
    return Tool(description=DESCRIPTION, input=committed_codec(TodoReadInput), execute=executor(deps))


def executor(deps: BuiltinDeps) -> Callable[[TodoReadInput, ToolContext], Awaitable[ToolResponse[Any]]]:
    """What a call of the todoread tool runs, bound to ``deps`` (a Location loads this module at the tool's first
    call: ``builtins/_deferred.py``)."""
    store = todo_store(deps, "todoread")
    permissions = deps.permissions

    async def execute(input: TodoReadInput, ctx: ToolContext) -> ToolResponse[Any]:
        await ask_todo(permissions, ctx, "todoread")
        todos = await store.load_todos(ctx.session_id)
        open_count = sum(1 for t in todos if t.status != "completed")
        return ToolResponse(
            content=todos_json(todos),
            title=f"{len(todos)} todos",
            metadata={"count": len(todos), "open": open_count},
        )

    return execute
