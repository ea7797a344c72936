"""The summary of a turn that ran to its end comes from its ``TurnResult``: exactly the figures the store holds.

``tether run`` used to read the whole session back to count them (a 1,000-call step's outputs decoded again); a
turn cut short still counts from the store (``test_integrity``'s Ctrl-C test).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tether.bus import Bus
from tether.cli._turn import _stored_stats, result_stats  # pyright: ignore[reportPrivateUsage]
from tether.errors import ProviderServerError
from tether.llm import ToolCallEvent, ToolErrorEvent, Usage
from tether.output import OutputStore
from tether.session import RetryPolicy, Sessions, SQLiteStore
from tether.testing import ScriptedModel, Step, tool_call
from tether.tools import Tool, ToolContext, ToolFailure, ToolRegistry, ToolResponse


class Empty(BaseModel):
    pass


@dataclass(frozen=True)
class _Agent:
    name: str = "build"
    rules: tuple[Any, ...] = ()
    steps: int | None = None
    prompt: str | None = None
    options: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass
class _Loc:
    tools: ToolRegistry
    root: Path
    directory: Path


def _figures(stats: Any) -> tuple[int, int, int, Usage]:
    return stats.steps, stats.calls, stats.failed_calls, stats.usage


@pytest.mark.anyio
async def test_a_finished_turns_summary_is_what_the_store_holds(tmp_path: Path) -> None:
    def ok(value: Empty, ctx: ToolContext) -> ToolResponse[Any]:
        return ToolResponse(content="fine")

    def boom(value: Empty, ctx: ToolContext) -> ToolResponse[Any]:
        raise ToolFailure("it broke")

    registry = ToolRegistry(output=OutputStore(tmp_path / "out"))
    registry.register(
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
    async with SQLiteStore(tmp_path / "tether.db") as store:
        sessions = Sessions(store=store, bus=Bus(), agents={"build": _Agent()}, retry=RetryPolicy(base=0.0))
        try:
            session = await sessions.create(_Loc(registry, tmp_path, tmp_path))
            with model:
                result = await session.prompt("go", model=model)
            await store.flush()
            stored = await _stored_stats(session)
        finally:
            sessions.close()
    assert stored is not None
    assert _figures(result_stats(result)) == _figures(stored)
    steps, calls, failed, usage = _figures(stored)
    assert (steps, calls, failed) == (3, 3, 2)
    assert (usage.input_tokens, usage.output_tokens) == (250, 10)
    assert any(call.provider_executed and not call.ok for call in result.calls)
