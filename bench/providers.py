"""Decoding throughput of the provider adapters against the SDKs' own raw iteration of the same stream.

A long stream is built by repeating the recorded text/reasoning/tool-input deltas of a fixture, served from a real
HTTP server on 127.0.0.1. For each API the same bytes are consumed twice, best of several runs: once by iterating the
SDK's stream objects (the floor: SSE decoding + model construction), once through the tether adapter (SDK iteration
plus assembly into tether events). The ratio adapter/SDK is printed; the target is <= 1.5x.

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

from tether.llm import ModelRequest, UserMessage
from tether.llm.providers import AnthropicModel, ClientSettings, OpenAIChatModel, OpenAIResponsesModel
from tether.tools import Text

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


async def bench(api: str, model_cls: Any, body: bytes, deltas: int, runs: int) -> float:
    server = Server(body)
    settings = ClientSettings(base_url=server.url, api_key="sk-bench")
    async with model_cls("bench-model", settings=settings) as model:
        request_body, _ = model.build_body(REQUEST)

        async def raw() -> None:
            stream = await model._open(await model._ready(), request_body)
            async for _ in stream:
                pass

        async def adapter() -> None:
            async for _ in model.stream(REQUEST):
                pass

        await raw()  # warm up connections and imports
        await adapter()
        sdk, ours = await best_of(runs, raw, adapter)
    server.httpd.shutdown()
    ratio = ours / sdk
    print(
        f"{api:17} {deltas:>7} deltas  sdk {deltas / sdk:>10,.0f}/s  adapter {deltas / ours:>10,.0f}/s  "
        f"ratio {ratio:.2f}x  {'ok' if ratio <= 1.5 else 'OVER TARGET'}"
    )
    return ratio


async def main(deltas: int, runs: int) -> None:
    print(f"provider decoding throughput, best of {runs} (target: adapter/sdk <= 1.5x)")
    await bench("openai-chat", OpenAIChatModel, chat_body(deltas), deltas, runs)
    await bench("openai-responses", OpenAIResponsesModel, responses_body(deltas), deltas, runs)
    await bench("anthropic", AnthropicModel, anthropic_body(deltas), deltas, runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    anyio.run(main, args.deltas, args.runs)
