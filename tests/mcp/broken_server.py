"""A deliberately unreliable MCP server over stdio (raw JSON-RPC, no SDK), for tests/mcp.

Usage: ``python broken_server.py MODE STATE_DIR``. It writes its pid to ``STATE_DIR/pid`` and appends every message it
receives (one JSON line each) to ``STATE_DIR/received``. MODE ``ok`` serves; ``noinit`` never answers ``initialize``;
``exit`` dies at once with a message on stderr; ``banner`` prints a non-JSON line before serving; ``paged``
lists its tools three a page; ``once`` serves its first start and refuses every later one.

Its tools misbehave on request: ``crash`` exits mid-call, ``hang`` never answers, ``malformed`` answers with a line
that is not JSON, ``fail`` answers ``isError``, ``progress`` sends progress notifications (``steps`` of them, ``gap``
seconds apart) before answering, ``wait`` waits for ``notifications/cancelled``, ``chatter`` writes 3 MB to stderr, ``freeze`` stops answering anything (pings too), ``grow`` adds the tool ``extra`` and
announces ``notifications/tools/list_changed``, ``structured`` answers structured content matching its output schema.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

MODE, STATE = sys.argv[1], Path(sys.argv[2])
STATE.mkdir(parents=True, exist_ok=True)
(STATE / "pid").write_text(str(os.getpid()))
lock = threading.Lock()
extra = False
frozen = False


def send(message: dict[str, Any]) -> None:
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def tool(
    name: str, description: str, properties: dict[str, Any] | None = None, **more: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties or {}},
        **more,
    }


def tools() -> list[dict[str, Any]]:
    found = [
        tool("echo", "Echo the text back.", {"text": {"type": "string"}}),
        tool("crash", "Exit in the middle of the call."),
        tool("hang", "Never answer."),
        tool("malformed", "Answer with a line that is not JSON."),
        tool("fail", "Answer with isError."),
        tool(
            "progress",
            "Report progress, then answer.",
            {"steps": {"type": "integer"}, "gap": {"type": "number"}},
        ),
        tool("wait", "Wait until cancelled."),
        tool("grow", "Add the tool extra."),
        tool("freeze", "Stop answering anything (a hung server)."),
        tool("chatter", "Write 3 MB to stderr."),
        tool(
            "structured",
            "Answer structured content.",
            outputSchema={"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]},
        ),
        tool("__book_meeting_room", "Book a room.", {"room": {"type": "string"}}),
        tool(
            "tags",
            "Take tags (an enum on the array, as wild schemas write it).",
            {"tags": {"type": "array", "enum": ["red", "green"]}},
        ),
    ]
    if extra:
        found.append(tool("extra", "A tool added at run time."))
    return found


def text(request_id: Any, body: str, **more: Any) -> None:
    send(
        {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": body}], **more}}
    )


def call(request_id: Any, params: dict[str, Any]) -> None:
    global extra, frozen
    name, args = params["name"], params.get("arguments") or {}
    token = (params.get("_meta") or {}).get("progressToken")
    if name == "echo":
        text(request_id, f"echo: {args.get('text', '')}")
    elif name == "crash":
        sys.stderr.write("broken server: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    elif name in ("hang", "wait"):
        return
    elif name == "malformed":
        with lock:
            sys.stdout.write("this is {not json\n")
            sys.stdout.flush()
    elif name == "fail":
        text(request_id, "the room is already booked", isError=True)
    elif name == "progress":
        for step in range(int(args.get("steps", 3))):
            time.sleep(float(args.get("gap", 0.0)))
            if token is not None:
                send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {
                            "progressToken": token,
                            "progress": step + 1,
                            "total": args.get("steps", 3),
                            "message": f"step {step + 1}",
                        },
                    }
                )
        text(request_id, "progress done")
    elif name == "freeze":
        frozen = True
    elif name == "chatter":
        for n in range(30000):
            sys.stderr.write(f"log line {n:05d} " + "x" * 90 + "\n")
        sys.stderr.write("the last words\n")
        sys.stderr.flush()
        text(request_id, "chattered")
    elif name == "grow":
        extra = True
        text(request_id, "grown")
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif name == "structured":
        text(request_id, '{"sum": 3}', structuredContent={"sum": 3})
    elif name == "extra":
        text(request_id, "extra ran")
    else:
        text(request_id, f"{name}: {json.dumps(args, sort_keys=True)}")


def handle(message: dict[str, Any]) -> None:
    with (STATE / "received").open("a") as log:
        log.write(json.dumps(message) + "\n")
    method, request_id = message.get("method"), message.get("id")
    if frozen:
        return
    if method == "initialize":
        if MODE == "noinit":
            return
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "broken", "version": "1.0"},
                    "instructions": "Use broken_echo to echo text.",
                },
            }
        )
    elif method == "tools/list" and MODE == "paged":  # three tools a page, the cursor the next index
        start = int((message.get("params") or {}).get("cursor") or 0)
        page: dict[str, Any] = {"tools": tools()[start : start + 3]}
        if start + 3 < len(tools()):
            page["nextCursor"] = str(start + 3)
        send({"jsonrpc": "2.0", "id": request_id, "result": page})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools()}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    elif method == "tools/call":
        threading.Thread(target=call, args=(request_id, message["params"]), daemon=True).start()
    elif request_id is not None and method is not None:
        send(
            {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}}
        )


def main() -> None:
    if MODE == "exit":
        sys.stderr.write("broken server: cannot start (missing token)\n")
        sys.exit(2)
    if MODE == "once":  # serves its first start only: every restart fails
        if (STATE / "started").exists():
            sys.stderr.write("broken server: refusing to start again\n")
            sys.exit(2)
        (STATE / "started").write_text("yes")
    if MODE == "banner":
        print("Starting the broken server v1.0 ...", flush=True)
    for line in sys.stdin:
        if line.strip():
            handle(json.loads(line))


main()
