"""The span tree of real turns: a Runtime with its SQLite store, real built-in tools and permissions, and a child
session run by the task tool; spans collected by the SDK's in-memory exporter (``conftest.spans``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import StatusCode

from tether import Runtime
from tether.config import Config, parse_config
from tether.errors import ProviderError
from tether.llm import ModelRequest, Usage, UserMessage
from tether.session import PartUpdated, ToolPart, TurnResult
from tether.telemetry import CONTENT_ENV, use_tracer_provider
from tether.testing import FunctionModel, ScriptedModel, Step, tool_call
from tether.tools import Text

from .conftest import Spans

pytestmark = pytest.mark.anyio

SECRET = "heron"


def first_user_text(request: ModelRequest) -> str:
    for message in request.messages:
        if isinstance(message, UserMessage):
            return "".join(p.text for p in message.content if isinstance(p, Text))
    return ""


class Conversations:
    """One model for every session: each conversation (by its first user message) plays its own script."""

    def __init__(self, scripts: Mapping[str, Sequence[Any | Callable[[ModelRequest], Any]]]) -> None:
        self.scripts = {key: list(steps) for key, steps in scripts.items()}
        self.model = FunctionModel(self._step)

    def _step(self, request: ModelRequest) -> Any:
        steps = self.scripts[first_user_text(request)]
        assert steps, f"no step left for {first_user_text(request)!r}"
        step = steps.pop(0)
        return step(request) if callable(step) else step


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text(f"the secret word is {SECRET}\n")
    return root


def config(project: Path) -> Config:
    return parse_config(
        {"permission": {"read": {"*": "allow", "*.env": "deny"}}}, file=str(project / "tether.json")
    )


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def record_content(monkeypatch: pytest.MonkeyPatch, content: bool) -> None:
    """Turn ``TETHER_OTEL_CONTENT`` on or off for the test, whatever the machine's environment says."""
    if content:
        monkeypatch.setenv(CONTENT_ENV, "1")
    else:
        monkeypatch.delenv(CONTENT_ENV, raising=False)


def everything(spans: Spans) -> str:
    """Every attribute and event value of every span, as one text (to look for content)."""
    out: list[str] = []
    for span in spans.all:
        out.extend(str(v) for v in attrs(span).values())
        for event in span.events:
            out.extend(str(v) for v in (event.attributes or {}).values())
    return "\n".join(out)


async def prompt_replying(
    tmp_path: Path,
    project: Path,
    data: dict[str, Any],
    model: ScriptedModel,
    reply: Literal["once", "always", "reject"],
    options: dict[str, Any] | None = None,
) -> TurnResult:
    """Run one turn with the config ``data``, answering every permission ask with ``reply``."""
    from tether.permissions import PermissionAsked

    async with Runtime(
        data_dir=tmp_path / "data", config=parse_config(data, file=str(project / "t.json"))
    ) as rt:
        session = await rt.sessions.create(project)

        def approve(event: PermissionAsked) -> None:
            tg.start_soon(rt.permissions.reply, event.request.id, reply)

        with rt.bus.subscribe(PermissionAsked, approve), anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                result = await session.prompt("go", model=model, options=options)
    return result  # pyright: ignore[reportPossiblyUnboundVariable]


async def run_tree_turn(tmp_path: Path, project: Path) -> str:
    """A turn whose first step calls four tools in parallel: a read that succeeds, a read that fails, a read the
    config denies, and a task whose child session reads; the second step answers. Returns the session id."""
    convo = Conversations(
        {
            "look around": [
                Step(
                    tool_call("read", {"path": "notes.txt"}, id="r1"),
                    tool_call("read", {"path": "missing.txt"}, id="r2"),
                    tool_call("read", {"path": "prod.env"}, id="w1"),
                    tool_call(
                        "task",
                        {"description": "peek", "prompt": "read the notes", "subagent_type": "explore"},
                        id="t1",
                    ),
                    usage=Usage(input_tokens=120, output_tokens=30),
                ),
                "all done",
            ],
            "read the notes": [[tool_call("read", {"path": "notes.txt"}, id="c1")], f"the word is {SECRET}"],
        }
    )
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(20):
            result = await session.prompt("look around", model=convo.model)
        assert result.stop == "done" and result.text == "all done"
        return session.id


