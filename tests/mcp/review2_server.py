"""A minimal stdio MCP server (plain JSON-RPC lines, stdlib only) for tests/mcp/test_review2_*.py.

``review2_server.py STATE TOOLS [daemon]``: writes ``STATE/start.json`` (its working directory, ``PYTHONSAFEPATH``,
its pid) once it runs, ``STATE/roots.json`` (the client's answer to ``roots/list``) once initialized, and with
``daemon`` starts a detached ``setsid`` double-forked ``sleep`` whose pid goes to ``STATE/daemon``. ``TOOLS`` is a
JSON file: the ``tools`` of its ``tools/list`` answer, sent once the roots are known when the client offers roots (so a connected
server has written ``roots.json``). ``tools/call`` of ``echo`` answers at once; any other tool never
answers (a call in flight).
"""

import json
import os
import sys
from pathlib import Path

state, tools = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
state.mkdir(parents=True, exist_ok=True)
(state / "start.json").write_text(
    json.dumps({"cwd": os.getcwd(), "safepath": os.environ.get("PYTHONSAFEPATH"), "pid": os.getpid()})
)
if "daemon" in sys.argv[3:]:
    middle = os.fork()
    if middle == 0:
        os.setsid()
        child = os.fork()
        if child == 0:
            os.execvp("sleep", ["sleep", "4321"])
        (state / "daemon").write_text(str(child))
        os._exit(0)
    os.waitpid(middle, 0)  # the daemon is detached (its parent is gone) and its pid is written


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


listing: object = None
asking = False
for line in sys.stdin:
    message = json.loads(line)
    ident, method = message.get("id"), message.get("method")
    if method == "initialize":
        version = message["params"]["protocolVersion"]
        asking = bool(message["params"].get("capabilities", {}).get("roots"))
        info = {"name": "review2", "version": "1"}
        send(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "result": {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info},
            }
        )
    elif method == "notifications/initialized" and asking:
        send({"jsonrpc": "2.0", "id": "roots", "method": "roots/list"})
    elif method is None and ident == "roots":
        (state / "roots.json").write_text(json.dumps(message.get("result")))
        if listing is not None:
            send({"jsonrpc": "2.0", "id": listing, "result": {"tools": tools}})
    elif method == "tools/list" and asking and not (state / "roots.json").exists():
        listing = ident
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": tools}})
    elif method == "tools/call" and message["params"]["name"] == "echo":
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "echo"}]}})
    elif method == "tools/call":
        (state / "calling").write_text("1")
    elif ident is not None and method is not None:
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
