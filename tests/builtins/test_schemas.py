"""The built-in tools' input schemas are committed (``builtins/_schemas.py``, issue 38): a Location shows them to the
model without generating them, and a model's validator is built at its tool's first call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from tether.builtins import BuiltinDeps, builtin_tools
from tether.builtins._schema_data import SCHEMAS, TOOLS
from tether.builtins._schemas import (
    DEFERRED,
    MODELS,
    CommittedCodec,
    _key,  # pyright: ignore[reportPrivateUsage]
    committed_codec,
    generate,
    generate_definitions,
)
from tether.builtins.question import executor as question_executor
from tether.tools.internal import PydanticCodec


def test_the_committed_schemas_are_what_the_models_generate() -> None:
    assert set(SCHEMAS) == set(MODELS)
    assert SCHEMAS == generate(), "a built-in tool's input model changed: run scripts/builtin_schemas.py"


def test_the_committed_definitions_are_what_each_make_builds() -> None:
    # description, timeout, permission action and models of each tool whose module loads at its first call
    assert set(TOOLS) == set(DEFERRED)
    assert TOOLS == generate_definitions(), "a built-in tool's make changed: run scripts/builtin_schemas.py"


def test_a_definition_needs_committed_models() -> None:
    with pytest.raises(TypeError, match="committed schemas"):
        _key(PydanticCodec(TypeAdapter(int)))


def test_the_question_executor_needs_the_question_service(tmp_path: Path) -> None:
    service: Any = object()
    with pytest.raises(ValueError, match="question service"):
        question_executor(BuiltinDeps(location=service, permissions=service, output=service))


@pytest.mark.parametrize("sandbox", [None, "auto"])
def test_the_registered_bash_shows_what_bash_make_builds(sandbox: Any) -> None:
    from tether.builtins import bash

    service: Any = object()
    deps = BuiltinDeps(
        location=service, permissions=service, output=service, shell="/bin/zsh", sandbox=sandbox
    )
    registered, made = builtin_tools(deps)["bash"], bash.make(deps)
    assert registered.description == made.description and "zsh -c" in made.description
    assert (registered.timeout, registered.permission, registered.idempotent) == (None, None, False)
    assert (made.timeout, made.permission, made.idempotent) == (None, None, False)
    assert registered.input_codec.schema == made.input_codec.schema


def test_the_registered_task_shows_what_task_build_builds() -> None:
    # registered before its module loads (issue 38): the same description, models, deadline and permission action
    from tether.builtins import task
    from tether.session.internal import Subagent

    service: Any = object()
    for subagents in ((), (Subagent(name="general", description="Searches and edits."),)):
        deps = BuiltinDeps(
            location=service, permissions=service, output=service, children=service, subagents=subagents
        )
        registered, made = builtin_tools(deps)["task"], task.build(service, service, subagents)
        assert registered.description == made.description
        assert (registered.timeout, registered.permission, registered.idempotent) == (None, "task", False)
        assert (made.timeout, made.permission, made.idempotent) == (None, "task", False)
        assert registered.input_codec.schema == made.input_codec.schema
        assert registered.output_codec is not None and made.output_codec is not None
        assert registered.output_codec.schema == made.output_codec.schema


def test_each_builtin_tool_shows_its_committed_schema(project: Any) -> None:
    generated = generate()
    shown = {name: tool.input_codec for name, tool in project.tools.items()}
    assert {"read", "edit", "write", "apply_patch", "glob", "grep", "list", "webfetch"} <= set(shown)
    for name, codec in shown.items():
        key = next(k for k in MODELS if k.split(":")[1].lower() == name.replace("_", "") + "input")
        assert isinstance(codec, CommittedCodec) and codec.schema == generated[key], name
        assert codec.key == key  # a deferred tool names its model by key: its module is not imported yet


@pytest.mark.anyio
async def test_a_call_validates_its_input_through_the_model(project: Any) -> None:
    (project.root / "a.txt").write_text("one\ntwo\n")
    assert "two" in await project.text("read", path=str(project.root / "a.txt"))
    failed = await project.fail("read", path=str(project.root / "a.txt"), offset="x")
    assert "offset" in str(failed)


_BUILD = """
import sys
from pathlib import Path
from tether.builtins import BuiltinDeps, builtin_tools
from tether.builtins.read import ReadInput
from tether.location import Location
from tether.output import OutputStore

tools = builtin_tools(BuiltinDeps(
    location=Location(Path(sys.argv[1])), permissions=None, output=OutputStore(Path(sys.argv[2]))
))
codec = tools["read"].input_codec
print(ReadInput.__pydantic_complete__, codec._adapter is None)
codec.decode({"path": "a.txt"})
print(codec._adapter is None)
"""


def test_building_the_tools_builds_no_input_validator(tmp_path: Path) -> None:
    # a fresh process: the models of a no-tool run are declared, never built (~0.25 ms each)
    argv = [sys.executable, "-c", _BUILD, str(tmp_path), str(tmp_path / "out")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "False"]


def test_a_model_with_no_committed_schema_gets_a_generated_one() -> None:
    class Added(BaseModel):
        """A model added since the schemas were written."""

        name: str

    codec = committed_codec(Added)
    assert not isinstance(codec, CommittedCodec)
    assert codec.schema["required"] == ["name"] and codec.decode({"name": "x"}) == Added(name="x")


_DEFERRED = """
import sys
from pathlib import Path


from tether.builtins import BuiltinDeps, builtin_tools
from tether.location import Location
from tether.output import OutputStore

deps = BuiltinDeps(
    location=Location(Path(sys.argv[1])), permissions=None, output=OutputStore(Path(sys.argv[2])), todos=object()
)
tools = builtin_tools(deps)
modules = ("read", "write", "edit", "glob", "todoread", "bash", "_shell_run")
print(sorted(name for name in modules if f"tether.builtins.{name}" in sys.modules))
print(sorted(tools))
"""


def test_building_the_tools_loads_no_deferred_tool_module(tmp_path: Path) -> None:
    # a fresh process: a run that calls no tool imports none of their modules (issue 38); a call loads its module
    argv = [sys.executable, "-c", _DEFERRED, str(tmp_path), str(tmp_path / "out")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded, names = done.stdout.splitlines()
    assert loaded == "[]"
    assert "'read'" in names and "'todowrite'" in names and "'bash'" in names


@pytest.mark.anyio
async def test_a_deferred_tool_runs_its_module_at_the_first_call(project: Any) -> None:
    (project.root / "b.txt").write_text("alpha\n")
    assert "alpha" in await project.text("read", path=str(project.root / "b.txt"))
    assert "b.txt" in await project.text("glob", pattern="*.txt")