async def test_a_turn_is_an_invoke_agent_span_with_a_chat_span_per_step_and_sibling_tool_spans(
    tmp_path: Path, project: Path, spans: Spans
) -> None:
    session_id = await run_tree_turn(tmp_path, project)
    (root,) = spans.roots()
    assert root.name == "invoke_agent build"
    a = attrs(root)
    assert a["gen_ai.operation.name"] == "invoke_agent" and a["gen_ai.agent.name"] == "build"
    assert a["gen_ai.conversation.id"] == session_id and a["gen_ai.provider.name"] == "test"
    assert a["gen_ai.request.model"] == "function" and a["tether.message.id"].startswith("msg_")
    assert (
        a["tether.turn.stop"] == "done" and a["tether.turn.steps"] == 2 and a["tether.turn.tool_calls"] == 4
    )
    assert a["gen_ai.usage.input_tokens"] >= 120
    assert {s.context.trace_id for s in spans.all} == {root.context.trace_id}  # pyright: ignore[reportOptionalMemberAccess]

    first, second = spans.children(root)
    assert first.name == second.name == "chat function"
    c = attrs(first)
    assert (
        c["gen_ai.operation.name"] == "chat" and c["tether.step"] == 1 and attrs(second)["tether.step"] == 2
    )
    assert c["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert c["gen_ai.usage.input_tokens"] == 120 and c["gen_ai.usage.output_tokens"] == 30
    assert c["gen_ai.conversation.id"] == session_id and c["tether.message.id"] != a["tether.message.id"]
    assert attrs(second)["gen_ai.response.finish_reasons"] == ("stop",)
    assert spans.children(second) == []

    # the step's four calls are siblings under its chat span, in the model's order of ids
    calls = {attrs(s)["gen_ai.tool.call.id"]: s for s in spans.children(first)}
    assert set(calls) == {"r1", "r2", "w1", "t1"}
    for call_id, span in calls.items():
        t = attrs(span)
        assert span.name == f"execute_tool {t['gen_ai.tool.name']}"
        assert t["gen_ai.operation.name"] == "execute_tool" and t["gen_ai.tool.call.id"] == call_id
        assert t["tether.message.id"] == c["tether.message.id"] and t["gen_ai.conversation.id"] == session_id

    ok = attrs(calls["r1"])
    assert ok["tether.tool.outcome"] == "completed" and ok["tether.tool.bounded"] is False
    assert ok["tether.permission.decision"] == "allow" and ok["tether.permission.action"] == "read"
    assert calls["r1"].status.status_code is StatusCode.UNSET

    failed = attrs(calls["r2"])
    assert failed["tether.tool.outcome"] == "error" and failed["tether.tool.error_kind"] == "tool"
    assert failed["error.type"] == "tool" and calls["r2"].status.status_code is StatusCode.ERROR

    denied = attrs(calls["w1"])
    assert denied["tether.tool.outcome"] == "error" and denied["tether.tool.error_kind"] == "blocked"
    assert denied["tether.permission.decision"] == "deny" and denied["tether.permission.action"] == "read"
    assert "read *.env deny" in denied["tether.permission.rule"]
    (event,) = [e for e in calls["w1"].events if e.name == "tether.permission"]
    assert (event.attributes or {})["effect"] == "deny" and (event.attributes or {})["asked"] is False

    # the task call's child session nests under the call that ran it, with its own step and call
    task = calls["t1"]
    assert attrs(task)["tether.tool.outcome"] == "completed"
    (child,) = spans.children(task)
    k = attrs(child)
    assert child.name == "invoke_agent explore" and k["tether.session.parent_id"] == session_id
    assert k["tether.session.parent_call_id"] == "t1" and k["gen_ai.conversation.id"] != session_id
    child_first, _child_second = spans.children(child)
    (child_read,) = spans.children(child_first)
    assert attrs(child_read)["gen_ai.tool.call.id"] == "c1"
    assert attrs(child_read)["gen_ai.conversation.id"] == k["gen_ai.conversation.id"]

    # no content by default: no prompt, no arguments, no results, no resources, not the secret the tools read
    text = everything(spans)
    assert (
        SECRET not in text
        and "notes.txt" not in text
        and "prod.env" not in text
        and "look around" not in text
    )
    assert not any(
        key.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.a", "gen_ai.tool.call.r"))
        for s in spans.all
        for key in attrs(s)
    )


async def test_content_is_recorded_only_with_the_env_var(
    tmp_path: Path, project: Path, spans: Spans, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONTENT_ENV, "1")
    await run_tree_turn(tmp_path, project)
    (root,) = spans.roots()
    assert "look around" in attrs(root)["gen_ai.input.messages"]
    assert "all done" in attrs(root)["gen_ai.output.messages"]
    assert attrs(root)["gen_ai.system_instructions"].startswith("[")
    first = spans.children(root)[0]
    assert '"tool_call"' in attrs(first)["gen_ai.output.messages"]
    assert attrs(first)["gen_ai.output.messages"].endswith(
        '"finish_reason": "tool_call"}]'
    )  # the conventions' value
    calls = {attrs(s)["gen_ai.tool.call.id"]: attrs(s) for s in spans.children(first)}
    assert calls["r1"]["gen_ai.tool.call.arguments"] == '{"path": "notes.txt"}'
    assert SECRET in calls["r1"]["gen_ai.tool.call.result"]
    assert "missing.txt" in calls["r2"]["tether.tool.error"]
    (event,) = next(e for e in spans.children(first) if attrs(e)["gen_ai.tool.call.id"] == "w1").events
    assert any("prod.env" in r for r in (event.attributes or {})["resources"])  # pyright: ignore[reportGeneralTypeIssues]


async def test_a_provider_error_marks_the_chat_and_the_turn(
    tmp_path: Path, project: Path, spans: Spans
) -> None:
    model = ScriptedModel([Step("partial", ProviderError("upstream fell over"))])
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        session = await rt.sessions.create(project)
        with pytest.raises(ProviderError), anyio.fail_after(20):
            await session.prompt("hello", model=model)
    (root,) = spans.roots()
    (chat,) = spans.children(root)
    assert chat.status.status_code is StatusCode.ERROR and attrs(chat)["error.type"] == "ProviderError"
    assert attrs(chat)["tether.provider.retryable"] is False
    assert root.status.status_code is StatusCode.ERROR and attrs(root)["error.type"] == "ProviderError"


async def test_a_cancelled_turn_ends_its_spans_with_the_call_aborted(
    tmp_path: Path, project: Path, spans: Spans
) -> None:
    model = ScriptedModel([[tool_call("bash", {"command": "sleep 30"}, id="b1")], "never"])
    async with Runtime(
        data_dir=tmp_path / "data",
        config=parse_config({"permission": {"bash": "allow"}}, file=str(project / "tether.json")),
    ) as rt:
        session = await rt.sessions.create(project)
        started = anyio.Event()

        def on_part(event: PartUpdated) -> None:
            part = event.part
            if isinstance(part, ToolPart) and part.call_id == "b1" and part.state == "running":
                started.set()

        async def prompt() -> None:
            result = await session.prompt("wait", model=model)
            assert result.stop == "cancelled"

        with rt.bus.subscribe(PartUpdated, on_part), anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(prompt)
                await started.wait()
                session.cancel()
    (root,) = spans.roots()
    assert attrs(root)["tether.cancelled"] is True and root.status.status_code is StatusCode.UNSET
    (chat,) = spans.children(root)
    (call,) = spans.children(chat)
    assert (
        attrs(call)["tether.tool.error_kind"] == "aborted" and attrs(call)["tether.tool.interrupted"] is True
    )


async def test_a_sampled_out_turn_records_nothing_and_runs(tmp_path: Path, project: Path) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with use_tracer_provider(provider):
        model = ScriptedModel([[tool_call("read", {"path": "notes.txt"})], "done"])
        async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
            session = await rt.sessions.create(project)
            with anyio.fail_after(20):
                result = await session.prompt("hi", model=model)
    assert result.stop == "done" and result.calls[0].ok
    assert exporter.get_finished_spans() == ()


async def test_without_a_provider_no_turn_is_traced(tmp_path: Path, project: Path) -> None:
    from tether.telemetry._hook import turn_trace

    model = ScriptedModel(["done"])
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        session = await rt.sessions.create(project)
        assert turn_trace(session.info, model) is None  # the OpenTelemetry global is the no-op proxy here
        result = await session.prompt("hi", model=model)
    assert result.text == "done"


async def test_an_asked_call_records_the_ask_and_the_reply_and_the_request_options(
    tmp_path: Path, project: Path, spans: Spans
) -> None:
    data = {"permission": {"read": {"*": "allow", "*.txt": "ask"}}}
    usage = Usage(
        input_tokens=50, output_tokens=7, cache_read_tokens=40, cache_write_tokens=5, reasoning_tokens=3
    )
    model = ScriptedModel([Step(tool_call("read", {"path": "notes.txt"}, id="a1"), usage=usage), "done"])
    options = {"temperature": 0.2, "max_tokens": 99}
    result = await prompt_replying(tmp_path, project, data, model, "once", options=options)
    assert result.calls[0].ok
    (root,) = spans.roots()
    first = spans.children(root)[0]
    c = attrs(first)
    assert c["gen_ai.request.temperature"] == 0.2 and c["gen_ai.request.max_tokens"] == 99
    assert (
        c["gen_ai.usage.cache_read.input_tokens"] == 40 and c["gen_ai.usage.cache_creation.input_tokens"] == 5
    )
    assert c["gen_ai.usage.reasoning.output_tokens"] == 3
    (call,) = spans.children(first)
    t = attrs(call)
    assert t["tether.permission.decision"] == "allow" and t["tether.permission.reply"] == "once"
    assert t["tether.permission.asked"] is True
    asked, replied = [e.attributes or {} for e in call.events if e.name == "tether.permission"]
    assert asked["effect"] == "ask" and "read *.txt ask" in asked["rule"]  # pyright: ignore[reportOperatorIssue]
    assert replied["reply"] == "once" and replied["effect"] == "allow"


async def test_a_call_the_store_never_recorded_as_settled_still_ends_with_its_turn(
    tmp_path: Path, spans: Spans
) -> None:
    # The store refuses every write from the call's result on (a full disk): the part is never recorded settled,
    # so its span ends with the turn, said to be unrecorded, and the turn's span carries the store's error.
    from tether.bus import Bus
    from tether.errors import StoreError
    from tether.output import OutputStore
    from tether.records import DurableEvent
    from tether.session import Sessions
    from tether.store import SQLiteStore
    from tether.telemetry.internal import turn_trace
    from tether.tools import Tool, ToolRegistry, ToolResponse
    from tether.tools import ToolContext as Ctx

    from ..session.conftest import Agent, Loc

    class FullDisk:
        def __init__(self, store: SQLiteStore) -> None:
            self.store = store
            self.full = False

        def append(self, event: DurableEvent) -> None:
            part = getattr(event, "part", None)
            if isinstance(part, ToolPart) and part.state == "completed":
                self.full = True
            if self.full:
                raise StoreError("disk full")
            self.store.append(event)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.store, name)

    async def ok(value: dict[str, Any], ctx: Ctx) -> ToolResponse[Any]:
        return ToolResponse(content="ok")

    async with SQLiteStore(tmp_path / "tether.db") as store:
        registry = ToolRegistry(output=OutputStore(tmp_path / "out"))
        registry.register({"ok": Tool(description="ok", input={"type": "object"}, execute=ok)})
        sessions = Sessions(store=FullDisk(store), bus=Bus(), agents={"build": Agent()}, observe=turn_trace)  # type: ignore[arg-type]
        session = await sessions.create(Loc(registry, tmp_path, tmp_path))
        with pytest.raises(StoreError), anyio.fail_after(20):
            await session.prompt("go", model=ScriptedModel([[tool_call("ok", {}, id="k1")], "never"]))
    (root,) = spans.roots()
    assert attrs(root)["error.type"] == "StoreError"
    (chat,) = spans.children(root)
    (call,) = spans.children(chat)
    assert attrs(call)["tether.tool.outcome"] == "unrecorded"


