"""Replay every recorded stream through the real SDK clients against a real HTTP server on 127.0.0.1.

Each stream is served whole, cut at seeded random points, and cut inside UTF-8 sequences. The resulting events are
summarized (text, reasoning, tool calls with ids/names/parsed input, finish reason, usage, error) and compared with
``expected_streams.json``; the upstream assertions quoted in the fixtures' README are also spelled out below, so a
wrong snapshot cannot hide them.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest

from tether.llm import Event, ModelRequest, UserMessage
from tether.llm.providers import AnthropicModel, ClientSettings, OpenAIChatModel, OpenAIResponsesModel
from tether.tools import Text

from ._replay import FIXTURES, Reply, api_of, replay_server, stream_bytes, stream_names
from ._summary import check_invariants, summarize

EXPECTED: dict[str, Any] = json.loads((FIXTURES.parent.parent / "expected_streams.json").read_text())
DERIVED: dict[str, Any] = json.loads((FIXTURES / "derived_summary.json").read_text())
MODELS = {
    "openai_chat": OpenAIChatModel,
    "openai_responses": OpenAIResponsesModel,
    "anthropic": AnthropicModel,
}
REQUEST = ModelRequest(messages=[UserMessage(content=(Text("hi"),))])


def make_model(api: str, url: str) -> Any:
    return MODELS[api]("test-model", settings=ClientSettings(base_url=f"{url}/v1", api_key="sk-test"))


async def replay(name: str, splits: list[int]) -> list[Event]:
    with replay_server(Reply(stream_bytes(name), splits=splits)) as server:
        async with make_model(api_of(name), server.url) as model:
            return [event async for event in model.stream(REQUEST)]


def random_splits(body: bytes, seed: int, count: int = 8) -> list[int]:
    rng = random.Random(seed)
    return sorted(rng.sample(range(1, len(body)), min(count, len(body) - 1)))


def utf8_splits(body: bytes, count: int = 8) -> list[int]:
    """Cut points inside multi-byte UTF-8 sequences (after a lead byte), or inside lines when there are none."""
    inside = [i for i in range(1, len(body)) if body[i] & 0xC0 == 0x80]
    if not inside:
        inside = [i + 3 for i in range(len(body) - 3) if body[i : i + 1] == b":"]
    step = max(len(inside) // count, 1)
    return inside[::step][:count]


SPLITS = ["whole", "random", "utf8"]


def splits_for(name: str, how: str) -> list[int]:
    body = stream_bytes(name)
    if how == "whole":
        return []
    if how == "random":
        return random_splits(body, seed=len(body))
    return utf8_splits(body)


@pytest.mark.anyio
@pytest.mark.parametrize("how", SPLITS)
@pytest.mark.parametrize("name", stream_names())
async def test_recorded_stream_replays_to_expected_events(name: str, how: str) -> None:
    events = await replay(name, splits_for(name, how))
    check_invariants(events)
    assert summarize(events) == EXPECTED[name]


def test_every_recorded_stream_has_an_expectation() -> None:
    assert sorted(EXPECTED) == sorted(stream_names())


def test_the_copied_recordings_are_complete_and_unaltered() -> None:
    """Every recording listed in MANIFEST.json (sha256 as copied, see fixtures/streams/README.md) is here, unaltered."""
    manifest: dict[str, str] = json.loads((FIXTURES / "MANIFEST.json").read_text())["files"]
    stored: set[str] = set()
    for rel, digest in manifest.items():
        if rel.endswith(".yaml"):  # a VCR cassette is stored converted to JSON, naming its source
            source, rel = rel, rel.removesuffix(".yaml") + ".cassette.json"
            assert json.loads((FIXTURES / rel).read_text())["source"] == source
        else:
            assert hashlib.sha256((FIXTURES / rel).read_bytes()).hexdigest() == digest, rel
        stored.add(rel)
    present = {path.relative_to(FIXTURES).as_posix() for path in FIXTURES.rglob("*") if path.is_file()}
    assert present - {"MANIFEST.json", "README.md"} == stored


def _derived_key(name: str) -> str:
    rel, _, turn = name.partition("#")
    if turn:
        return rel.replace(".cassette.json", ".yaml") + f"#interaction{turn}"
    return rel


@pytest.mark.parametrize("name", stream_names())
def test_text_and_arguments_agree_with_the_derived_summary(name: str) -> None:
    derived = DERIVED.get(_derived_key(name))
    assert derived is not None and "error" not in derived
    expected = EXPECTED[name]
    # The derived summary keeps at most 120 characters of text.
    assert expected["text"].startswith(derived["text"])
    assert len(derived["text"]) == 120 or expected["text"] == derived["text"]
    parsed = {
        c["id"]: json.loads(c["arguments"] or "{}") for c in derived["tool_calls"] if c["arguments_parsed_ok"]
    }
    for call in expected["calls"]:
        if call["id"] in parsed and not call["invalid"]:
            assert call["input"] == parsed[call["id"]]


# The assertions upstream makes about these recordings (fixtures/streams/README.md), spelled out.
UPSTREAM = {
    "openai_chat/openai-python__parallel_tool_calls_gpt-4o.sse": [
        ("GetWeatherArgs", {"city": "Edinburgh", "country": "GB", "units": "c"}),
        ("get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"}),
    ],
    "openai_chat/openai-python__strict_tool_call_gpt-4o.sse": [
        ("get_weather", {"city": "San Francisco", "state": "CA"})
    ],
    "openai_chat/openai-python__non_strict_tool_call_gpt-4o.sse": [
        ("get_weather", {"city": "New York City"})
    ],
    "openai_chat/openai-python__pydantic_tool_gpt-4o.sse": [
        ("GetWeatherArgs", {"city": "Edinburgh", "country": "UK", "units": "c"})
    ],
    "openai_chat/pydantic-ai__test_run_stream_sync_streams_real_model.cassette.json#0": [
        ("get_capital", {"country": "UK"})
    ],
    "openai_chat/vercel-ai__openai-compatible_anthropic-fallback-tool-call.sse": [
        ("read_file", {"path": "a.txt"})
    ],
    "openai_chat/vercel-ai__groq-tool-call.chunks.jsonl": [("weather", {})],
    "openai_chat/vercel-ai__mistral-incremental-tool-call.chunks.jsonl": [
        ("webSearchTool", {"query": "current Berlin weather"})
    ],
    "openai_responses/pydantic-ai__test_openai_responses_stream.cassette.json#0": [
        ("get_capital", {"country": "France"})
    ],
    "openai_responses/vercel-ai__inline_parallel_function_calls_edited.jsonl": [
        ("currentLocation", {}),
        ("weather", {"location": "Rome"}),
    ],
    "anthropic/anthropic-sdk-python__tool_use_response.sse": [("get_weather", {"location": "Paris"})],
    "anthropic/vercel-ai__anthropic-tool-no-args.chunks.jsonl": [("updateIssueList", {})],
    "anthropic/llm-anthropic__test_tools.turn0.sse": [
        ("pelican_name_generator", {}),
        ("pelican_name_generator", {}),
    ],
}


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_upstream_assertions_hold(name: str) -> None:
    calls = [(c["name"], c["input"]) for c in EXPECTED[name]["calls"] if not c["invalid"]]
    assert calls == UPSTREAM[name]


def test_spliced_message_start_keeps_the_second_call_only() -> None:
    calls = EXPECTED["anthropic/vercel-ai__spliced-message-start.chunks.jsonl"]["calls"]
    runnable = [c for c in calls if not c["incomplete"]]
    assert [c["id"] for c in runnable] == ["toolu_second"]
    assert runnable[0]["input"] == {"value": "Sparkle Day"}


def test_max_tokens_mid_input_reports_an_incomplete_call() -> None:
    summary = EXPECTED["anthropic/anthropic-sdk-python__incomplete_partial_json_max_tokens.sse"]
    assert summary["finish"] == "length"
    [call] = summary["calls"]
    assert call["incomplete"] and call["invalid"] and call["name"] == "make_file"


def test_quoted_tool_input_split_across_deltas_parses() -> None:
    [call] = EXPECTED["anthropic/vercel-ai__anthropic-issue-11719-quoted-tool-input.chunks.jsonl"]["calls"]
    assert '"What should I do next after this run?"' in call["input"]["tasks"][0]["description"]
