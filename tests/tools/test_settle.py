import logging
import threading
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

from tether.errors import BlockedError, CorrectedError, DeclinedError, ToolFailure
from tether.output import OutputStore
from tether.tools import (
    AfterEvent,
    BeforeEvent,
    Completed,
    Failed,
    File,
    Text,
    Tool,
    ToolCall,
    ToolContext,
    ToolRegistry,
    ToolResponse,
)
from tether.tools.internal import FINAL_STEP_ERROR


class Q(BaseModel):
    q: str


def call(name: str, input: Any, call_id: str = "call_1") -> ToolCall:
    return ToolCall(call_id=call_id, name=name, input=input)


def content_tool(fn: Any, **kw: Any) -> Tool[Q, Any]:
    return Tool(description="test tool", input=Q, execute=fn, **kw)


class CountedOutput(BaseModel):
    """An output model that counts how often pydantic serializes it (``serializations`` is shared per test)."""

    echoed: str
    serializations: ClassVar[list[str]] = []

    @model_serializer(mode="wrap")
    def _count(self, handler: SerializerFunctionWrapHandler) -> Any:
        type(self).serializations.append(self.echoed)
        return handler(self)


@pytest.mark.anyio
async def test_typed_output_is_serialized_once_for_both_output_and_content(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    async def run(inp: Q, c: ToolContext) -> CountedOutput:
        return CountedOutput(echoed=inp.q * 2)

    CountedOutput.serializations.clear()
    registry.register({"echo": Tool(description="echo", input=Q, output=CountedOutput, execute=run)})
    outcome = await registry.materialize().settle(call("echo", {"q": "ab"}), ctx)
    assert isinstance(outcome, Completed)
    # One pydantic serialization gives the output; the content is that output's JSON text, not a second dump.
    assert CountedOutput.serializations == ["abab"]
    assert outcome.output == {"echoed": "abab"}
    assert outcome.content == (Text('{"echoed": "abab"}'),)
    assert outcome.metadata is None


@pytest.mark.anyio
async def test_string_output_becomes_one_text_part(registry: ToolRegistry, ctx: ToolContext) -> None:
    async def run(inp: Q, c: ToolContext) -> str:
        return inp.q.upper()

    registry.register({"up": Tool(description="upper", input=Q, output=str, execute=run)})
    outcome = await registry.materialize().settle(call("up", {"q": "hi"}), ctx)
    assert isinstance(outcome, Completed) and outcome.content == (Text("HI"),) and outcome.output == "HI"


@pytest.mark.anyio
async def test_invalid_input_never_executes(registry: ToolRegistry, ctx: ToolContext) -> None:
    ran: list[Q] = []

    async def run(inp: Q, c: ToolContext) -> str:
        ran.append(inp)
        return "x"

    registry.register({"t": content_tool(run)})
    outcome = await registry.materialize().settle(call("t", {"q": 3, "extra": 1}), ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "invalid_input"
    assert ran == []
    assert 'Invalid input for tool "t"' in outcome.error
    assert "- q: Input should be a valid string" in outcome.error
    assert 'Arguments received: {"q": 3, "extra": 1}' in outcome.error
    assert outcome.error.endswith("Update the arguments and call the tool again.")


@pytest.mark.anyio
async def test_malformed_json_arguments_are_explained(registry: ToolRegistry, ctx: ToolContext) -> None:
    registry.register({"t": content_tool(lambda i, c: "x")})
    outcome = await registry.materialize().settle(call("t", '{"q": "unterminated'), ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "invalid_input"
    assert "not valid JSON" in outcome.error and '{"q": "unterminated' in outcome.error


@pytest.mark.anyio
async def test_json_string_arguments_are_decoded(registry: ToolRegistry, ctx: ToolContext) -> None:
    registry.register({"t": content_tool(lambda i, c: i.q)})
    outcome = await registry.materialize().settle(call("t", '{"q": "fine"}'), ctx)
    assert isinstance(outcome, Completed) and outcome.content == (Text("fine"),)


@pytest.mark.anyio
async def test_invalid_output_never_succeeds(registry: ToolRegistry, ctx: ToolContext) -> None:
    class Out(BaseModel):
        n: int

    async def run(inp: Q, c: ToolContext) -> ToolResponse[Any]:
        return ToolResponse(output={"n": "not a number"}, content="looks fine")

    registry.register({"t": Tool(description="d", input=Q, output=Out, execute=run)})
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "invalid_output"
    assert outcome.error.startswith("Tool returned an invalid value for its output schema:")


@pytest.mark.anyio
async def test_declared_output_missing_fails(registry: ToolRegistry, ctx: ToolContext) -> None:
    registry.register(
        {"t": Tool(description="d", input=Q, output=int, execute=lambda i, c: ToolResponse(content="x"))}
    )
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.error == "Tool did not return its declared output"


@pytest.mark.anyio
async def test_tool_without_output_must_provide_content(registry: ToolRegistry, ctx: ToolContext) -> None:
    registry.register({"t": content_tool(lambda i, c: ToolResponse(content=[]))})
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "defect"
    assert outcome.error == "Tool execution failed: tool returned empty content"


@pytest.mark.anyio
async def test_to_model_output_projects_content(registry: ToolRegistry, ctx: ToolContext) -> None:
    tool = Tool(
        description="d",
        input=Q,
        output=dict[str, int],
        execute=lambda i, c: {"a": 1},
        to_model_output=lambda inp, out: [Text(f"{inp.q}={out['a']}"), File(mime="image/png", data="AAAA")],
    )
    registry.register({"t": tool})
    outcome = await registry.materialize().settle(call("t", {"q": "a"}), ctx)
    assert isinstance(outcome, Completed)
    assert outcome.content == (Text("a=1"), File(mime="image/png", data="AAAA"))


@pytest.mark.anyio
async def test_tool_failure_is_model_visible(registry: ToolRegistry, ctx: ToolContext) -> None:
    async def run(inp: Q, c: ToolContext) -> str:
        raise ToolFailure("File not found: x.txt", partial=[Text("applied 1 of 2")])

    registry.register({"t": content_tool(run)})
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed)
    assert (outcome.kind, outcome.error, outcome.partial) == (
        "tool",
        "File not found: x.txt",
        (Text("applied 1 of 2"),),
    )


@pytest.mark.anyio
async def test_defect_fails_the_call_and_logs_the_trace(
    registry: ToolRegistry, ctx: ToolContext, caplog: pytest.LogCaptureFixture
) -> None:
    async def run(inp: Q, c: ToolContext) -> str:
        raise KeyError("boom")

    registry.register({"t": content_tool(run)})
    with caplog.at_level(logging.ERROR, logger="tether.tools"):
        outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.error == "Tool execution failed: 'boom'"
    assert any(r.exc_info for r in caplog.records)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("exc", "kind", "message"),
    [
        (
            BlockedError("Permission denied: bash", action="bash", resources=["rm -rf /"]),
            "blocked",
            "Permission denied: bash",
        ),
        (
            CorrectedError("use git status instead"),
            "corrected",
            "The user rejected this tool call with feedback: use git status instead",
        ),
        (DeclinedError("no"), "declined", "The user rejected permission to use this tool call"),
    ],
)
async def test_permission_outcomes_become_failures(
    registry: ToolRegistry, ctx: ToolContext, exc: Exception, kind: str, message: str
) -> None:
    async def run(inp: Q, c: ToolContext) -> str:
        raise exc

    registry.register({"t": content_tool(run)})
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.kind == kind and outcome.error.startswith(message)


@pytest.mark.anyio
async def test_timeout_fails_with_the_tool_name(registry: ToolRegistry, ctx: ToolContext) -> None:
    async def run(inp: Q, c: ToolContext) -> str:
        await anyio.sleep_forever()
        return "never"

    registry.register({"slow": content_tool(run, timeout=0.05)})
    outcome = await registry.materialize().settle(call("slow", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.error == 'Tool "slow" timed out after 0.05s'


@pytest.mark.anyio
async def test_own_timeout_error_is_a_defect_not_a_deadline(registry: ToolRegistry, ctx: ToolContext) -> None:
    async def run(inp: Q, c: ToolContext) -> str:
        raise TimeoutError("socket timed out")

    registry.register({"t": content_tool(run)})
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.error == "Tool execution failed: socket timed out"


@pytest.mark.anyio
async def test_cancellation_during_execute_propagates(registry: ToolRegistry, ctx: ToolContext) -> None:
    started = anyio.Event()
    cleaned = anyio.Event()
    results: list[Any] = []

    async def run(inp: Q, c: ToolContext) -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cleaned.set()
        return "never"

    registry.register({"t": content_tool(run)})
    step = registry.materialize()

    async def settle() -> None:
        results.append(await step.settle(call("t", {"q": "x"}), ctx))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(settle)
            await started.wait()
            tg.cancel_scope.cancel()
    assert cleaned.is_set()
    assert results == []  # cancelled: no outcome, not even a Failed one


@pytest.mark.anyio
async def test_sync_execute_runs_in_a_worker_thread(registry: ToolRegistry, ctx: ToolContext) -> None:
    loop_thread = threading.get_ident()
    registry.register({"t": content_tool(lambda i, c: str(threading.get_ident()))})
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Completed) and outcome.content[0] != Text(str(loop_thread))


@pytest.mark.anyio
async def test_unknown_tool(registry: ToolRegistry, ctx: ToolContext) -> None:
    outcome = await registry.materialize().settle(call("missing", {}), ctx)
    assert isinstance(outcome, Failed) and (outcome.kind, outcome.error) == (
        "unknown",
        "Unknown tool: missing",
    )


@pytest.mark.anyio
async def test_stale_call_does_not_run_replacement(registry: ToolRegistry, ctx: ToolContext) -> None:
    ran: list[str] = []
    registry.register({"t": content_tool(lambda i, c: ran.append("old") or "old")})
    step = registry.materialize()
    registry.register({"t": content_tool(lambda i, c: ran.append("new") or "new")})
    outcome = await step.settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.error == "Stale tool call: t"
    assert ran == []


@pytest.mark.anyio
async def test_closed_registration_is_stale(registry: ToolRegistry, ctx: ToolContext) -> None:
    handle = registry.register({"t": content_tool(lambda i, c: "x")})
    step = registry.materialize()
    handle.close()
    outcome = await step.settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "stale"


@pytest.mark.anyio
async def test_hidden_tool_is_unknown_in_that_step(registry: ToolRegistry, ctx: ToolContext) -> None:
    from dataclasses import dataclass

    @dataclass
    class R:
        action: str
        resource: str
        effect: str

    registry.register({"t": content_tool(lambda i, c: "x")})
    outcome = await registry.materialize([R("t", "*", "deny")]).settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "unknown"


@pytest.mark.anyio
async def test_final_step_keeps_definitions_and_fails_every_call(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    ran: list[str] = []
    registry.register({"t": content_tool(lambda i, c: ran.append("x") or "x")})
    step = registry.materialize(final_step=True)
    assert [d.name for d in step.definitions] == ["t"]
    outcome = await step.settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.error == FINAL_STEP_ERROR and ran == []


@pytest.mark.anyio
async def test_one_rejected_call_never_fails_another(registry: ToolRegistry, ctx: ToolContext) -> None:
    registry.register({"t": content_tool(lambda i, c: i.q)})
    step = registry.materialize()
    outcomes: dict[str, Any] = {}

    async def run(c: ToolCall) -> None:
        outcomes[c.call_id] = await step.settle(c, ctx)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, call("t", {"q": "good"}, "a"))
        tg.start_soon(run, call("t", {"bad": 1}, "b"))
        tg.start_soon(run, call("nope", {}, "c"))
    assert isinstance(outcomes["a"], Completed) and outcomes["a"].content == (Text("good"),)
    assert isinstance(outcomes["b"], Failed) and isinstance(outcomes["c"], Failed)


@pytest.mark.anyio
async def test_hooks_run_in_order_and_may_replace_input_and_outcome(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    order: list[str] = []
    registry.register({"t": content_tool(lambda i, c: i.q)})

    def first(event: BeforeEvent) -> None:
        order.append("first")
        event.input = {"q": "rewritten"}

    async def second(event: BeforeEvent) -> None:
        order.append("second")
        assert event.input == {"q": "rewritten"}

    def after(event: AfterEvent) -> None:
        order.append("after")
        assert isinstance(event.outcome, Completed)
        event.outcome = Completed(content=(Text(event.outcome.content[0].text + "!" * 100_000),))  # type: ignore[union-attr]

    registry.before(first)
    registry.before(second)
    handle = registry.after(after)
    outcome = await registry.materialize().settle(call("t", {"q": "orig"}), ctx)
    assert order == ["first", "second", "after"]
    assert isinstance(outcome, Completed)
    assert outcome.content[0].text.startswith("rewritten!")  # type: ignore[union-attr]
    assert len(outcome.output_paths) == 1  # the hook's large content was bounded again
    handle.close()
    outcome = await registry.materialize().settle(call("t", {"q": "orig"}), ctx)
    assert outcome.content == (Text("rewritten"),)  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_metadata_absent_stays_absent_and_bad_metadata_is_dropped(
    registry: ToolRegistry, ctx: ToolContext, caplog: pytest.LogCaptureFixture
) -> None:
    registry.register(
        {
            "plain": content_tool(lambda i, c: ToolResponse(content="x")),
            "big": content_tool(lambda i, c: ToolResponse(content="x", metadata={"blob": "y" * 20_000})),
            "odd": content_tool(lambda i, c: ToolResponse(content="x", metadata={"obj": object()})),
            "ok": content_tool(lambda i, c: ToolResponse(content="x", metadata={"lines": 3})),
        }
    )
    step = registry.materialize()
    with caplog.at_level(logging.WARNING, logger="tether.tools"):
        plain, big, odd, ok = [
            await step.settle(call(n, {"q": "x"}), ctx) for n in ("plain", "big", "odd", "ok")
        ]
    assert isinstance(plain, Completed) and plain.metadata is None
    assert isinstance(big, Completed) and big.metadata is None
    assert isinstance(odd, Completed) and odd.metadata is None
    assert isinstance(ok, Completed) and ok.metadata == {"lines": 3}
    assert sum("dropping metadata" in r.message for r in caplog.records) == 2


@pytest.mark.anyio
async def test_large_content_is_bounded_and_retained(registry: ToolRegistry, ctx: ToolContext) -> None:
    full = "\n".join(f"line {i}" for i in range(10_000))
    registry.register({"t": content_tool(lambda i, c: full)})
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Completed) and len(outcome.output_paths) == 1
    assert Path(outcome.output_paths[0]).read_text() == full
    preview = outcome.content[0].text  # type: ignore[union-attr]
    assert preview.startswith("line 0\n") and preview.endswith("line 9999")
    assert f"full content saved to {outcome.output_paths[0]}" in preview


@pytest.mark.anyio
async def test_large_structured_output_is_retained(registry: ToolRegistry, ctx: ToolContext) -> None:
    registry.register(
        {"t": Tool(description="d", input=Q, output=list[int], execute=lambda i, c: list(range(10_000)))}
    )
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Completed)
    assert outcome.output["_truncated"] is True and outcome.output["_outputPath"] in outcome.output_paths


@pytest.mark.anyio
async def test_retention_failure_fails_the_call(tmp_path: Path, ctx: ToolContext) -> None:
    blocker = tmp_path / "tool-output"
    blocker.write_text("a file where the directory should be")
    registry = ToolRegistry(output=OutputStore(blocker))
    registry.register({"t": content_tool(lambda i, c: "x" * 100_000)})
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "output_store"
    assert outcome.error.startswith("Failed to write tool output:")


@pytest.mark.anyio
async def test_a_failing_hook_fails_only_its_own_call(registry: ToolRegistry, ctx: ToolContext) -> None:
    registry.register({"t": content_tool(lambda i, c: i.q)})

    def veto(event: BeforeEvent) -> None:
        if event.input == {"q": "forbidden"}:
            raise ToolFailure("This project does not allow 'forbidden'.")
        if event.input == {"q": "buggy"}:
            raise RuntimeError("hook bug")

    registry.before(veto)
    step = registry.materialize()
    outcomes: dict[str, Any] = {}

    async def run(c: ToolCall) -> None:
        outcomes[c.call_id] = await step.settle(c, ctx)

    async with anyio.create_task_group() as tg:
        for q in ("fine", "forbidden", "buggy"):
            tg.start_soon(run, call("t", {"q": q}, q))
    assert isinstance(outcomes["fine"], Completed) and outcomes["fine"].content == (Text("fine"),)
    assert (
        outcomes["forbidden"].kind == "tool"
        and outcomes["forbidden"].error == "This project does not allow 'forbidden'."
    )
    assert (
        outcomes["buggy"].kind == "defect"
        and outcomes["buggy"].error == "Tool execution failed: before hook raised hook bug"
    )


@pytest.mark.anyio
async def test_a_failing_after_hook_is_a_defect_of_that_call(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    registry.register({"t": content_tool(lambda i, c: i.q)})

    async def broken(event: AfterEvent) -> None:
        raise ValueError("after bug")

    registry.after(broken)
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert (
        isinstance(outcome, Failed) and outcome.error == "Tool execution failed: after hook raised after bug"
    )


@pytest.mark.anyio
async def test_failures_are_bounded_too(registry: ToolRegistry, ctx: ToolContext) -> None:
    error = "E" * 1_000_000
    partial = "\n".join(f"applied {i}" for i in range(100_000))

    async def run(inp: Q, c: ToolContext) -> str:
        raise ToolFailure(error, partial=[Text(partial)])

    registry.register({"t": content_tool(run)})
    outcome = await registry.materialize().settle(call("t", {"q": "x"}), ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "tool"
    assert len(outcome.error.encode()) <= 51_200 and "full content saved to" in outcome.error
    assert len(outcome.output_paths) == 2
    saved = {Path(p).read_text() for p in outcome.output_paths}
    assert saved == {error, partial}
    preview = outcome.partial[0].text  # type: ignore[union-attr]
    assert preview.startswith("applied 0\n") and preview.endswith("applied 99999")
