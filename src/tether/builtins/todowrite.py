"""The ``todowrite`` tool: replace the session's todo list (OpenCode's ``todowrite``), and the list's model text.

The list is the session's, stored in the store's ``todos`` table (``tether.session``'s ``TodoStore``) and read back by
its key, never by replaying the session (law 10). A changed list is published as ``TodoUpdated`` on the bus (the
``--format json`` stream shows it as a ``todo`` event).

Differences from OpenCode, on purpose: ``status`` and ``priority`` are closed sets the input schema enforces
(OpenCode describes them but stores any string; a UI renders a closed set, and the model gets a precise error);
the list and each item's text are capped (:data:`MAX_TODOS`, :data:`MAX_CONTENT`: a list is a plan, not a document);
``priority`` defaults to ``medium``; ``id`` is optional and kept stable: an item sent without one takes the id of the
previous list's item with the same text, else the smallest free number. "One task in progress at a time" is advice
in the description, not enforced (OpenCode does not enforce it either; parallel subtasks are legitimate).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ToolFailure
from ..permissions import PermissionRequest
from ..storable import visible
from ..store.internal import Todo, TodoPriority, TodoStatus, TodoStore, TodoUpdated
from ..tools import Tool, ToolContext, ToolResponse
from ._deps import BuiltinDeps
from ._schemas import committed_codec

if TYPE_CHECKING:
    from ..permissions import PermissionService

__all__ = [
    "MAX_CONTENT",
    "MAX_ID",
    "MAX_TODOS",
    "TodoItem",
    "TodoWriteInput",
    "ask_todo",
    "make",
    "todo_store",
    "todos_json",
]

MAX_TODOS = 200
"""The most items one list holds."""
MAX_CONTENT = 4000
"""The most characters of one item's text."""
MAX_ID = 64
"""The most characters of one item's id."""

DESCRIPTION = f"""Create or update the todo list of this session: a structured plan you keep current while you work.

The call replaces the whole list: send every item each time, in order (at most {MAX_TODOS} items).

Use it for work of three or more distinct steps, when the user gives several tasks, or asks for a todo list:
- Write the plan as soon as you know the steps; add follow-up items as you discover them.
- Mark an item `in_progress` before you start on it; keep one item in progress at a time.
- Mark an item `completed` as soon as it is done (not in batches); `cancelled` when it is no longer needed.
Skip it for a single trivial task or a purely conversational request.

Each item: `content` (what to do, imperative, at most {MAX_CONTENT} characters), `status` (pending, in_progress,
completed, cancelled), `priority` (high, medium, low; default medium), optional `id` (kept when omitted for an item
whose text is unchanged). Returns the stored list."""


class TodoItem(BaseModel):
    """One item of the list, as the model sends it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built at the first call (_schemas)

    content: str = Field(min_length=1, max_length=MAX_CONTENT, description="What to do, in a short sentence")
    status: TodoStatus = Field(description="pending, in_progress, completed or cancelled")
    priority: TodoPriority = Field(default="medium", description="high, medium or low")
    id: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ID,
        description="A unique id (optional: kept for unchanged items)",
    )


class TodoWriteInput(BaseModel):
    """Input of the todowrite tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    todos: list[TodoItem] = Field(max_length=MAX_TODOS, description="The complete, updated todo list")


def todos_json(todos: Sequence[Todo]) -> str:
    """The list as the model reads it: pretty JSON (two-space indentation), as OpenCode returns it."""
    return json.dumps(
        [{"content": t.content, "status": t.status, "priority": t.priority, "id": t.id} for t in todos],
        indent=2,
        ensure_ascii=False,
    )


def _with_ids(items: Sequence[TodoItem], previous: Sequence[Todo]) -> tuple[Todo, ...]:
    """The stored items: given ids kept, missing ones taken from the previous list by text, else numbered.

    Raises:
        ToolFailure: two items carry the same id.
    """
    given: set[str] = set()
    for item in items:
        if item.id is None:
            continue
        item_id = visible(item.id.strip())
        if not item_id:
            raise ToolFailure("A todo id must not be blank: give a short id such as '3', or omit it.")
        if item_id in given:
            raise ToolFailure(
                f"Todo ids must be unique: {item_id!r} appears more than once. Give each item its own id, or omit "
                "the ids and they are assigned."
            )
        given.add(item_id)
    by_text: dict[str, list[str]] = {}
    for old in previous:
        if old.id not in given:
            by_text.setdefault(old.content, []).append(old.id)
    used = set(given)
    number = 0
    out: list[Todo] = []
    for item in items:
        content = visible(item.content)
        if item.id is not None:
            item_id = visible(item.id.strip())
        else:
            reusable = [i for i in by_text.get(content, ()) if i not in used]
            if reusable:
                item_id = reusable[0]
            else:
                number += 1
                while str(number) in used:
                    number += 1
                item_id = str(number)
        used.add(item_id)
        out.append(Todo(id=item_id, content=content, status=item.status, priority=item.priority))
    return tuple(out)


async def ask_todo(permissions: PermissionService, ctx: ToolContext, action: str) -> None:
    """Ask ``action`` (``todowrite`` / ``todoread``) for the session's list: resource and save ``*``, as OpenCode."""
    await permissions.assert_(
        PermissionRequest.from_context(ctx, action=action, resources=("*",), save=("*",))
    )


def todo_store(deps: BuiltinDeps, tool: str) -> TodoStore:
    """The todo store ``tool`` captures.

    Raises:
        ValueError: ``deps.todos`` is not set.
    """
    if deps.todos is None:
        raise ValueError(f"the {tool} tool needs a todo store (BuiltinDeps.todos)")
    return deps.todos


def make(deps: BuiltinDeps) -> Tool[TodoWriteInput, Any]:
    """Build the todowrite tool bound to ``deps`` (its ``todos`` store must be set).

    Raises:
        ValueError: ``deps.todos`` is not set.
    """
    return Tool(description=DESCRIPTION, input=committed_codec(TodoWriteInput), execute=executor(deps))


def executor(deps: BuiltinDeps) -> Callable[[TodoWriteInput, ToolContext], Awaitable[ToolResponse[Any]]]:
    """What a call of the todowrite tool runs, bound to ``deps`` (a Location loads this module at the tool's first
    call: ``builtins/_deferred.py``)."""
    store = todo_store(deps, "todowrite")
    permissions = deps.permissions
    bus = deps.bus
    # read (for the ids), write and publish as one step: parallel calls replace the list one after the other, and
    # the bus hears the lists in the order they were stored
    writing = anyio.Lock()

    async def execute(input: TodoWriteInput, ctx: ToolContext) -> ToolResponse[Any]:
        await ask_todo(permissions, ctx, "todowrite")
        async with writing:
            previous = await store.load_todos(ctx.session_id)
            todos = _with_ids(input.todos, previous)
            changed = todos != previous
            if changed:
                await store.save_todos(ctx.session_id, todos)
                if bus is not None:
                    bus.publish(TodoUpdated(session_id=ctx.session_id, todos=todos))
        open_count = sum(1 for t in todos if t.status != "completed")
        return ToolResponse(
            content=todos_json(todos),
            title=f"{open_count} todos",
            metadata={"count": len(todos), "open": open_count, "changed": changed},
        )

    return execute
