"""CodeModeStep over a plain registry (no session: inner calls are not recorded): the catalog transform, settle of
execute and of pinned tools, and the answers the code receives for each kind of outcome."""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from tether.codemode import CodeMode, CodeModeSettings, CodeModeStep
from tether.codemode._answers import jsonable
from tether.output import OutputStore
from tether.tools import Completed, Failed, Text, Tool, ToolCall, ToolContext, ToolFailure, ToolRegistry

pytestmark = pytest.mark.anyio


class Point(BaseModel):
    x: int
    y: int


def registry(tmp_path: Path) -> ToolRegistry:
    reg = ToolRegistry(output=OutputStore(tmp_path / "out"))

    async def slow(input: dict[str, Any], ctx: ToolContext) -> str:
        await anyio.sleep_forever()
        raise AssertionError("never")

    def fail(input: dict[str, Any], ctx: ToolContext) -> str:
        raise ToolFailure("it broke")

    reg.register(
        {
            "point": Tool(
                description="A point\nsecond line", input=Point, output=Point, execute=lambda p, ctx: p
            ),
            "slow": Tool(description="Slow", input={"type": "object"}, execute=slow, timeout=0.05),
            "fail": Tool(description="Fail", input={"type": "object"}, execute=fail),
            "my-tool": Tool(description="Dashed", input={"type": "object"}, execute=lambda i, ctx: "dashed"),
        }
    )
    return reg


def ctx() -> ToolContext:
    return ToolContext(session_id="ses_1", agent="build", message_id="msg_1", call_id="call_1")


async def settle(step: Any, code: str) -> Completed | Failed:
    return await step.settle(ToolCall(call_id="call_1", name="execute", input={"code": code}), ctx())


def step_of(tmp_path: Path, **settings: Any) -> CodeModeStep:
    reg = registry(tmp_path)
    mode = CodeMode({"build": CodeModeSettings(**settings)})
    step = mode("build", reg.materialize(), reg)
    assert isinstance(step, CodeModeStep)
    return step


