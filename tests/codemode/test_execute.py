"""The execute tool end to end: a scripted model's code calls real tools in a real session; inner calls are
recorded in the execute call's child session; limits and attacks fail the call with a clear message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.session import ToolPart
from tether.tools import Tool

from .conftest import Script, codemode_config, execute, last_tool_text, tool_parts

pytestmark = pytest.mark.anyio


async def run(tmp_path: Path, project: Path, code: str, *, codemode: Any = True, **extra: Any):
    script = Script([execute(code)], lambda request: last_tool_text(request) or "(empty)")
    async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project, codemode, **extra)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(60):
            result = await session.prompt("go", model=script.model)
        (call,) = await tool_parts(session)
        inner: list[ToolPart] = []
        child = call.metadata.get("session_id") if call.metadata else None
        if child is not None:
            inner = await tool_parts(await rt.sessions.get(child))
        return script, result, call, inner


def text(call: ToolPart) -> str:
    return "\n".join(getattr(p, "text", "") for p in call.content)


async def test_the_catalog_is_reduced_to_execute_and_the_code_calls_tools(
    tmp_path: Path, project: Path
) -> None:
    code = (
        "import asyncio\n"
        "names = ['f0.txt', 'f1.txt', 'f2.txt']\n"
        "outs = await asyncio.gather(*[tools.read(path=n) for n in names])\n"
        "print(len(outs))\n"
        "sum(1 for o in outs if 'line' in o) * 2\n"
    )
    script, result, call, inner = await run(tmp_path, project, code)
    assert [d.name for d in script.requests[0].tools] == ["execute"]
    assert "- read(" in script.requests[0].tools[0].description
    assert call.state == "completed", call.error
    assert text(call) == "3\nResult: 6"
    assert call.metadata is not None and call.metadata["calls"] == 3
    assert [p.tool for p in inner] == ["read", "read", "read"]
    assert all(p.state == "completed" for p in inner)
    assert result.text == "3\nResult: 6"


async def test_off_by_default_the_catalog_is_unchanged(tmp_path: Path, project: Path) -> None:
    script = Script("hello")
    async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project, False)) as rt:
        session = await rt.sessions.create(project)
        await session.prompt("go", model=script.model)
    names = [d.name for d in script.requests[0].tools]
    assert "execute" not in names and "read" in names


async def test_pinned_tools_stay_beside_execute(tmp_path: Path, project: Path) -> None:
    script = Script("hello")
    config = codemode_config(project, {"pinned": ["read"]})
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        session = await rt.sessions.create(project)
        await session.prompt("go", model=script.model)
    assert [d.name for d in script.requests[0].tools] == ["execute", "read"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import os\nos.listdir('/')", "PermissionError"),
        ("open('/etc/passwd').read()", "PermissionError"),
        ("import subprocess", "ModuleNotFoundError"),
        ("import socket", "ModuleNotFoundError"),
        ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
        ("x = 'a' * (1024 * 1024 * 1024)", "MemoryError"),
        ("await tools.nope(x=1)", "AttributeError: tools has no tool 'nope'"),
        ("await tools.execute(code='1')", "AttributeError: tools has no tool 'execute'"),
        ("await tools.read('f0.txt')", "keyword arguments only"),
        ("1/0", "ZeroDivisionError"),
        ("def broken(:", "SyntaxError"),
    ],
)
async def test_attacks_and_errors_fail_the_call_with_a_clear_message(
    tmp_path: Path, project: Path, code: str, expected: str
) -> None:
    _, _, call, _ = await run(tmp_path, project, code)
    assert call.state == "error"
    assert call.error is not None and expected in call.error, call.error


async def test_an_infinite_loop_stops_at_the_interpreter_time_limit_with_the_partial_output(
    tmp_path: Path, project: Path
) -> None:
    _, _, call, _ = await run(
        tmp_path, project, "print('before')\nwhile True:\n    pass", codemode={"cpu_seconds": 1}
    )
    assert call.state == "error" and "TimeoutError" in (call.error or "")
    assert "before" in text(call)


async def test_the_wall_time_limit_ends_the_code_and_its_calls(tmp_path: Path, project: Path) -> None:
    code = "print('start')\nawait tools.bash(command='sleep 30', description='wait')"
    _, _, call, inner = await run(
        tmp_path, project, code, codemode={"timeout": 1}, permission={"bash": "allow"}
    )
    assert call.state == "error" and "longer than 1 s" in (call.error or "")
    assert "start" in text(call)
    (bash,) = inner
    assert bash.state == "error" and bash.error_kind == "aborted"


async def test_a_huge_print_is_cut_and_the_content_bounded(tmp_path: Path, project: Path) -> None:
    _, _, call, _ = await run(tmp_path, project, "for i in range(300000):\n    print('x' * 10)")
    assert call.state == "completed", call.error
    body = text(call)
    assert "print output cut" in body
    assert len(body.encode()) <= 60 * 1024  # bounded by settle at the one boundary (50 KiB + marker)
    assert call.output_paths  # the full text is retained


async def test_the_101st_inner_call_fails_the_call(tmp_path: Path, project: Path) -> None:
    code = "for i in range(101):\n    await tools.read(path='f0.txt')"
    _, _, call, inner = await run(tmp_path, project, code)
    assert call.state == "error" and "more than 100 tool calls" in (call.error or "")
    assert len(inner) == 100


async def test_a_denied_inner_call_raises_permission_error_the_code_can_catch(
    tmp_path: Path, project: Path
) -> None:
    code = (
        "try:\n    await tools.bash(command='echo hi', description='x')\n"
        "except PermissionError as e:\n    print('denied:', str(e)[:40])\n"
    )
    _, _, call, inner = await run(
        tmp_path, project, code, permission={"bash": {"*": "allow", "echo *": "deny"}}
    )
    assert call.state == "completed", call.error
    assert text(call).startswith("denied: tools.bash failed")
    (bash,) = inner
    assert bash.state == "error" and bash.error_kind == "blocked"


async def test_malformed_arguments_raise_value_error(tmp_path: Path, project: Path) -> None:
    code = "try:\n    await tools.read(path=5)\nexcept ValueError as e:\n    print('bad input')\n"
    _, _, call, inner = await run(tmp_path, project, code)
    assert text(call) == "bad input"
    assert inner[0].error_kind == "invalid_input"


async def test_an_inner_tool_failure_is_a_runtime_error(tmp_path: Path, project: Path) -> None:
    code = "try:\n    await tools.read(path='missing.txt')\nexcept RuntimeError as e:\n    print('failed')\n"
    _, _, call, _ = await run(tmp_path, project, code)
    assert text(call) == "failed"


async def test_search_finds_tools_with_their_schemas(tmp_path: Path, project: Path) -> None:
    code = "r = search('read a file')\nr[0]['name'], 'properties' in r[0]['input_schema']"
    _, _, call, _ = await run(tmp_path, project, code)
    assert call.state == "completed", call.error
    assert "read" in text(call) and "true" in text(call)


async def test_the_child_session_is_linked_to_the_execute_call(tmp_path: Path, project: Path) -> None:
    script = Script([execute("await tools.read(path='f0.txt')", id="ex1")], "done")
    async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project)) as rt:
        session = await rt.sessions.create(project)
        await session.prompt("go", model=script.model)
        (call,) = await tool_parts(session)
        assert call.metadata is not None
        stored = await rt.store.get_session(call.metadata["session_id"])
        assert stored.parent_id == session.id and stored.parent_call_id == "ex1"
        assert stored.title.startswith("execute: await tools.read")


async def test_a_tool_the_agent_denies_is_not_in_tools_and_never_runs(tmp_path: Path, project: Path) -> None:
    canary = tmp_path / "canary.txt"
    code = (
        f"for call in (lambda: tools.bash(command='touch {canary}', description='x'),\n"
        f"             lambda: tools.write(path={str(canary)!r}, content='pwned')):\n"
        "    try:\n        await call()\n    except AttributeError as e:\n        print(str(e).split(':')[0])\n"
        "[r['name'] for r in search('run a shell command write a file')]"
    )
    permission = {"bash": "deny", "edit": "deny", "external_directory": "allow"}
    script, _, call, inner = await run(tmp_path, project, code, permission=permission)
    assert call.state == "completed", call.error
    assert text(call).startswith("tools has no tool 'bash'\ntools has no tool 'write'\n")
    assert '"bash"' not in text(call) and '"write"' not in text(call)  # search does not find them either
    description = script.requests[0].tools[0].description
    assert "- bash(" not in description and "- write(" not in description and "- read(" in description
    assert inner == [] and not canary.exists()


async def test_hostile_arguments_are_recorded_as_storable_input(tmp_path: Path, project: Path) -> None:
    # a cycle, nesting deeper than JSON encoders recurse, bytes, a set, NaN, lone surrogates and a NUL byte
    code = (
        "cycle = []\ncycle.append(cycle)\ndeep = []\nfor i in range(100_000):\n    deep = [deep]\n"
        "await tools.sink(cycle=cycle, deep=deep, raw=b'\\xff', s={1}, nan=float('nan'), "
        "text='\\ud800 a\\x00b', **{'\\udc00': 1})"
    )
    script = Script([execute(code)], last_tool_text)
    sink = Tool(description="Sink", input={"type": "object"}, execute=lambda i, ctx: "taken")
    async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project)) as rt:
        with rt.tools.register({"sink": sink}):
            session = await rt.sessions.create(project)
            with anyio.fail_after(60):
                result = await session.prompt("go", model=script.model)
            (call,) = await tool_parts(session)
            assert call.metadata is not None
            (inner,) = await tool_parts(await rt.sessions.get(call.metadata["session_id"]))
    assert result.text == "Result: taken" and inner.state == "completed"
    assert isinstance(inner.input, dict) and inner.input["cycle"] == ["[...]"] and inner.input["s"] == "{1}"
    assert json.dumps(inner.input)  # what the store holds reads back as JSON
