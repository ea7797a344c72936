#!/usr/bin/env bash
# Run OpenCode itself (the system the seeds describe) on a project, driven by a scripted model, and print exactly
# what it sent back to the model for each tool call.
# Usage: run-opencode.sh PROJECT_DIR SCRIPT.json
# SCRIPT.json: a list of steps, each {"tool_calls": [{"name": "read", "arguments": {"filePath": "a.txt"}}]} or
# {"text": "..."}; OpenCode's tool names and argument names are its own (its `read` takes `filePath`, tether's `path`).
set -eu
proj=$(cd "$1" && pwd); script=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
here=$(cd "$(dirname "$0")" && pwd)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/opencode-peer"
mkdir -p "$cache"
[ -x "$cache/node_modules/opencode-linux-x64/bin/opencode" ] || (cd "$cache" && npm install --no-audit --no-fund --silent opencode-ai@1.18.33)
[ -x "$cache/rg/bin/rg" ] || { python3 -m venv "$cache/rg" && "$cache/rg/bin/pip" install -q ripgrep==14.1.0; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp); home=$(mktemp -d)
python3 "$here/scripted_openai_server.py" "$port" "$script" "$log" & pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$home"' EXIT
sleep 1
[ -f "$proj/opencode.json" ] || cat > "$proj/opencode.json" <<JSON
{"provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
  "options": {"baseURL": "http://127.0.0.1:$port/v1", "apiKey": "x"},
  "models": {"scripted": {"name": "scripted", "tool_call": true, "limit": {"context": 100000, "output": 4000}}}}},
 "model": "fake/scripted", "permission": {"*": "allow"}, "autoupdate": false, "share": "disabled"}
JSON
(cd "$proj" && PATH="$cache/rg/bin:$PATH" HOME="$home" XDG_DATA_HOME="$home/data" XDG_CONFIG_HOME="$home/config" \
  XDG_CACHE_HOME="$home/cache" "$cache/node_modules/opencode-linux-x64/bin/opencode" run "go" >/dev/null 2>&1) || true
python3 - "$log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
last = rows[-1]["body"]["messages"] if rows else []
for m in last:
    if m.get("role") == "tool":
        print(f"--- result for {m['tool_call_id']}:\n{m['content']}")
PY
