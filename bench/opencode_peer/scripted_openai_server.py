"""A scripted OpenAI-compatible chat-completions server for peer runs (loopback only).

Usage: python scripted_openai_server.py PORT SCRIPT.json LOG.jsonl

Each request's step = number of assistant messages already in the request. The script (JSON list) gives, per step,
either {"tool_calls": [{"name":..., "arguments": {...}}, ...]} or {"text": "..."}; after the script: text "done".
A request that offers no tools (OpenCode's session-title request, sent beside the first step) is answered with the
text "Scripted title", not with the script's step: it would otherwise get step 0 (a 1,000-call stream in a parallel
script), work no runtime's agent loop does. Every request body is appended to LOG (JSONL) so the tool results a peer
sends back can be compared.

Copied from the team's OpenCode peer tool (see README.md beside this file); only the layout changed (one statement
per line, so ruff passes), the bytes it serves are the same.
"""

import http.server
import json
import socketserver
import sys
import time
from typing import Any, ClassVar

USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY, as real API servers do: no 40 ms Nagle/delayed-ACK stalls
    script: ClassVar[list[dict[str, Any]]] = []
    log: ClassVar[str] = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send_json(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send_json({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    def do_POST(self) -> None:
        n = int(self.headers.get("content-length", 0))
        req = json.loads(self.rfile.read(n) or b"{}")
        with open(self.log, "a") as f:
            f.write(json.dumps({"t": time.time(), "path": self.path, "body": req}) + "\n")
        msgs = req.get("messages", [])
        step = sum(1 for m in msgs if m.get("role") == "assistant")
        item = self.script[step] if step < len(self.script) else {"text": "done"}
        if not req.get("tools"):
            item = {"text": "Scripted title"}
        base = {"id": f"c{step}", "object": "chat.completion.chunk", "created": 0, "model": "scripted"}
        calls = [
            {
                "id": f"call_{step}_{i}",
                "type": "function",
                "function": {"name": tc["name"], "arguments": json.dumps(tc["arguments"])},
            }
            for i, tc in enumerate(item.get("tool_calls", []))
        ]
        if not req.get("stream"):  # non-streaming fallback: one merged message
            msg: dict[str, Any] = {"role": "assistant", "content": item.get("text")}
            if "tool_calls" in item:
                msg["tool_calls"] = calls
            finish = "tool_calls" if "tool_calls" in item else "stop"
            choice = {"index": 0, "message": msg, "finish_reason": finish}
            self._send_json({**base, "object": "chat.completion", "choices": [choice], "usage": USAGE})
            return
        chunks: list[dict[str, Any]] = []
        if "tool_calls" in item:
            for i, call in enumerate(calls):
                delta = {"role": "assistant", "tool_calls": [{"index": i, **call}]}
                chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        else:
            delta = {"role": "assistant", "content": item["text"]}
            chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        chunks.append({**base, "choices": [], "usage": USAGE})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        out: list[bytes] = []

        def write(data: str) -> None:
            b = data.encode()
            out.append(f"{len(b):x}\r\n".encode() + b + b"\r\n")

        for c in chunks:
            write(f"data: {json.dumps(c)}\n\n")
        write("data: [DONE]\n\n")
        out.append(b"0\r\n\r\n")
        self.wfile.write(b"".join(out))
        self.wfile.flush()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def opencode_config(port: int) -> dict[str, Any]:
    """The ``opencode.json`` that points OpenCode at this server on ``port`` (model ``fake/scripted``, every tool
    allowed, no update check, no sharing); callers add their own keys (``mcp``, ...)."""
    return {
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "x"},
                "models": {
                    "scripted": {
                        "name": "scripted",
                        "tool_call": True,
                        "limit": {"context": 100000, "output": 4000},
                    }
                },
            }
        },
        "model": "fake/scripted",
        "permission": {"*": "allow"},
        "autoupdate": False,
        "share": "disabled",
    }


if __name__ == "__main__":
    with open(sys.argv[2]) as script:
        Handler.script = json.load(script)
    Handler.log = sys.argv[3]
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
