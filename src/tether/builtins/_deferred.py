"""The built-ins a Location registers before their modules are loaded: each module loads at its tool's first call.

A Location registers a dozen built-in tools and a run that calls none of them used to import every tool's module
(its pydantic models, records and tables: ~6 % of the instructions of a scripted ``tether run``, issue 38). What a
registration shows before a call, its description, its input and output schemas, its timeout and its permission
action, is the committed output of building the tool with its module's ``make`` (``_schema_data.TOOLS``, written by
``scripts/builtin_schemas.py``; ``tests/builtins/test_schemas.py`` fails when a module and its committed definition
differ). The tool is a plain :class:`~tether.tools.Tool` (law 1): its input codec imports the module for the model
at the first decode, and its ``execute`` takes the module's ``executor(deps)`` at the first call, once.

What this does not change: the call runs exactly what ``make(deps)`` would have run (the same executor, bound to the
same ``deps``), through the same settle (decode, permission asks inside the tool, bounding).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..tools import Tool, ToolContext
from ._bash_text import default_sandbox, default_shell, describe
from ._deps import BuiltinDeps
from ._schema_data import SCHEMAS, TOOLS
from ._schemas import CommittedCodec
from ._task_text import describe as describe_task

if TYPE_CHECKING:
    from ..permissions import PermissionService
    from ..session.internal import Subagent
    from ._deps import RunChild

__all__ = ["deferred", "deferred_bash", "deferred_task"]

Execute = Callable[[Any, ToolContext], Awaitable[Any]]


def deferred(name: str, deps: BuiltinDeps) -> Tool[Any, Any]:
    """The built-in ``name`` (one of ``_schemas.DEFERRED``) bound to ``deps``, its module not yet imported."""
    definition = TOOLS[name]
    output: str | None = definition["output"]
    return Tool(
        description=definition["description"],
        input=CommittedCodec(definition["input"], SCHEMAS[definition["input"]]),
        output=None if output is None else CommittedCodec(output, SCHEMAS[output]),
        execute=_at_first_call(name, lambda module: module.executor(deps)),
        timeout=definition["timeout"],
        permission=definition["permission"],
        idempotent=definition["idempotent"],
    )


def deferred_bash(deps: BuiltinDeps) -> Tool[Any, Any]:
    """The ``bash`` tool bound to ``deps``, as ``bash.make(deps)`` builds it, its module not yet imported: the shell
    and the sandbox are chosen here, once, and the description names them (``_bash_text``)."""
    shell = default_shell(deps.shell)
    sandbox = (
        default_sandbox() if isinstance(deps.sandbox, str) else deps.sandbox
    )  # "auto" (== would build Sandbox.__eq__)
    key = "tether.builtins.bash:BashInput"
    return Tool(
        description=describe(shell, sandbox),
        input=CommittedCodec(key, SCHEMAS[key]),
        execute=_at_first_call("bash", lambda module: module.executor(deps, shell, sandbox)),
        timeout=None,  # bash enforces each command's own timeout (as bash.make)
    )


def deferred_task(
    permissions: PermissionService, run: RunChild, subagents: Sequence[Subagent]
) -> Tool[Any, Any]:
    """The ``task`` tool as ``task.build`` makes it, its module not yet imported: the description lists
    ``subagents`` (``_task_text``), the models are named by key, and no deadline (a subagent's turn takes as long
    as its work)."""
    return Tool(
        description=describe_task(subagents),
        input=CommittedCodec(_TASK_INPUT, SCHEMAS[_TASK_INPUT]),
        output=CommittedCodec(_TASK_OUTPUT, SCHEMAS[_TASK_OUTPUT]),
        execute=_at_first_call("task", lambda module: module.executor(permissions, run)),
        timeout=None,
        permission="task",
    )


_TASK_INPUT = "tether.builtins.task:TaskInput"
_TASK_OUTPUT = "tether.builtins.task:TaskOutput"


def _at_first_call(name: str, bind: Callable[[Any], Execute]) -> Execute:
    """An ``execute`` that imports the module ``name`` at its first call and runs what ``bind(module)`` returns."""
    loaded: list[Execute] = []

    async def execute(input: Any, ctx: ToolContext) -> Any:
        # nothing awaits between the test and the append: two first calls on the loop get one executor
        if not loaded:
            loaded.append(bind(importlib.import_module(f"{__package__}.{name}")))
        return await loaded[0](input, ctx)

    return execute
