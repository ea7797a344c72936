"""The ``task`` tool: run a subagent in a child session and return its final text (OpenCode's ``task``).

Order: ask ``task`` with the subagent's name as the resource (save ``["*"]``, as OpenCode) → the runtime's
:class:`~tether.session._children.Children` creates (or, with ``task_id``, resumes) the child session and runs one
turn of the subagent in it, inside this call: cancelling the parent cancels the child. The child's calls are recorded
in its own session (``session show`` nests them under this call); this call's metadata names the child
(``session_id``) at once, through ``ctx.progress`` while it runs and in the final metadata.

The content is OpenCode's block, so a model trained on it reads it as it expects::

    <task id="ses_…" state="completed">
    <task_result>
    …the subagent's final text…
    </task_result>
    </task>

followed by one line naming the ``task_id`` to resume with. The typed output (:class:`TaskOutput`) carries the same.
The description lists the subagents the calling agent may run (its ``task`` rules decide, last matching rule wins;
listing is visibility only: the call asks again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ToolFailure
from ..permissions import PermissionRequest, PermissionService
from ..session.internal import ChildRequest, ChildResult, Subagent
from ..tools import Tool, ToolContext, ToolResponse
from ._deps import BuiltinDeps, RunChild
from ._schemas import committed_codec
from ._task_text import DESCRIPTION, describe

__all__ = ["DESCRIPTION", "RunChild", "TaskInput", "TaskOutput", "build", "describe", "executor", "make"]


class TaskInput(BaseModel):
    """Input of the task tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    description: str = Field(
        min_length=1, max_length=200, description="A short (3-5 words) description of the task"
    )
    prompt: str = Field(min_length=1, description="The task for the subagent to perform")
    subagent_type: str = Field(min_length=1, max_length=200, description="The type of subagent to use")
    task_id: str | None = Field(
        default=None,
        max_length=200,
        description="Set only to resume an earlier task: the task_id its result named (continues that session)",
    )


class TaskOutput(BaseModel):
    """What the subagent did: its session (``task_id``), agent, model, why it stopped and its final text."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    task_id: str
    agent: str
    model: str
    stop: str
    text: str


_STOPS = {
    "done": None,
    "max_steps": "The subagent reached its step limit before finishing; its last text is below.",
    "declined": "The user rejected a permission request of the subagent, so it stopped; its last text is below.",
    "cancelled": "The subagent's turn was cancelled.",
}


def task_content(result: ChildResult) -> str:
    """OpenCode's ``<task>`` block and the line that names the ``task_id``."""
    note = _STOPS.get(result.stop)
    state = "completed" if result.stop == "done" else "error"
    tag = "task_result" if state == "completed" else "task_error"
    body = result.text if note is None else f"{note}\n{result.text}".rstrip("\n")
    return (
        f'<task id="{result.session_id}" state="{state}">\n<{tag}>\n{body}\n</{tag}>\n</task>\n'
        f"task_id: {result.session_id} (pass it as task_id to continue this task with the same subagent)"
    )


def make(deps: BuiltinDeps) -> Tool[TaskInput, TaskOutput] | None:
    """Build the task tool listing ``deps.subagents`` (permission action ``task``); ``None`` without
    ``deps.children``."""
    if deps.children is None:
        return None
    return build(deps.permissions, deps.children, deps.subagents)


def build(
    permissions: PermissionService, run: RunChild, subagents: Sequence[Subagent]
) -> Tool[TaskInput, TaskOutput]:
    """Build the task tool: ``run`` runs the child turn, ``subagents`` are listed in the description (a session
    whose agent is not the default one gets its own, listing what its agent may run). A Location registers the same
    tool through ``_deferred.deferred_task``, this module loaded at its first call."""
    # No deadline: a subagent's turn takes as long as its work (each of its own calls has its tool's deadline).
    return Tool(
        description=describe(subagents),
        input=committed_codec(TaskInput),
        output=committed_codec(TaskOutput),
        execute=executor(permissions, run),
        timeout=None,
        permission="task",
    )


def executor(permissions: PermissionService, run: RunChild) -> Callable[[TaskInput, ToolContext], Any]:
    """The task tool's ``execute``: asks ``task`` for the subagent, then ``run`` runs the child turn."""

    async def execute(input: TaskInput, ctx: ToolContext) -> ToolResponse[TaskOutput]:
        name = input.subagent_type.strip()
        await permissions.assert_(
            PermissionRequest.from_context(
                ctx,
                action="task",
                resources=[name],
                save=["*"],
                metadata={"description": input.description, "subagent_type": name},
            )
        )
        task_id = input.task_id.strip() if input.task_id else None
        request = ChildRequest(
            parent_session=ctx.session_id,
            parent_call=ctx.call_id,
            agent=name,
            prompt=input.prompt,
            description=input.description.strip(),
            task_id=task_id,
            started=ctx.progress,
        )
        result = await run(request)
        metadata = {
            "session_id": result.session_id,
            "agent": result.agent,
            "model": result.model,
            "stop": result.stop,
            "steps": result.steps,
            "tool_calls": result.tool_calls,
        }
        if result.stop == "cancelled":  # the child alone was cancelled (from outside): the model reads why
            raise ToolFailure(task_content(result))
        return ToolResponse(
            output=TaskOutput(
                task_id=result.session_id,
                agent=result.agent,
                model=result.model,
                stop=result.stop,
                text=result.text,
            ),
            content=task_content(result),
            metadata=metadata,
            title=input.description.strip(),
        )

    return execute