async def test_an_agent_without_codemode_keeps_its_materialization(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    full = reg.materialize()
    mode = CodeMode({"other": CodeModeSettings()})
    assert mode("build", full, reg) is full
    assert mode("other", full, reg) is mode("other", full, reg)  # made once per materialization


async def test_structured_outputs_reach_the_code_and_results_come_back_as_json(tmp_path: Path) -> None:
    step = step_of(tmp_path, pinned=("point",))
    assert [d.name for d in step.definitions] == ["execute", "point"]
    outcome = await settle(step, "p = await tools.point(x=1, y=2)\nprint(p['x'] + p['y'])\n[p, (1, 2), {3}]")
    assert isinstance(outcome, Completed), outcome
    assert outcome.output == {"printed": "3\n", "result": [{"x": 1, "y": 2}, [1, 2], [3]], "calls": 1}
    assert outcome.metadata == {"calls": 1}  # no session: nothing recorded
    pinned = await step.settle(ToolCall(call_id="c2", name="point", input={"x": 3, "y": 4}), ctx())
    assert isinstance(pinned, Completed) and pinned.output == {"x": 3, "y": 4}


@pytest.mark.parametrize(
    ("code", "printed"),
    [
        ("try:\n    await tools.slow()\nexcept TimeoutError as e:\n    print('timeout')", "timeout"),
        (
            "try:\n    await tools.fail()\nexcept RuntimeError as e:\n    print(e)",
            "tools.fail failed: it broke",
        ),
        ("print(await tools.my_tool())", "dashed"),
        ("try:\n    search(1)\nexcept TypeError as e:\n    print('search needs text')", "search needs text"),
        (
            "try:\n    __import__('os')\nexcept RuntimeError as e:\n    print(e)",
            "is not available in this sandbox",
        ),
        ("try:\n    f = tools.point\nexcept AttributeError:\n    print('call it')", "call it"),
        ("print('nothing')\nNone", "nothing"),
    ],
)
async def test_each_outcome_is_an_answer_the_code_can_handle(tmp_path: Path, code: str, printed: str) -> None:
    outcome = await settle(step_of(tmp_path), code)
    assert isinstance(outcome, Completed), outcome
    assert printed in outcome.content[0].text  # type: ignore[union-attr]


async def test_code_that_prints_nothing_says_so(tmp_path: Path) -> None:
    outcome = await settle(step_of(tmp_path), "x = 1")
    assert isinstance(outcome, Completed) and "printed nothing" in outcome.content[0].text  # type: ignore[union-attr]


async def test_a_failed_call_keeps_what_was_printed_as_partial_content(tmp_path: Path) -> None:
    outcome = await settle(step_of(tmp_path), "print('so far')\nraise ValueError('boom')")
    assert isinstance(outcome, Failed) and outcome.kind == "tool"
    assert "The code raised an exception" in outcome.error and "ValueError: boom" in outcome.error
    assert outcome.partial == (Text("so far\n"),)


def test_jsonable_keeps_json_and_shows_the_rest_as_repr() -> None:
    assert jsonable({"a": (1, 2.5, None, True)}) == {"a": [1, 2.5, None, True]}
    assert jsonable(math.inf) == "inf"
    assert jsonable(object()).startswith("<object object")


def test_settings_from_config() -> None:
    assert CodeModeSettings.from_config(False) is None
    assert CodeModeSettings.from_config(True) == CodeModeSettings()
    custom = CodeModeSettings.from_config(
        {"pinned": ["read"], "timeout": 5, "max_calls": 3, "max_memory_mb": 16, "cpu_seconds": 2}
    )
    assert custom == CodeModeSettings(
        pinned=("read",), timeout=5, max_calls=3, max_memory=16 << 20, cpu_seconds=2
    )
    assert CodeMode.from_config({"a": "not a section", "b": {"codemode": False}}) is None
    assert CodeMode.from_config(None) is None
    found = CodeMode.from_config({"build": {"codemode": {"max_calls": 7}}})
    assert found is not None and found.agents["build"].max_calls == 7


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("type(tools)()", "AttributeError: tools has no tool '__call__'"),
        ("tools.__class__.__init__", "AttributeError"),
        ("tools.__dict__", "AttributeError"),
        ("getattr(tools, '__reduce__')()", "AttributeError"),
        ("eval('__import__(\"os\")')", "__import__ is not available in this sandbox"),
        ("import sys\nsys.exit(1)", "AttributeError: module 'sys' has no attribute 'exit'"),
        ("x = []\nwhile True:\n    x.append('a' * 1000)", "MemoryError: memory limit exceeded"),
    ],
)
async def test_hostile_code_never_reaches_the_host(tmp_path: Path, code: str, expected: str) -> None:
    outcome = await settle(step_of(tmp_path, max_memory=32 << 20), code)
    assert isinstance(outcome, Failed) and expected in outcome.error, outcome


def wide_step(tmp_path: Path, count: int, **settings: Any) -> CodeModeStep:
    reg = ToolRegistry(output=OutputStore(tmp_path / "out"))
    reg.register(
        {
            f"svc{i}_op{i}": Tool(
                description=f"Operation {i} of service {i}: " + "reads writes lists files " * 20,
                input={"type": "object", "properties": {"path": {"type": "string"}}},
                execute=lambda i, ctx: "ok",
            )
            for i in range(count)
        }
    )
    step = CodeMode({"build": CodeModeSettings(**settings)})("build", reg.materialize(), reg)
    assert isinstance(step, CodeModeStep)
    return step


async def test_review3_search_refuses_a_huge_query_with_an_error_the_code_reads(tmp_path: Path) -> None:
    step = wide_step(tmp_path, 300)
    code = (
        "try:\n    search('files ' * 500_000)\nexcept ValueError as e:\n    print(e)\nlen(search('x' * 1000))"
    )
    outcome = await settle(step, code)
    assert isinstance(outcome, Completed), outcome
    text = outcome.content[0].text  # type: ignore[union-attr]
    assert "at most 1000 characters (this one has 3000000)" in text and "search('read file')" in text
    assert "Result: 0" in text  # a query at the cap is still answered


