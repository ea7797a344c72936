"""Decoding throughput of the provider adapters, against the SDKs' own iteration of the same stream.

A long stream is built by repeating the recorded text/reasoning/tool-input deltas of a fixture, served from a real
HTTP server on 127.0.0.1. For each API the same bytes are consumed three times, best of several runs: by iterating
the SDK's stream of typed models (``AsyncStream[ChatCompletionChunk]``: SSE decoding + a model built per event, what
the adapters read until issue 14), by iterating the SDK's stream of parsed JSON (``AsyncStream[object]``: SSE
decoding + ``json.loads``, what the adapters read through the SDK until issue 38), and through the tether adapter
(its own HTTP client and SSE decoder since issue 38, plus assembly into tether events). Printed: events per second of each, and the adapter over the JSON floor (target
<= 1.5x) and over the typed models (below 1x: the adapter does all its work in less time than the SDK's models
alone took).

It then prints the CPU time of building one step's body, averaged over a session of 30 and of 500 ``read`` calls
(200-line results, 12 tool definitions, a long system prompt): what a step costs tether before its first byte goes
out.

Issue 14, reading events as JSON (2026-12-01, a shared machine at load average 5-8, 5,000 deltas, best of 3;
adapter events per second before -> after): chat 1,613 -> 14,644-24,228, responses 874 -> 17,635-22,881, anthropic
6,407 -> 36,000-47,586. Building the SDK model of each event was most of the adapters' decoding time (0.2-1 ms an
event); a 1,000-call parallel step through ``tether run`` spent 1 ms of CPU per call less (``bench/peer.py``).
The request body is encoded by pydantic-core (``_common.dumps``): a 0.3 MB body 1.9 -> 0.6 ms.

Issue 14 (2026-12-01, a heavily loaded shared machine; before = the cached byte-splicing encoder, after = one plain
body path; runs interleaved):

* request building, CPU per step, best of 3, two interleaved rounds: 30 reads (0.10 MB body) 0.10-0.14 ms before,
  0.33-0.42 ms after; 500 reads (1.5 MB body, beyond most context windows) 1.1-2.0 ms before, 4.0-5.1 ms after.
  The cache saved about 0.25 ms per step in a 30-call session and 3 ms at 500 calls, while the whole history goes
  over the wire at every step anyway and the provider reads it (hundreds of ms to seconds per step): not visible to
  a user. ``bench/peer.py --no-opencode`` (30 sequential reads against the scripted server, two interleaved rounds)
  could not resolve it: tether CPU per sequential call 6.59 / 4.60 ms before, 7.92 / 3.08 ms after. So the cache
  was deleted and each adapter keeps one body path.
* Issue 38 (brief C, 2026-12-05), with no SDK left around the request: Chat Completions keeps each history
  message's encoded JSON again (``_openai_chat.WireCache``: found by identity, spliced into the body, the same bytes;
  law 10). This bench's chat request building, 3 interleaved rounds at load 6: 30 reads 147 -> 68 us, 100 reads
  366 -> 103 us, 500 reads 1.79 -> 0.38 ms per step; through ``tether run`` (seq100) 0.4-0.5 ms of CPU less per
  step. The Responses and Anthropic lines still build the whole body.
* decoding, adapter/SDK ratio (chat, responses, anthropic), against the SDK's typed models then: before 0.99 / 1.19
  / 0.92 (20,000 deltas), 1.54 / 1.14 / 0.87 and 1.11 / 0.98 / 1.02 (5,000 deltas); after 1.21 / 1.00 / 1.14, 1.69
  / 0.52 / 1.18 and 0.95 / 0.91 / 1.05: the decoding path did not change, and the spread is the machine's load (SDK
  throughput varied 3x between runs).

    .venv/bin/python bench/providers.py [--deltas 20000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio

from tether.llm import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCallContent,
    ToolMessage,
    ToolResultContent,
    UserMessage,
)
from tether.llm.providers import AnthropicModel, ClientSettings, OpenAIChatModel, OpenAIResponsesModel
from tether.tools import Text, ToolDefinition

FIXTURES = Path(__file__).resolve().parent.parent / "tests/llm/providers/fixtures/streams"
REQUEST = ModelRequest(messages=[UserMessage(content=(Text("hi"),))])


def _lines(rel: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / rel).read_text().splitlines() if line.strip()]


def chat_body(deltas: int) -> bytes:
    """DeepSeek recording: its reasoning deltas repeated, then its tool call and usage."""
    lines = _lines("openai_chat/vercel-ai__deepseek-tool-call.chunks.jsonl")
    reasoning = [c for c in lines if c["choices"] and c["choices"][0]["delta"].get("reasoning_content")]
    rest = [c for c in lines if c not in reasoning]
    head, tail = rest[:1], rest[1:]
    body = [*head, *(reasoning[i % len(reasoning)] for i in range(deltas)), *tail]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in body).encode() + b"data: [DONE]\n\n"


def _sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def anthropic_body(deltas: int) -> bytes:
    """Anthropic text recording: its text deltas repeated."""
    lines = _lines("anthropic/vercel-ai__anthropic-text.chunks.jsonl")
    text = [e for e in lines if e["type"] == "content_block_delta"]
    first = lines.index(text[0])
    last = lines.index(text[-1])
    return _sse([*lines[:first], *(text[i % len(text)] for i in range(deltas)), *lines[last + 1 :]])


def responses_body(deltas: int) -> bytes:
    """Responses recording (pydantic-ai, 2nd turn): its output_text deltas repeated."""
    cassette = json.loads(
        (FIXTURES / "openai_responses/pydantic-ai__test_openai_responses_stream.cassette.json").read_text()
    )
    raw = cassette["interactions"][1]["response"]["body"]
    events = [json.loads(block.split("data: ", 1)[1]) for block in raw.split("\n\n") if "data: " in block]
    text = [e for e in events if e["type"] == "response.output_text.delta"]
    first, last = events.index(text[0]), events.index(text[-1])
    return _sse([*events[:first], *(text[i % len(text)] for i in range(deltas)), *events[last + 1 :]])


class Server:
    def __init__(self, body: bytes) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


async def best_of(runs: int, *fns: Callable[[], Any]) -> list[float]:
    """Best time of each function; runs alternate between them so that machine load hits both alike."""
    best = [float("inf")] * len(fns)
    for _ in range(runs):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            await fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def sdk_stream(api: str, typed: bool) -> Any:
    """The SDK's stream class for ``api``: of typed models (what the adapters read until issue 14) or of parsed JSON
    (what they read through the SDK until issue 38)."""
    if api == "anthropic":
        from anthropic import AsyncStream as AnthropicStream
        from anthropic.types import RawMessageStreamEvent

        return AnthropicStream[RawMessageStreamEvent] if typed else AnthropicStream[object]
    from openai import AsyncStream
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent

    if not typed:
        return AsyncStream[object]
    return AsyncStream[ChatCompletionChunk if api == "openai-chat" else ResponseStreamEvent]


def sdk_client(api: str, url: str) -> Any:
    """The SDK's own client for the bench server (no retries, as tether ran it)."""
    if api == "anthropic":
        import anthropic

        return anthropic.AsyncAnthropic(api_key="sk-bench", base_url=url, max_retries=0)
    import openai

    return openai.AsyncOpenAI(api_key="sk-bench", base_url=url, max_retries=0)


