"""``tether run --format json`` against its schema (issue 37): every line of real runs (the demo's recorded model on
the sample project, and a scripted session that asks, is refused, keeps todos and fails) validates, ``result`` is
the last line with the final text, the totals and the cost; ``--whole-text`` gives each text block whole; and
docs/cli.md documents every event type with every key."""

from __future__ import annotations

import json
import re
import shutil
import typing
from pathlib import Path
from typing import Any

import pytest

from tether.cli._jsonevents import JsonEvent, events_adapter

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
DEMO = Path(__file__).resolve().parents[2] / "src" / "tether" / "demo" / "project"


def _events(stdout: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines()]
    for event in events:
        events_adapter().validate_python(event)
    return events


def test_a_recorded_session_streams_valid_lines_and_ends_with_result(cli: Any, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    shutil.copytree(DEMO, project)
    result = cli.run(
        "run", "fix the failing test", "--format", "json", "--yes", "--model", "replay", "--dir", str(project)
    )
    assert result.code == 0, result.output
    events = _events(result.stdout)
    kinds = [event["type"] for event in events]
    assert kinds[0] == "session" and kinds[-2:] == ["done", "result"], kinds
    assert {"text", "tool_start", "tool_end", "permission_decided", "step"} <= set(kinds)
    done, final = events[-2], events[-1]
    for key in ("stop", "exit_code", "steps", "calls", "failed_calls", "usage", "seconds"):
        assert final[key] == done[key], key
    assert final["session"] == events[0]["session"] and final["error"] is None
    assert final["calls"] == kinds.count("tool_end") and final["steps"] == kinds.count("step")
    # the final text: the last step's text blocks, whole
    last_step = max(i for i, kind in enumerate(kinds) if kind == "step")
    previous = max(i for i, kind in enumerate(kinds[:last_step]) if kind == "step")
    text = "".join(e["delta"] for e in events[previous + 1 : last_step] if e["type"] == "text")
    assert final["text"] == text and text.strip()
    assert final["cost"] is None  # the recorded model has no price


def test_asks_todos_and_a_provider_error_are_lines_too(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"bash": "ask"}})
    todo = {
        "name": "todowrite",
        "arguments": {"todos": [{"content": "one", "status": "pending", "priority": "high"}]},
    }
    bash = {"name": "bash", "arguments": {"command": "echo hi"}}
    model = cli.script(
        [{"text": "Planning.", "tool_calls": [todo, bash]}, {"error": "the provider fell over"}]
    )
    result = cli.run("run", "go", "--format", "json", "--deny-asks", "--model", model, "--dir", str(project))
    events = _events(result.stdout)
    kinds = [event["type"] for event in events]
    assert {"todo", "permission_asked", "error"} <= set(kinds), kinds
    final = events[-1]
    assert final["type"] == "result" and final["stop"] == "failed" and final["exit_code"] == result.code == 1
    assert final["error"] == "the provider fell over"
    assert final["text"] == "Planning." and final["failed_calls"] == 1


def test_whole_text_gives_each_block_once(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "Several words, streamed one by one."}])
    deltas = _events(cli.run("run", "go", "--format", "json", "--model", model, "--dir", str(project)).stdout)
    assert len([e for e in deltas if e["type"] == "text"]) > 3
    whole = _events(
        cli.run(
            "run", "go", "--format", "json", "--whole-text", "--model", model, "--dir", str(project)
        ).stdout
    )
    texts = [e for e in whole if e["type"] == "text"]
    assert [e["delta"] for e in texts] == ["Several words, streamed one by one."]
    assert whole[-1]["text"] == "Several words, streamed one by one."
    refused = cli.run("run", "go", "--whole-text", "--model", model, "--dir", str(project))
    assert refused.code == 2 and "--whole-text goes with --format json" in refused.stderr


def _documented() -> dict[str, str]:
    page = DOCS.read_text(encoding="utf-8")
    section = page[page.index("#### JSON event stream, version 1") :]
    rows = re.findall(
        r"^\| `(\w+)` \| (.*) \|$", section[: section.index("\n\n", section.index("| `type`"))], re.M
    )
    return {kind: keys for kind, keys in rows if kind != "type"}


@pytest.mark.parametrize("event", typing.get_args(JsonEvent), ids=lambda e: e.__name__)
def test_every_event_type_and_key_is_documented(event: Any) -> None:
    documented = _documented()
    hints = typing.get_type_hints(event)
    kind = typing.get_args(hints["type"])[0]
    assert kind in documented, f"docs/cli.md does not list {kind}"
    for key in hints:
        if key not in ("v", "type", "session"):
            assert f"`{key}`" in documented[kind], f"docs/cli.md: {kind} does not name {key}"


def test_the_docs_list_no_event_the_schema_lacks() -> None:
    kinds = {typing.get_args(typing.get_type_hints(event)["type"])[0] for event in typing.get_args(JsonEvent)}
    assert set(_documented()) == kinds
