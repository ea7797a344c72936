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
from collections.abc import Awaitable, Callable
from typing import Any

from ..tools import Tool, ToolContext
from ._deps import BuiltinDeps
from ._schema_data import SCHEMAS, TOOLS
from ._schemas import CommittedCodec

__all__ = ["deferred"]


def deferred(name: str, deps: BuiltinDeps) -> Tool[Any, Any]:
    """The built-in ``name`` (one of ``_schemas.DEFERRED``) bound to ``deps``, its module not yet imported."""
    definition = TOOLS[name]
    output: str | None = definition["output"]
    loaded: list[Callable[[Any, ToolContext], Awaitable[Any]]] = []

    async def execute(input: Any, ctx: ToolContext) -> Any:
        # nothing awaits between the test and the append: two first calls on the loop get one executor
        if not loaded:
            loaded.append(importlib.import_module(f"{__package__}.{name}").executor(deps))
        return await loaded[0](input, ctx)

    return Tool(
        description=definition["description"],
        input=CommittedCodec(definition["input"], SCHEMAS[definition["input"]]),
        output=None if output is None else CommittedCodec(output, SCHEMAS[output]),
        execute=execute,
        timeout=definition["timeout"],
        permission=definition["permission"],
        idempotent=definition["idempotent"],
    )
