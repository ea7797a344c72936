"""``@tool``: the input model, description and output built from a function, run through the real settle pipeline."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from tether.errors import ToolFailure, UsageError
from tether.tools import (
    Completed,
    Failed,
    Text,
    Tool,
    ToolCall,
    ToolContext,
    ToolRegistry,
    ToolResponse,
    tool,
)


async def settle(
    registry: ToolRegistry, t: Tool[Any, Any], input: Any, ctx: ToolContext
) -> Completed | Failed:
    with registry.register({"t": t}):
        return await registry.materialize().settle(ToolCall(call_id="call_1", name="t", input=input), ctx)


def props(t: Tool[Any, Any]) -> dict[str, Any]:
    return t.input_codec.schema["properties"]


# -- docstrings ----------------------------------------------------------------------------------------------------


def test_google_docstring_gives_the_description_and_parameter_descriptions() -> None:
    @tool
    def grep_count(pattern: str, path: str = ".") -> str:
        """Count the lines matching a pattern.

        Reads every file under the path.

        Args:
            pattern: the regular expression
                to search for.
            path: where to search.

        Returns:
            The count.
        """
        return ""

    assert grep_count.description == "Count the lines matching a pattern.\n\nReads every file under the path."
    assert props(grep_count)["pattern"]["description"] == "the regular expression to search for."
    assert props(grep_count)["path"].items() >= {"default": ".", "description": "where to search."}.items()
    assert grep_count.input_codec.schema["required"] == ["pattern"]


def test_numpy_docstring_parameters_are_read() -> None:
    @tool
    def area(width: float, height: float) -> float:
        """Area of a rectangle.

        Parameters
        ----------
        width : float
            The width in metres.
        height : float
            The height in metres.
        """
        return width * height

    assert area.description == "Area of a rectangle."
    assert props(area)["width"]["description"] == "The width in metres."
    assert props(area)["height"]["description"] == "The height in metres."


def test_sphinx_docstring_parameters_are_read() -> None:
    @tool
    def fetch(url: str, retries: int = 2) -> str:
        """Fetch a page.

        :param url: the address to fetch.
        :param retries: how many times to retry.
        :returns: the body.
        """
        return url

    assert fetch.description == "Fetch a page."
    assert props(fetch)["url"]["description"] == "the address to fetch."
    assert props(fetch)["retries"]["description"] == "how many times to retry."


def test_annotated_field_description_wins_over_the_docstring() -> None:
    @tool
    def scale(factor: Annotated[int, Field(description="from Field", gt=0)] = 2) -> str:
        """Scale.

        Args:
            factor: from the docstring.
        """
        return str(factor)

    assert props(scale)["factor"]["description"] == "from Field"
    assert props(scale)["factor"]["exclusiveMinimum"] == 0
    assert props(scale)["factor"]["default"] == 2


def test_explicit_description_replaces_the_docstring_and_documents_a_tool_without_one() -> None:
    @tool(description="Say hello")
    def hello(name: str) -> str:
        return f"hello {name}"

    assert hello.description == "Say hello"
    assert "description" not in props(hello)["name"]


def test_docstring_without_sections_is_the_whole_description() -> None:
    @tool
    def ping() -> str:
        """Answer pong. Use it to check the tool path."""
        return "pong"

    assert ping.description == "Answer pong. Use it to check the tool path."
    assert ping.input_codec.schema["properties"] == {}


# -- input ---------------------------------------------------------------------------------------------------------


class Point(BaseModel):
    x: int
    y: int


def test_pydantic_types_optional_and_keyword_only_parameters_form_the_input_model() -> None:
    @tool
    def move(to: Point, mode: Literal["walk", "run"] = "walk", *, note: str | None = None) -> str:
        """Move."""
        return ""

    schema = move.input_codec.schema
    assert schema["required"] == ["to"]
    assert props(move)["mode"]["enum"] == ["walk", "run"]
    assert "note" in props(move) and "note" not in schema["required"]


@pytest.mark.anyio
async def test_arguments_reach_the_function_decoded_with_defaults(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    seen: list[Any] = []

    @tool
    def move(to: Point, /, mode: str = "walk", *, note: str | None = None) -> str:
        """Move."""
        seen.append((to, mode, note))
        return f"moved to {to.x},{to.y} by {mode}"

    outcome = await settle(registry, move, {"to": {"x": 1, "y": 2}, "note": "n"}, ctx)
    assert isinstance(outcome, Completed)
    assert outcome.content == (Text("moved to 1,2 by walk"),)
    assert seen == [(Point(x=1, y=2), "walk", "n")]


@pytest.mark.anyio
async def test_invalid_input_never_reaches_the_function(registry: ToolRegistry, ctx: ToolContext) -> None:
    called: list[int] = []

    @tool
    def double(n: int) -> int:
        """Double a number."""
        called.append(n)
        return n * 2

    outcome = await settle(registry, double, {"n": "many"}, ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "invalid_input"
    assert "n: Input should be a valid integer" in outcome.error
    assert called == []


def test_unannotated_parameters_accept_any_json() -> None:
    @tool
    def echo(value) -> str:  # type: ignore[no-untyped-def]
        """Echo."""
        return str(value)

    assert echo.input_codec.decode({"value": [1, "a"]}).value == [1, "a"]


# -- context -------------------------------------------------------------------------------------------------------


@dataclass
class Deps:
    greeting: str


@pytest.mark.anyio
async def test_a_first_tool_context_parameter_receives_the_context_and_is_not_input(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    @tool
    async def greet(ctx: ToolContext[Deps], name: str) -> str:
        """Greet someone."""
        return f"{ctx.deps.greeting} {name} from {ctx.root.name} ({ctx.call_id})"

    assert list(props(greet)) == ["name"]
    ctx = ToolContext[Deps](
        session_id="ses_1",
        agent="build",
        message_id="msg_1",
        call_id="call_9",
        deps=Deps("hi"),
        location_root=tmp_path,
    )
    outcome = await settle(registry, greet, {"name": "ada"}, ctx)
    assert isinstance(outcome, Completed)
    assert outcome.content == (Text(f"hi ada from {tmp_path.name} (call_9)"),)


@pytest.mark.anyio
async def test_registration_deps_win_over_the_context_deps(registry: ToolRegistry, ctx: ToolContext) -> None:
    @tool
    def which(ctx: ToolContext[str]) -> str:
        """Say which deps."""
        return ctx.deps

    @tool
    async def which_async(ctx: ToolContext[str]) -> str:
        """Say which deps."""
        return ctx.deps

    for t in (which, which_async):
        with registry.register({"t": t}, deps="registration"):
            step = registry.materialize()
            outcome = await step.settle(ToolCall(call_id="c", name="t", input={}), ctx)
        assert isinstance(outcome, Completed) and outcome.content == (Text("registration"),)


@pytest.mark.anyio
async def test_root_and_ask_outside_a_session_fail_closed(registry: ToolRegistry, ctx: ToolContext) -> None:
    @tool
    async def deploy(ctx: ToolContext, target: str) -> str:
        """Deploy."""
        await ctx.ask("deploy", target)
        return "deployed"

    @tool
    def where(ctx: ToolContext) -> str:
        """Where am I."""
        return str(ctx.root)

    outcome = await settle(registry, deploy, {"target": "prod"}, ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "blocked"
    assert outcome.error.startswith("Permission denied: deploy. This call runs without a permission service")
    outcome = await settle(registry, where, {}, ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "defect"
    assert "ctx.root is unknown" in outcome.error


@pytest.mark.anyio
@pytest.mark.parametrize(("action", "resources"), [("", "prod"), ("deploy", []), ("deploy", ["prod", ""])])
async def test_ask_refuses_an_empty_action_or_resource(action: str, resources: Any, ctx: ToolContext) -> None:
    with pytest.raises(UsageError, match=r"ctx\.ask"):
        await ctx.ask(action, resources)


@pytest.mark.anyio
async def test_ask_passes_the_request_to_the_asker_with_exact_save_patterns(ctx: ToolContext) -> None:
    asked: list[tuple[Any, ...]] = []

    async def asker(c: ToolContext, action: str, resources: Any, save: Any, metadata: Any) -> None:
        asked.append((c.call_id, action, resources, save, metadata))

    c = ToolContext(session_id="s", agent="a", message_id="m", call_id="c1", asker=asker)
    await c.ask("deploy", "prod")
    await c.ask("deploy", ["a", "b"], save=["*"], metadata={"why": "test"})
    assert asked == [
        ("c1", "deploy", ("prod",), ("prod",), None),
        ("c1", "deploy", ("a", "b"), ("*",), {"why": "test"}),
    ]


# -- output --------------------------------------------------------------------------------------------------------


class Stats(BaseModel):
    lines: int
    words: int


@pytest.mark.anyio
async def test_a_model_return_is_the_declared_output_and_json_content(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    @tool
    async def stats(text: str) -> Stats:
        """Count lines and words."""
        return Stats(lines=text.count("\n") + 1, words=len(text.split()))

    assert stats.output_codec is not None and stats.output_codec.schema["required"] == ["lines", "words"]
    outcome = await settle(registry, stats, {"text": "a b\nc"}, ctx)
    assert isinstance(outcome, Completed)
    assert outcome.output == {"lines": 2, "words": 3}
    assert json.loads(outcome.content[0].text) == {"lines": 2, "words": 3}  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_wrong_return_value_never_succeeds(registry: ToolRegistry, ctx: ToolContext) -> None:
    @tool
    def broken() -> int:
        """Return an int."""
        return "not a number"  # type: ignore[return-value]

    outcome = await settle(registry, broken, {}, ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "invalid_output"


@pytest.mark.anyio
async def test_tool_response_annotation_declares_its_output(registry: ToolRegistry, ctx: ToolContext) -> None:
    @tool
    def count(text: str) -> ToolResponse[int]:
        """Count words."""
        n = len(text.split())
        return ToolResponse(output=n, content=f"{n} words", metadata={"n": n})

    @tool
    def note(text: str) -> ToolResponse:
        """Note."""
        return ToolResponse(content=f"noted: {text}")

    assert count.output_codec is not None and count.output_codec.schema == {"type": "integer"}
    assert note.output_codec is None
    outcome = await settle(registry, count, {"text": "a b c"}, ctx)
    assert isinstance(outcome, Completed) and outcome.output == 3 and outcome.content == (Text("3 words"),)
    outcome = await settle(registry, note, {"text": "x"}, ctx)
    assert isinstance(outcome, Completed) and outcome.content == (Text("noted: x"),)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "content"),
    [
        (None, "(no output)"),
        ("plain", "plain"),
        ({"a": 1}, '{"a":1}'),
        ([Text("part")], "part"),
        (ToolResponse(content="resp"), "resp"),
    ],
)
async def test_without_a_return_annotation_values_become_content(
    registry: ToolRegistry, ctx: ToolContext, value: Any, content: str
) -> None:
    @tool
    def loose():  # type: ignore[no-untyped-def]
        """Return anything."""
        return value

    assert loose.output_codec is None
    outcome = await settle(registry, loose, {}, ctx)
    assert isinstance(outcome, Completed) and outcome.content == (Text(content),)


@pytest.mark.anyio
async def test_a_none_return_answers_no_output(registry: ToolRegistry, ctx: ToolContext) -> None:
    done: list[str] = []

    @tool
    def touch(name: str) -> None:
        """Remember a name."""
        done.append(name)

    outcome = await settle(registry, touch, {"name": "a"}, ctx)
    assert isinstance(outcome, Completed) and outcome.content == (Text("(no output)"),) and done == ["a"]


@pytest.mark.anyio
async def test_content_annotations_are_not_declared_outputs(registry: ToolRegistry, ctx: ToolContext) -> None:
    @tool
    def parts() -> list[Text]:
        """Return parts."""
        return [Text("a"), Text("b")]

    @tool
    def either() -> str | tuple[Text, ...]:
        """Return text."""
        return "x"

    @tool
    def maybe() -> Point | None:
        """Return a point or nothing."""
        return None

    assert parts.output_codec is None and either.output_codec is None
    assert maybe.output_codec is not None  # a union that is not all content is a declared output
    outcome = await settle(registry, parts, {}, ctx)
    assert isinstance(outcome, Completed) and outcome.content == (Text("a"), Text("b"))


# -- execution -----------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sync_functions_run_in_a_worker_thread_and_async_ones_on_the_loop(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    loop_thread = threading.get_ident()

    @tool
    def sync_where() -> str:
        """Thread."""
        return "worker" if threading.get_ident() != loop_thread else "loop"

    @tool
    async def async_where() -> str:
        """Thread."""
        return "worker" if threading.get_ident() != loop_thread else "loop"

    sync_outcome = await settle(registry, sync_where, {}, ctx)
    async_outcome = await settle(registry, async_where, {}, ctx)
    assert isinstance(sync_outcome, Completed) and sync_outcome.content == (Text("worker"),)
    assert isinstance(async_outcome, Completed) and async_outcome.content == (Text("loop"),)


@pytest.mark.anyio
async def test_tool_failure_reaches_the_model_and_timeout_applies(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    import anyio

    @tool
    def missing(path: str) -> str:
        """Read."""
        raise ToolFailure(f"File not found: {path}")

    @tool(timeout=0.05)
    async def slow() -> str:
        """Sleep."""
        await anyio.sleep(10)
        return "late"

    outcome = await settle(registry, missing, {"path": "x"}, ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "tool" and outcome.error == "File not found: x"
    assert slow.timeout == 0.05
    outcome = await settle(registry, slow, {}, ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "timeout"


def test_permission_and_timeout_options_reach_the_tool() -> None:
    @tool(permission="edit", timeout=None)
    def save(text: str) -> str:
        """Save."""
        return text

    assert save.permission == "edit" and save.timeout is None


def test_a_tool_has_no_name_and_is_named_when_registered(registry: ToolRegistry) -> None:
    @tool
    def line_count(path: str) -> int:
        """Count lines."""
        return 0

    assert isinstance(line_count, Tool) and not hasattr(line_count, "name")
    with registry.register({"count_lines": line_count}):
        (definition,) = registry.materialize().definitions
    assert definition.name == "count_lines" and definition.description == "Count lines."


# -- errors at decoration time -------------------------------------------------------------------------------------


def test_star_args_are_refused() -> None:
    with pytest.raises(UsageError, match=r"\*args in f\(\): declare each parameter"):

        @tool
        def f(*args: int) -> str:
            """F."""
            return ""

    with pytest.raises(UsageError, match=r"\*\*kwargs in g\(\)"):

        @tool
        def g(a: int, **kwargs: int) -> str:
            """G."""
            return ""


def test_context_must_be_the_first_parameter() -> None:
    with pytest.raises(
        UsageError, match=r"ToolContext parameter of f\(\) must be its first parameter \('ctx'"
    ):

        @tool
        def f(a: int, ctx: ToolContext) -> str:
            """F."""
            return ""


def test_a_tool_without_docstring_or_description_is_refused() -> None:
    with pytest.raises(UsageError, match=r"needs a description for f\(\)"):

        @tool
        def f() -> str:
            return ""

    with pytest.raises(UsageError, match="needs a description"):
        tool(description="  ")(lambda: "")


def test_an_unresolvable_annotation_is_refused_with_the_function_name() -> None:
    def f(a: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
        """F."""
        return ""

    with pytest.raises(UsageError, match=r"cannot resolve the annotations of f\(\).*Missing"):
        tool(f)


def test_a_type_pydantic_cannot_model_is_refused_with_the_function_name() -> None:
    with pytest.raises(TypeError, match=r"input model of f\(\)"):

        @tool
        def f(lock: threading.Lock) -> str:  # type: ignore[valid-type]
            """F."""
            return ""


def test_a_non_callable_is_refused() -> None:
    with pytest.raises(UsageError, match="decorates a function"):
        tool(42)  # type: ignore[call-overload]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_default_json_has_no_form_for_is_refused_when_decorating(bad: float) -> None:
    """A NaN or infinite default would be in every request's schema, and every request would fail to encode."""
    with pytest.raises(TypeError, match=r"not JSON .*NaN or infinity"):

        @tool
        def f(x: float = bad) -> str:
            """Scale."""
            return str(x)


def test_a_raw_json_schema_with_a_nan_default_is_refused_by_the_tool_itself() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "number", "default": float("nan")}}}
    with pytest.raises(TypeError, match="not JSON"):
        Tool(description="d", input=schema, execute=lambda inp, ctx: "ok")


def test_a_parameter_named_with_a_leading_underscore_is_refused_not_dropped() -> None:
    """pydantic keeps ``_user_id`` private: it would vanish from the schema and every call would fail."""
    with pytest.raises(UsageError, match=r"parameter '_user_id' of f\(\) starts with '_'"):

        @tool
        def f(_user_id: str) -> str:
            """Look a user up."""
            return _user_id
