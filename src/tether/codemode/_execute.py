"""The ``execute`` tool of one step: run the model's code, settle each inner call through the step's catalog.

Built per step materialization (its description lists that step's catalog, and its calls settle against it: law 5
holds for inner calls too). An inner call is settled by :meth:`Materialization.settle` of the step's full
materialization, with a context of its own (the ``execute`` call's session, message, permission asker and recorder,
its own call id): the same decode, permission gates, hooks, deadline and bounding as a direct call. It is recorded
in the ``execute`` call's child session (``_record``). Its answer in the code is its ``output`` (the schema-validated
machine value), or its text for a tool that declares no output; a failed call raises a Python exception there:
``PermissionError`` (blocked or corrected by a person), ``ValueError`` (invalid arguments), ``TimeoutError``,
``RuntimeError`` (anything else). A call the person declines stops the code and fails ``execute`` as declined, so
the turn stops as it does for a direct call.

The content is what the code printed, then the value of its last expression (when not ``None``); settle bounds it
once (law 6). A code exception or a limit fails the call with the traceback or the limit, and the printed text as the
partial content.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, Field

from .. import ids
from ..errors import DeclinedError, ToolFailure
from ..tools import Completed, Failed, Outcome, Text, Tool, ToolCall, ToolContext, ToolResponse
from ..tools.internal import Materialization
from ._answers import Raise, RunResult, Stop, jsonable
from ._record import InnerCalls
from ._settings import CodeModeSettings
from ._summary import python_names, summary
from ._summary import search as search_catalog

if TYPE_CHECKING:
    from ..session import Sessions

__all__ = ["NOT_IN_CODE", "ExecuteInput", "ExecuteOutput", "build_execute"]

NOT_IN_CODE = {
    "task": "tools.task is not available inside execute: a subagent runs as a direct task call of its own "
    "(pin task to keep it beside execute)."
}
"""Catalog tools the code cannot call, with the ``AttributeError`` it gets. ``task`` runs a subagent's whole conversation (its own steps, asks and
session): not work for a sandboxed call with a wall-time and call budget; pin it to keep it beside ``execute``.
``execute`` itself is never in the catalog the code sees (no recursion)."""

_DESCRIPTION = """Run Python code that calls this session's tools, for work that takes many tool calls: gather, \
filter and combine results in code and print only what you need. The code runs in a sandbox (a Python subset: no \
files, network, environment or imports beyond asyncio, json, re, math and similar).

- Call a tool as `await tools.NAME(arg=value, ...)` (keyword arguments only). It returns the tool's output: a dict \
for a tool with a structured output, else its text.
- Run calls in parallel: `a, b = await asyncio.gather(tools.read(filePath="a"), tools.read(filePath="b"))`.
- A failed call raises: PermissionError (denied), ValueError (invalid arguments), TimeoutError, RuntimeError \
(the tool failed). Catch it to go on.
- `search("words")` returns matching tools with their full input schemas (use it for tools not listed below).
- Your result is what you print() and the value of the last expression; keep it short.
- Limits per call: {max_calls} tool calls, {timeout:g} s, {memory} MiB memory.

Tools:
{tools}"""


class ExecuteInput(BaseModel):
    """Input of the execute tool."""

    code: str = Field(
        min_length=1, max_length=200_000, description="Python code to run (top-level await works)"
    )


class ExecuteOutput(BaseModel):
    """What the code did: its printed text, its last expression's value (as JSON), and how many tools it called."""

    printed: str
    result: Any = None
    calls: int


_RAISE = {
    "blocked": "PermissionError",
    "corrected": "PermissionError",
    "invalid_input": "ValueError",
    "timeout": "TimeoutError",
}


def _content(printed: str, value: Any) -> str:
    parts = [printed.rstrip("\n")] if printed.strip() else []
    if value is not None:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
        parts.append(f"Result: {text}")
    return "\n".join(parts) if parts else "(the code printed nothing and its last expression was None)"