async def test_review3_search_in_a_loop_stops_at_the_limit_over_hundreds_of_tools(tmp_path: Path) -> None:
    step = wide_step(tmp_path, 500, max_calls=20)
    code = "n = 0\nwhile True:\n    search('reads files ' * 80)\n    n += 1\n    print(n)"
    with anyio.fail_after(60):
        outcome = await settle(step, code)
    assert isinstance(outcome, Failed), outcome
    assert "called search() more than 20 times" in outcome.error
    assert outcome.partial and outcome.partial[0].text.endswith("\n20\n")  # type: ignore[union-attr]


async def test_review3_search_runs_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.codemode import _execute

    threads: list[int] = []
    real = _execute.search_catalog

    def spy(definitions: Any, query: str) -> Any:
        threads.append(threading.get_ident())
        return real(definitions, query)

    monkeypatch.setattr(_execute, "search_catalog", spy)
    outcome = await settle(wide_step(tmp_path, 3), "len(search('service'))")
    assert isinstance(outcome, Completed) and "Result: 3" in outcome.content[0].text  # type: ignore[union-attr]
    assert threads and threading.get_ident() not in threads


@pytest.mark.parametrize(
    ("code", "limit", "monty_says"),
    [
        ("while True:\n    pass", "interpreter time passed 1 s (the cpu_seconds limit", "TimeoutError"),
        (
            "x = []\nwhile True:\n    x.append('a' * 1000)",
            "more than 32 MiB (the memory limit)",
            "MemoryError",
        ),
        # one allocation so large monty terminates the worker rather than raise in the code
        ("raise ValueError('e' * (50 * 1024 * 1024))", "more than 32 MiB (the memory limit)", "MemoryError"),
        (
            "def f(n):\n    return f(n + 1)\nf(0)",
            "deeper than 400 frames (the recursion limit)",
            "RecursionError",
        ),
        # retrying a refused call without end: every refusal is a round trip to the host
        (
            "while True:\n    try:\n        await tools.nope()\n    except AttributeError:\n        pass",
            "went back to the host too often",
            "suspension limit",
        ),
        (
            "import os\nwhile True:\n    try:\n        os.getenv('HOME')\n    except RuntimeError:\n        pass",
            "went back to the host too often",
            "suspension limit",
        ),
    ],
)
async def test_each_limit_fails_the_call_naming_itself_with_the_partial_output(
    tmp_path: Path, code: str, limit: str, monty_says: str
) -> None:
    step = step_of(tmp_path, max_memory=32 << 20, cpu_seconds=1)
    with anyio.fail_after(60):
        outcome = await settle(step, "print('before')\n" + code)
    assert isinstance(outcome, Failed), outcome
    assert outcome.error.startswith("execute stopped: the code") and limit in outcome.error, outcome.error
    assert monty_says in outcome.error  # the traceback follows: where it stopped
    assert "The code raised an exception" not in outcome.error
    assert outcome.partial == (Text("before\n"),)


async def test_code_cannot_write_files_or_read_the_environment(tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    code = (
        "import os\nfrom pathlib import Path\n"
        f"attempts = [lambda: Path({str(canary)!r}).write_text('pwned'), lambda: open({str(canary)!r}, 'w'),\n"
        f"            lambda: os.makedirs({str(canary)!r}), lambda: os.getenv('HOME'), lambda: os.environ,\n"
        "            lambda: Path('.').resolve(), lambda: __import__('socket')]\n"
        "for attempt in attempts:\n    try:\n        attempt()\n        print('ran')\n"
        "    except Exception as e:\n        print(type(e).__name__)\n"
    )
    outcome = await settle(step_of(tmp_path), code)
    assert isinstance(outcome, Completed), outcome
    refusals = outcome.content[0].text.split()  # type: ignore[union-attr]
    assert "ran" not in refusals and len(refusals) == 7, refusals
    assert not canary.exists()
