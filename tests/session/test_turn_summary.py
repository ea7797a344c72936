"""The summary of a turn that ran to its end comes from its ``TurnResult``: exactly the figures the store holds.

``tether run`` used to read the whole session back to count them (a 1,000-call step's outputs decoded again); a
turn cut short still counts from the store (``tests/cli/test_integrity.py``'s Ctrl-C test).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tether.cli._turn import _stored_stats, result_stats  # pyright: ignore[reportPrivateUsage]
from tether.errors import ProviderServerError
from tether.llm import ToolCallEvent, ToolErrorEvent, Usage
from tether.testing import ScriptedModel, Step, tool_call
from tether.tools import Tool, ToolContext, ToolFailure, ToolResponse

from .conftest import Harness


class Empty(BaseModel):
    pass


def _figures(stats: Any) -> tuple[int, int, int, Usage]:
    return stats.steps, stats.calls, stats.failed_calls, stats.usage


@pytest.mark.anyio
async def test_a_finished_turns_summary_is_what_the_store_holds(harness: Harness) -> None:
    def ok(value: Empty, ctx: ToolContext) -> ToolResponse[Any]:
        return ToolResponse(content="fine")

    def boom(value: Empty, ctx: ToolContext) -> ToolResponse[Any]:
        raise ToolFailure("it broke")

    harness.tools.register(
        {
            "ok": Tool(description="succeeds", input=Empty, execute=ok),
            "boom": Tool(description="fails", input=Empty, execute=boom),
        }
    )
    model = ScriptedModel(
        [
            Step("partial", ProviderServerError("overloaded", status=503)),  # retried: its message is kept
            Step(
                tool_call("ok"),
                tool_call("boom"),
                tool_call("missing"),  # no such tool: a failed call
                # run by the provider, failed there: neither counted nor failed, in the store as in the result
                ToolCallEvent(id="ws", name="web_search", input={"q": "x"}, provider_executed=True),
                ToolErrorEvent(id="ws", name="web_search", message="search unavailable"),
                usage=Usage(input_tokens=100, output_tokens=7),
            ),
            Step("done", usage=Usage(input_tokens=150, output_tokens=3)),
        ]
    )
    session = await harness.sessions.create(harness.loc)
    with model:
        result = await session.prompt("go", model=model)
    await harness.store.flush()
    stored = await _stored_stats(session)
    assert stored is not None
    assert _figures(result_stats(result)) == _figures(stored)
    steps, calls, failed, usage = _figures(stored)
    assert (steps, calls, failed) == (3, 3, 2)
    assert (usage.input_tokens, usage.output_tokens) == (250, 10)
    assert any(call.provider_executed and not call.ok for call in result.calls)