async def test_a_lone_surrogate_from_the_model_never_makes_a_span_unexportable(
    tmp_path: Path, project: Path, spans: Spans, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model sends a file name with an undecodable byte (a lone surrogate) under a tool name holding one too: the
    # calls fail without running, and the span's text is still valid UTF-8 (an exporter would drop the whole batch).
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    monkeypatch.setenv(CONTENT_ENV, "1")
    model = ScriptedModel(
        [
            [tool_call("read", {"path": "bad\udcff.txt"}, id="s1"), tool_call("re\udcffad", {}, id="s2")],
            "done",
        ]
    )
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(20):
            await session.prompt("go", model=model)
    calls = {attrs(s)["gen_ai.tool.call.id"]: s for s in spans.all if s.name.startswith("execute_tool")}
    # the stored (refused) input, as tether.storable.visible shows it, JSON-encoded
    assert attrs(calls["s1"])["gen_ai.tool.call.arguments"] == '{"path": "bad\\\\xff.txt"}'
    assert calls["s2"].name == "execute_tool re\\xffad"  # as tether.storable.visible shows it
    encode_spans(spans.all).SerializeToString()  # every span encodes
    everything(spans).encode("utf-8")


@pytest.mark.parametrize("content", [False, True])
async def test_review3_an_error_message_is_content_and_stays_out_of_spans_unless_enabled(
    tmp_path: Path, project: Path, spans: Spans, monkeypatch: pytest.MonkeyPatch, content: bool
) -> None:
    # A provider's error quotes what it was sent (here the secret): the message is content, its type is metadata.
    record_content(monkeypatch, content)
    model = ScriptedModel([Step("partial", ProviderError(f"rejected the prompt '{SECRET}'"))])
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        session = await rt.sessions.create(project)
        with pytest.raises(ProviderError), anyio.fail_after(20):
            await session.prompt("hello", model=model)
    (root,) = spans.roots()
    (chat,) = spans.children(root)
    assert attrs(chat)["error.type"] == "ProviderError" and attrs(root)["error.type"] == "ProviderError"
    assert (SECRET in everything(spans)) is content
    assert all(s.status.description == "ProviderError" for s in (root, chat))


@pytest.mark.parametrize("content", [False, True])
async def test_a_saved_approvals_pattern_is_content_because_it_is_an_earlier_calls_text(
    tmp_path: Path, project: Path, spans: Spans, monkeypatch: pytest.MonkeyPatch, content: bool
) -> None:
    # An "always" reply to `bash -c '...'` saves the command's exact text; the next call is allowed by that saved
    # rule. Its pattern is what the model wrote (a token, a path), not configuration: content.
    record_content(monkeypatch, content)
    command = f"bash -c 'echo {SECRET}-token'"
    model = ScriptedModel(
        [
            [tool_call("bash", {"command": command}, id="b1")],
            [tool_call("bash", {"command": command}, id="b2")],
            "done",
        ]
    )
    result = await prompt_replying(tmp_path, project, {"permission": {"bash": "ask"}}, model, "always")
    assert [call.ok for call in result.calls] == [True, True]
    (second,) = [s for s in spans.all if attrs(s).get("gen_ai.tool.call.id") == "b2"]
    t = attrs(second)
    assert t["tether.permission.asked"] is False and "saved" in t["tether.permission.source"]
    if content:
        assert f"bash {command} allow" in t["tether.permission.rule"]
    else:
        assert "bash <saved> allow" in t["tether.permission.rule"]
    assert (SECRET in everything(spans)) is content


async def test_huge_and_unencodable_values_from_outside_are_cut_so_every_span_exports(
    tmp_path: Path,
    project: Path,
    spans: Spans,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A 2 MB prompt, a 3 MB write, a 100,000-character tool name and a call id with a lone surrogate: each value is
    # cut (the store keeps the whole record) and escaped, so the batch stays far below a collector's request limit
    # and the exporter's encoder drops nothing.
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from tether.telemetry._spans import CONTENT_LIMIT, NAME_LIMIT

    monkeypatch.setenv(CONTENT_ENV, "1")
    body = "z" * 3_000_000
    model = ScriptedModel(
        [
            [
                tool_call("write", {"path": "big.txt", "content": body}, id="w1"),
                tool_call("x" * 100_000, {}, id="y" * 5_000),
                tool_call("read", {"path": "notes.txt"}, id="c\udcff1"),
            ],
            "done",
        ]
    )
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(60):
            result = await session.prompt("go " + "q" * 2_000_000, model=model)
    assert [call.ok for call in result.calls] == [True, False, True]
    assert (project / "big.txt").read_text() == body  # the call itself lost nothing
    marker = len("… [1234567 more characters]")
    for span in spans.all:
        assert len(span.name) <= len("execute_tool ") + NAME_LIMIT + marker
        for value in attrs(span).values():
            assert not isinstance(value, str) or len(value) <= 2 * CONTENT_LIMIT + 4 * marker
    calls = {
        attrs(s)["gen_ai.tool.call.id"]: attrs(s) for s in spans.all if s.name.startswith("execute_tool")
    }
    assert calls["w1"]["gen_ai.tool.call.arguments"].endswith(" more characters]")
    assert "c\\xff1" in calls and "y" * NAME_LIMIT + "… [4744 more characters]" in calls
    assert "… [1983619 more characters]" in attrs(spans.roots()[0])["gen_ai.input.messages"]
    caplog.clear()
    encoded = encode_spans(spans.all).SerializeToString()
    assert len(encoded) < 200_000 and not caplog.records  # nothing failed to encode (it would be logged)


async def test_a_prompts_files_are_described_never_their_bytes(
    tmp_path: Path, project: Path, spans: Spans, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from tether.tools import File

    monkeypatch.setenv(CONTENT_ENV, "1")
    image = File.from_bytes(b"\x89PNG" + b"\0" * 30_000, mime="image/png")
    pdf = File(uri="https://example.com/spec.pdf", mime="application/pdf")
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(20):
            await session.prompt([Text("look"), image, pdf], model=ScriptedModel(["seen"]))
    (root,) = spans.roots()
    (message,) = json.loads(attrs(root)["gen_ai.input.messages"])
    assert message["parts"] == [
        {"type": "text", "content": "look"},
        {"type": "file", "mime_type": "image/png", "modality": "image"},
        {"type": "uri", "mime_type": "application/pdf", "modality": "document", "uri": pdf.uri},
    ]
    assert json.loads(attrs(root)["gen_ai.output.messages"])[0]["finish_reason"] == "stop"
