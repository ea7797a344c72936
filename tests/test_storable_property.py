"""Law 12 as a property: whatever text a model sends (any JSON, lone surrogates, NUL and control characters, deep
nesting within the providers' limit), whatever bytes a tool prints and whatever bytes a file name holds, every text
that reaches the store is storable (valid Unicode), and ``tether session show``, ``--json``, ``export`` and the
server's API render it.

Each example runs a real turn (a scripted model, the real ``bash``, ``glob`` and ``read`` tools, a tool of the test's)
into one SQLite store, reads the records back, runs the CLI commands in-process (a subprocess per example would be
too slow: ``tests/test_storable_scenario.py`` runs them for real) with a strict UTF-8 stdout, as a pipe has, and asks
a real server on 127.0.0.1 over HTTP.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.test_storable_scenario import serving, showable, strings

from tether import Runtime
from tether.config import parse_config
from tether.llm.providers._common import MAX_DEPTH
from tether.records._model import message_to_json, part_to_json
from tether.storable import has_surrogates, storable
from tether.testing import Reasoning, ScriptedModel, invalid_call, tool_call
from tether.tools import Text, Tool, ToolFailure, ToolResponse

SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
CONTROLS = st.characters(max_codepoint=0x1F) | st.sampled_from("\x7f\x9b\u202e\u2066")
texts = st.text(st.characters() | SURROGATES | CONTROLS, max_size=16)
"""Any text a model can send: JSON's ``\\uXXXX`` escapes reach every code point, a lone surrogate included."""
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=24,
)
inputs = st.dictionaries(texts, json_values, max_size=5)
names = st.binary(min_size=1, max_size=24).filter(
    lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b"..")
)


def deep(depth: int) -> dict[str, Any]:
    """An input nested ``depth`` objects deep with a lone surrogate at the bottom."""
    value: Any = "bottom \ud800"
    for _ in range(depth - 1):
        value = {"k": value}
    return {"deep": value}


async def echo(value: dict[str, Any], ctx: Any) -> ToolResponse[Any]:
    """A tool of the test's: its content, title and metadata hold what it was given."""
    text = json.dumps(value, ensure_ascii=False)
    return ToolResponse(content=[Text(text)], title=text[:40], metadata={text[:20]: [text]})


async def refuse(value: dict[str, Any], ctx: Any) -> ToolResponse[Any]:
    raise ToolFailure("refused: " + str(value.get("why")))


TOOLS = {
    "echo": Tool(description="Echo", input={"type": "object"}, execute=echo),
    "refuse": Tool(description="Refuse", input={"type": "object"}, execute=refuse),
}
CONFIG = parse_config({"permission": {"bash": "allow", "read": "allow", "glob": "allow"}}, file="tether.json")


@contextmanager
def strict_stdout() -> Generator[io.BytesIO]:
    """``sys.stdout`` as a pipe has it: UTF-8, strict (what ``--json`` failed on)."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    saved = sys.stdout
    sys.stdout = stream
    try:
        yield raw
    finally:
        sys.stdout = saved
        stream.detach()


def rendered(command: Any, **options: Any) -> str:
    with strict_stdout() as raw:
        command(**options)
    return raw.getvalue().decode("utf-8")  # strict: a lone surrogate never reaches the output


def test_any_text_from_a_model_a_tool_or_a_file_name_is_stored_storable_and_rendered(tmp_path: Path) -> None:
    from tether.cli._sessions import export_command, show_command

    project = tmp_path / "project"
    project.mkdir()
    data_dir = tmp_path / "data"
    count = iter(range(1_000_000))

    async def turn(
        sub: str, value: dict[str, Any], said: str, printed: bytes, name: bytes
    ) -> tuple[str, list[Any]]:
        where = project / sub
        where.mkdir()
        (where / "printed.bin").write_bytes(printed)
        (where / os.fsdecode(name)).write_bytes(printed)
        shown_name = storable(os.fsdecode(name))
        model = ScriptedModel(
            [
                [
                    Reasoning(said),
                    said,
                    tool_call("echo", value),
                    tool_call(
                        "bash", {"command": f"cat {shlex.quote(sub)}/printed.bin", "description": said}
                    ),
                    tool_call("glob", {"pattern": "*", "path": sub}),
                    tool_call("read", {"path": f"{sub}/{shown_name}"}),
                    tool_call("refuse", {"why": said}),
                    invalid_call("echo", "{" + said),
                    tool_call("echo" + said, value),
                ],
                said,
            ]
        )
        async with Runtime(data_dir=data_dir, config=CONFIG, plugins=False) as rt:
            with rt.tools.register(TOOLS):
                session = await rt.sessions.create(project)
                with model, anyio.fail_after(120):
                    await session.prompt(said or "go", model=model)
                await rt.store.flush()
                messages = await rt.store.load_messages(session.id)
                info = await rt.store.get_session(session.id)
        stored = [info.title] + [
            {"info": message_to_json(m.info), "parts": [part_to_json(p) for p in m.parts]} for m in messages
        ]
        return session.id, stored

    with serving(data_dir, project) as (client, _):

        @settings(
            max_examples=int(os.environ.get("TETHER_STORABLE_EXAMPLES", "25")),
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(value=inputs, said=texts, printed=st.binary(max_size=300), name=names)
        @example(
            value=deep(MAX_DEPTH - 2), said="\ud800\x00\x1b[2J", printed=b"\xff\x00\x1b[31m", name=b"\xff"
        )
        def check(value: dict[str, Any], said: str, printed: bytes, name: bytes) -> None:
            session_id, stored = anyio.run(turn, f"sub{next(count)}", value, said, printed, name)
            # every text that reached the store is storable (a session's directory is kept exact: not one here)
            assert [s for s in strings(stored) if has_surrogates(s)] == []

            text = rendered(show_command, data_dir=data_dir, session_id=session_id, as_json=False)
            assert "\x1b" not in text and session_id in text
            shown = json.loads(rendered(show_command, data_dir=data_dir, session_id=session_id, as_json=True))
            exported = json.loads(
                rendered(export_command, data_dir=data_dir, session_id=session_id, output=None)
            )
            assert shown["session"]["id"] == exported["session"]["id"] == session_id
            (step, *_) = [i for i in shown["timeline"] if i["type"] == "step"]
            tools = [p["tool"] for p in step["parts"] if p["type"] == "tool"]
            assert tools[:7] == ["echo", "bash", "glob", "read", "refuse", "echo", storable("echo" + said)]

            for document in (
                client.session(session_id),
                client.messages(session_id),
                client.export(session_id),
                shown,
                exported,
            ):
                showable(document)

        check()
