"""The built-in replay model: a recorded agent transcript fixing the sample project's failing test.

It is a real :class:`~tether.llm.Model`: every step is streamed as tether events and every tool call goes through the
real runtime (permissions, settle, bounding, the store). What is recorded is only the model's side. Each step looks
at the tool results the runtime actually sent back, so the replay stays truthful when reality differs from the
recording: a rejected edit, tests that already pass, or a tool whose argument names differ all end the turn with an
honest message instead of a scripted success.

The transcript: run the tests (live bash tail) → grep and read in parallel → edit (configured to need approval) →
run the tests again → run a report whose large output is bounded → summarize.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from .. import ids
from ..llm import Event, Model, ModelRequest
from ._steps import PlannedCall, PlannedStep, Result, last_results, stream_step, turn_step

__all__ = ["DEMO_PROMPT", "ReplayModel"]

DEMO_PROMPT = (
    "The discount tests fail. Find the bug in the pricing package, fix it, and regenerate the price report."
)

_OLD = "return round(amount - percent / 100, 2)"
_NEW = "return round(amount * (1 - percent / 100), 2)"
_SAVED = re.compile(r"full content saved to (\S+?)(?: \.\.\.|$)", re.MULTILINE)

_ARGUMENTS: Mapping[str, Sequence[str]] = {
    "path": ("filePath", "file_path", "path"),
    "old": ("oldString", "old_string", "old"),
    "new": ("newString", "new_string", "new"),
    "pattern": ("pattern",),
    "include": ("include", "glob"),
    "command": ("command", "cmd"),
    "description": ("description",),
}


def _python() -> str:
    return "python3" if shutil.which("python3") else "python"


class _Plan:
    """Builds calls with the argument names the advertised tools actually declare."""

    def __init__(self, request: ModelRequest) -> None:
        self._schemas = {d.name: d.input_schema for d in request.tools}

    def has(self, tool: str) -> bool:
        return tool in self._schemas

    def call(self, tool: str, **values: Any) -> PlannedCall:
        properties: Mapping[str, Any] = self._schemas.get(tool, {}).get("properties", {})
        args: dict[str, Any] = {}
        for role, value in values.items():
            names = _ARGUMENTS.get(role, (role,))
            chosen = next((n for n in names if n in properties), None)
            if chosen is None and role in ("include", "description"):
                continue  # optional niceties the tool does not declare
            args[chosen or names[0]] = value
        return PlannedCall(name=tool, input=args)


def _tests_pass(result: Result) -> bool:
    return (
        not result.is_error
        and "FAILED" not in result.text
        and re.search(r"^OK\b", result.text, re.M) is not None
    )


def _missing(plan: _Plan, *tools: str) -> PlannedStep | None:
    absent = [t for t in tools if not plan.has(t)]
    if absent:
        return PlannedStep(
            text=f"The recording needs the {', '.join(absent)} tool(s), which this agent does not offer. Stopping."
        )
    return None


def _step_run_tests(plan: _Plan, results: Sequence[Result]) -> PlannedStep:
    return _missing(plan, "bash") or PlannedStep(
        text="I'll start by running the test suite to see what fails.",
        calls=[plan.call("bash", command=f"{_python()} -m unittest", description="Run the test suite")],
    )


def _step_investigate(plan: _Plan, results: Sequence[Result]) -> PlannedStep:
    if results and _tests_pass(results[0]):
        return PlannedStep(text="All tests pass already, so there is nothing to fix.")
    return _missing(plan, "grep", "read") or PlannedStep(
        text="The discount tests fail. Let me find where the discount is computed and read that module.",
        calls=[
            plan.call("grep", pattern="def apply_discount", include="*.py"),
            plan.call("read", path="pricing/cart.py"),
        ],
    )


def _step_edit(plan: _Plan, results: Sequence[Result]) -> PlannedStep:
    read = next((r for r in results if r.name == "read"), None)
    if read is None or read.is_error or _OLD not in read.text:
        return PlannedStep(
            text="pricing/cart.py does not contain the code this recording expects, so I'll stop here "
            "rather than guess an edit."
        )
    return _missing(plan, "edit") or PlannedStep(
        text="`apply_discount` subtracts `percent / 100` (a fraction) from the amount instead of a percentage "
        "of it. Fixing the formula:",
        calls=[plan.call("edit", path="pricing/cart.py", old=_OLD, new=_NEW)],
    )


def _step_rerun(plan: _Plan, results: Sequence[Result]) -> PlannedStep:
    if not results or results[0].is_error:
        reason = (
            results[0].text.strip().splitlines()[0] if results and results[0].text.strip() else "no result"
        )
        return PlannedStep(text=f"The edit was not applied ({reason}). Stopping; the bug is still there.")
    return PlannedStep(
        text="Edit applied. Running the tests again:",
        calls=[plan.call("bash", command=f"{_python()} -m unittest", description="Run the test suite")],
    )


def _step_report(plan: _Plan, results: Sequence[Result]) -> PlannedStep:
    if not results or not _tests_pass(results[0]):
        return PlannedStep(text="The tests still fail after the edit; I'll stop so you can take a look.")
    return PlannedStep(
        text="All tests pass. Now regenerating the price report (it is long):",
        calls=[plan.call("bash", command=f"{_python()} report.py", description="Print the price report")],
    )


def _step_summary(plan: _Plan, results: Sequence[Result]) -> PlannedStep:
    lines = ["Done. `apply_discount` now takes `percent` percent of the amount, and all 3 tests pass."]
    saved = _SAVED.search(results[0].text) if results else None
    if saved:
        lines.append(
            f"The report was too long to read whole: tether kept its head and tail and saved the full "
            f"output to {saved.group(1)}."
        )
    elif results and not results[0].is_error:
        lines.append("The report printed in full.")
    return PlannedStep(text="\n".join(lines))


_Step = Callable[[_Plan, Sequence[Result]], PlannedStep]
_TRANSCRIPT: tuple[_Step, ...] = (
    _step_run_tests,
    _step_investigate,
    _step_edit,
    _step_rerun,
    _step_report,
    _step_summary,
)


class ReplayModel(Model):
    """A recorded agent transcript replayed as a model (no network, no API key).

    Each turn replays the transcript from its start; past its end the model says it has nothing left to replay.
    """

    provider = "replay"
    model_id = "demo"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        index = turn_step(request)
        plan = _Plan(request)
        if index < len(_TRANSCRIPT):
            step = _TRANSCRIPT[index](plan, last_results(request))
        else:
            step = PlannedStep(text="The recording has nothing more to say.")
        for event in stream_step(request, step, call_prefix=ids.ascending("call")):
            yield event