def build_execute(
    full: Materialization, settings: CodeModeSettings, sessions: Sessions | None
) -> Tool[ExecuteInput, ExecuteOutput]:
    """The ``execute`` tool over ``full`` (the step's whole catalog); ``sessions`` records inner calls (``None``:
    not recorded, for a step settled outside a session)."""
    definitions = tuple(d for d in full.definitions if d.name not in NOT_IN_CODE)
    names = python_names(d.name for d in definitions)
    description = _DESCRIPTION.format(
        max_calls=settings.max_calls,
        timeout=settings.timeout,
        memory=settings.max_memory // (1024 * 1024),
        tools=summary(definitions, budget=settings.summary_chars, pinned=settings.pinned) or "(none)",
    )

    def search(query: str) -> list[dict[str, Any]]:  # named as the sandbox calls it (monty reports __name__)
        return json.loads(json.dumps(search_catalog(definitions, query), default=str))

    async def execute(input: ExecuteInput, ctx: ToolContext) -> ToolResponse[ExecuteOutput]:
        try:
            from ._sandbox import run_code  # pydantic-monty is imported at the first execute call
        except ModuleNotFoundError as exc:
            raise ToolFailure(
                "Code Mode is not installed here (pydantic-monty is missing): install tether[codemode]. Use the "
                "other tools directly meanwhile."
            ) from exc

        record = await InnerCalls.open(sessions, ctx, input.code) if sessions is not None else None

        async def call(name: str, kwargs: Mapping[str, Any]) -> Any:
            call_id = ids.ascending("call")
            inner = ToolContext(
                session_id=ctx.session_id,
                agent=ctx.agent,
                message_id=ctx.message_id,
                call_id=call_id,
                record_permission=ctx.record_permission if record is None else record.recorder(call_id),
                deps=ctx.deps,
                location_root=ctx.location_root,
                asker=ctx.asker,
            )
            if record is not None:
                record.start(call_id, name, kwargs)
            outcome = await full.settle(ToolCall(call_id=call_id, name=name, input=dict(kwargs)), inner)
            if record is not None:
                record.settle(call_id, outcome)
            return _answer(name, outcome)

        error: str | None = None
        result = RunResult(printed="")
        metadata: dict[str, Any] = {} if record is None else {"session_id": record.session_id}
        try:
            with anyio.move_on_after(settings.timeout) as scope:
                await run_code(
                    input.code,
                    settings=settings,
                    names=names,
                    call=call,
                    search=search,
                    result=result,
                    refused=NOT_IN_CODE,
                )
            if scope.cancelled_caught:
                result.limit = True
                result.error = (
                    f"execute stopped: the code ran longer than {settings.timeout:g} s (the wall-time limit, tool "
                    "calls included). Do less per execute call."
                )
            if result.error is not None:
                error = result.error if result.limit else f"The code raised an exception:\n{result.error}"
                raise ToolFailure(
                    error,
                    partial=[Text(result.printed)] if result.printed else None,
                    metadata={**metadata, "calls": result.calls},
                )
        finally:
            if record is not None:  # synchronous writes: nothing here can be cancelled
                record.close(error)
        value = jsonable(result.value)
        metadata["calls"] = result.calls
        return ToolResponse(
            output=ExecuteOutput(printed=result.printed, result=value, calls=result.calls),
            content=_content(result.printed, value),
            metadata=metadata,
            title=f"{result.calls} tool call{'s' if result.calls != 1 else ''}",
        )

    # No tool deadline: the wall-time limit is the call's own (settings.timeout), reported with the printed text.
    return Tool(
        description=description,
        input=ExecuteInput,
        output=ExecuteOutput,
        execute=execute,
        timeout=None,
        permission="execute",
    )


def _answer(name: str, outcome: Outcome) -> Any:
    if isinstance(outcome, Completed):
        if outcome.output is not None:
            return outcome.output
        return "\n".join(getattr(part, "text", "") for part in outcome.content)
    assert isinstance(outcome, Failed)
    if outcome.kind == "declined":
        return Stop(DeclinedError(f"The user declined the {name} call the code made"))
    if outcome.kind == "unknown" or outcome.kind == "stale":
        return Raise("AttributeError", f"tools.{name}: {outcome.error}")
    return Raise(_RAISE.get(outcome.kind, "RuntimeError"), f"tools.{name} failed: {outcome.error}")  # type: ignore[arg-type]
