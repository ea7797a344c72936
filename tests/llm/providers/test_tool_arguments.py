"""A call's arguments are parsed once, where the adapter builds its ``ToolCallEvent``; the session uses that parse.

A real session replays a real Chat Completions stream from 127.0.0.1 through the real adapter. Every JSON decode is
counted by a counting wrapper around the standard decoder (the real decoder still runs): each call's argument text
is decoded exactly once. Invalid arguments never run and the model reads why (law 2); arguments holding a lone
surrogate are invalid input and never run either.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from tether import Runtime
from tether.llm.providers import ClientSettings, OpenAIChatModel
from tether.tools import Tool, ToolContext, ToolResponse

from ._replay import Reply, replay_server, stream_bytes

RECORDED = "openai_chat/openai-python__parallel_tool_calls_gpt-4o.sse"


class Weather(BaseModel):
    city: str
    country: str
    units: str = "c"


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    data = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [choice]}
    return f"data: {json.dumps(data)}\n\n".encode()


def calls_stream(*arguments: str) -> bytes:
    """One step calling ``GetWeatherArgs`` once per argument text, each text split in two deltas."""
    out = [chunk({"role": "assistant", "content": None})]
    for i, text in enumerate(arguments):
        head = {"index": i, "id": f"call_{i}", "type": "function", "function": {"name": "GetWeatherArgs"}}
        out.append(chunk({"tool_calls": [{**head, "function": {**head["function"], "arguments": text[:5]}}]}))
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": text[5:]}}]}))
    out.append(chunk({}, "tool_calls"))
    return b"".join(out) + b"data: [DONE]\n\n"


def text_stream(text: str) -> bytes:
    return chunk({"role": "assistant", "content": text}) + chunk({}, "stop") + b"data: [DONE]\n\n"


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How many times each text went through ``json.JSONDecoder.decode`` (``json.loads`` included)."""
    seen: Counter[str] = Counter()
    real = json.JSONDecoder.decode

    def counting(self: json.JSONDecoder, s: str, *args: Any, **kwargs: Any) -> Any:
        seen[s] += 1
        return real(self, s, *args, **kwargs)

    monkeypatch.setattr(json.JSONDecoder, "decode", counting)
    yield seen


async def run_session(tmp_path: Path, first: bytes) -> tuple[list[Weather], list[dict[str, Any]]]:
    """One prompt: ``first`` is the step with the calls, then a text step. The tool's inputs and the results sent."""
    ran: list[Weather] = []

    def weather(args: Weather, ctx: ToolContext) -> ToolResponse[Any]:
        ran.append(args)
        return ToolResponse(content=f"sunny in {args.city}")

    project = tmp_path / "project"
    project.mkdir()
    with replay_server(Reply(first), Reply(text_stream("done"))) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="sk-test")
        async with (
            OpenAIChatModel("gpt-4o", settings=settings) as model,
            Runtime(data_dir=tmp_path / "data") as rt,
        ):
            with rt.tools.register({"GetWeatherArgs": Tool(description="w", input=Weather, execute=weather)}):
                location = await rt.location(project)
                session = await rt.sessions.create(location, agent="build")
                await model._ready()  # pyright: ignore[reportPrivateUsage]  # the SDK import: not part of the wait
                with anyio.fail_after(5):
                    await session.prompt("weather?", model=model)
        results = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    return ran, results


@pytest.mark.anyio
async def test_each_recorded_calls_arguments_are_parsed_once(tmp_path: Path, decodes: Counter[str]) -> None:
    ran, results = await run_session(tmp_path, stream_bytes(RECORDED))
    weather = '{"city": "Edinburgh", "country": "GB", "units": "c"}'
    stock = '{"ticker": "AAPL", "exchange": "NASDAQ"}'  # a tool this session does not have
    assert [a.city for a in ran] == ["Edinburgh"]
    assert results[0]["content"] == "sunny in Edinburgh" and "Unknown tool" in results[1]["content"]
    assert [decodes[weather], decodes[stock]] == [1, 1]


@pytest.mark.anyio
async def test_invalid_arguments_are_parsed_once_never_run_and_the_model_reads_why(
    tmp_path: Path, decodes: Counter[str]
) -> None:
    broken = '{"city": "Paris", "country": "FR"'
    not_object = '["Paris", "FR"]'
    good = '{"city": "Oslo", "country": "NO"}'
    ran, results = await run_session(tmp_path, calls_stream(broken, not_object, good))
    assert [a.city for a in ran] == ["Oslo"]
    assert [decodes[text] for text in (broken, not_object, good)] == [1, 1, 1]
    first, second, third = (r["content"] for r in results)
    assert 'Invalid input for tool "GetWeatherArgs"' in first and "not valid JSON" in first
    assert broken in first and "Nothing was run" in first
    assert "must be a JSON object, not list" in second and not_object in second
    assert third == "sunny in Oslo"


@pytest.mark.anyio
async def test_arguments_with_a_lone_surrogate_are_invalid_input_and_never_run(
    tmp_path: Path, decodes: Counter[str]
) -> None:
    surrogate = '{"city": "\\ud800", "country": "FR"}'
    ran, results = await run_session(tmp_path, calls_stream(surrogate))
    assert ran == []
    assert decodes[surrogate] == 1
    assert "not valid Unicode" in results[0]["content"]