async def bench(api: str, model_cls: Any, body: bytes, deltas: int, runs: int) -> float:
    server = Server(body)
    settings = ClientSettings(base_url=server.url, api_key="sk-bench")
    client = sdk_client(api, server.url)
    async with model_cls("bench-model", settings=settings) as model:
        request_body, _ = model.build_body(REQUEST)

        def through_sdk(typed: bool) -> Callable[[], Any]:
            async def run() -> None:
                stream = await client.post(
                    model.path,
                    cast_to=object,
                    content=request_body,
                    options={"headers": {"Content-Type": "application/json"}},
                    stream=True,
                    stream_cls=sdk_stream(api, typed),
                )
                async for _ in stream:
                    pass

            return run

        async def adapter() -> None:
            async for _ in model.stream(REQUEST):
                pass

        models, raw = through_sdk(True), through_sdk(False)
        await models()  # warm up connections and imports
        await raw()
        await adapter()
        sdk_models, sdk, ours = await best_of(runs, models, raw, adapter)
    await client.close()
    server.httpd.shutdown()
    ratio = ours / sdk
    print(
        f"{api:17} {deltas:>7} deltas  sdk models {deltas / sdk_models:>9,.0f}/s  sdk json {deltas / sdk:>9,.0f}/s  "
        f"adapter {deltas / ours:>9,.0f}/s  over json {ratio:.2f}x {'ok' if ratio <= 1.5 else 'OVER TARGET'}  "
        f"over models {ours / sdk_models:.2f}x"
    )
    return ratio


READ = ToolDefinition(
    name="read",
    description="Read a file. " * 20,
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
        "required": ["path"],
        "additionalProperties": False,
    },
)
RESULT = "".join(f"{k}: line {k}\n" for k in range(200))  # a 200-line read, as in bench/peer.py


def request_building(model_cls: Any, steps: int) -> tuple[float, int]:
    """Mean time to build one step's body over a session of ``steps`` read calls (history grows each step), and
    the last body's size: what a step costs tether before the first byte goes out."""
    model = model_cls("bench-model", settings=ClientSettings(api_key="sk-bench"))
    history: list[Message] = [UserMessage(content=(Text("go"),))]
    for i in range(steps):
        call = ToolCallContent(call_id=f"call_{i}", name="read", input={"path": "notes.txt"})
        result = ToolResultContent(call_id=f"call_{i}", name="read", content=(Text(RESULT),))
        history += [AssistantMessage(content=(call,)), ToolMessage(results=(result,))]
    system, tools = ["You are a coding agent. " * 200], [READ] * 12
    size = 0
    start = time.process_time()  # CPU time: single-threaded work, steadier than wall time on a loaded machine
    for n in range(steps + 1):
        body, _ = model.build_body(ModelRequest(system=system, messages=history[: 1 + 2 * n], tools=tools))
        size = len(body)
    return (time.process_time() - start) / (steps + 1), size


async def main(deltas: int, runs: int) -> None:
    print(
        f"provider decoding throughput, best of {runs} (target: adapter over the SDK's JSON stream <= 1.5x)"
    )
    await bench("openai-chat", OpenAIChatModel, chat_body(deltas), deltas, runs)
    await bench("openai-responses", OpenAIResponsesModel, responses_body(deltas), deltas, runs)
    await bench("anthropic", AnthropicModel, anthropic_body(deltas), deltas, runs)
    print("request building: mean per step over a whole session (history grows one read call per step)")
    for api, model_cls in (
        ("openai-chat", OpenAIChatModel),
        ("openai-responses", OpenAIResponsesModel),
        ("anthropic", AnthropicModel),
    ):
        for steps in (30, 500):
            per_step, size = request_building(model_cls, steps)
            print(
                f"{api:17} {steps:>4} steps  {per_step * 1e6:>8,.0f} us/step  last body {size / 1e6:.2f} MB"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    anyio.run(main, args.deltas, args.runs)
