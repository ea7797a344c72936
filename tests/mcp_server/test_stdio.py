"""``tether mcp serve`` over stdio, driven by the official ``mcp`` client: a real subprocess on a temp project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from .serve_fixtures.served import Served

pytestmark = pytest.mark.anyio


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.fixture
def served(tmp_path: Path) -> Served:
    served = Served(tmp_path)
    (served.project / "notes.txt").write_text("alpha\nneedle in a haystack\nomega\n")
    (served.project / "src").mkdir()
    (served.project / "src" / "app.py").write_text("def main():\n    return 'needle'\n")
    return served


async def test_lists_the_agents_catalog_and_hides_what_its_rules_deny(served: Served) -> None:
    served.user_config({"permission": {"bash": "deny"}})
    async with served.stdio() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"read", "grep", "edit", "glob", "write"} <= set(tools)
    assert "bash" not in tools  # denied on "*": hidden, as from a model's catalog
    read = tools["read"]
    assert read.description and "path" in read.input_schema["properties"]


async def test_a_hidden_tool_cannot_be_called_by_name(served: Served) -> None:
    served.user_config({"permission": {"bash": "deny"}})
    async with served.stdio() as client:
        result = await client.call_tool("bash", {"command": "touch canary", "description": "try anyway"})
    assert result.is_error and "bash" in _text(result)
    assert not (served.project / "canary").exists()


async def test_a_hostile_client_name_is_made_printable_and_clipped(served: Served) -> None:
    name = "evil\x1b[2J\nclient\u202e" + "x" * 500
    async with served.stdio(name=name) as client:
        await client.call_tool("read", {"path": "notes.txt"})
    [session] = served.sessions()
    title = session["title"]
    assert (
        title.startswith("mcp: evil") and "\x1b" not in title and "\n" not in title and "\u202e" not in title
    )
    assert len(title) <= len("mcp: ") + 100


async def test_read_grep_and_edit_run_through_the_full_path_and_are_recorded(served: Served) -> None:
    served.user_config({"permission": {"edit": "allow"}})
    async with served.stdio(name="my editor") as client:
        read = await client.call_tool("read", {"path": "notes.txt"})
        grep = await client.call_tool("grep", {"pattern": "needle"})
        edit = await client.call_tool(
            "edit", {"path": "notes.txt", "old_string": "needle", "new_string": "thread"}
        )
    assert not read.is_error and "2: needle in a haystack" in _text(read)
    assert not grep.is_error and "notes.txt" in _text(grep) and "app.py" in _text(grep)
    assert not edit.is_error, _text(edit)
    assert (served.project / "notes.txt").read_text() == "alpha\nthread in a haystack\nomega\n"
    [session] = served.sessions()
    assert session["title"] == "mcp: my editor"
    parts = served.timeline(session["id"])
    assert [(p["tool"], p["state"]) for p in parts] == [
        ("read", "completed"),
        ("grep", "completed"),
        ("edit", "completed"),
    ]
    assert parts[2]["permissions"][0]["action"] == "edit"  # the decision is on the call's record


async def test_bounded_content_goes_to_the_client_and_the_full_output_stays_on_disk(served: Served) -> None:
    served.user_config({"tool_output": {"max_lines": 50}})
    (served.project / "big.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
    async with served.stdio() as client:
        result = await client.call_tool("bash", {"command": "cat big.txt", "description": "print it"})
    text = _text(result)
    assert not result.is_error
    assert "line 0\n" in text and "line 4999" in text and "line 2500\n" not in text
    [session] = served.sessions()
    [part] = served.timeline(session["id"])
    [saved] = part["output_paths"]
    assert "line 2500\n" in Path(saved).read_text()


async def test_tool_errors_and_invalid_input_are_iserror_results_with_the_model_facing_text(
    served: Served,
) -> None:
    async with served.stdio() as client:
        invalid = await client.call_tool("read", {"filePath": "notes.txt"})
        missing = await client.call_tool("read", {"path": "nope.txt"})
        unknown = await client.call_tool("no_such_tool", {})
    assert (
        invalid.is_error
        and "path: Field required" in _text(invalid)
        and "call the tool again" in _text(invalid)
    )
    assert missing.is_error and "nope.txt" in _text(missing)
    assert unknown.is_error and "no_such_tool" in _text(unknown)


async def test_an_ask_without_elicitation_is_denied_and_nothing_runs(served: Served) -> None:
    served.user_config({"permission": {"edit": "ask"}})
    async with served.stdio() as client:
        result = await client.call_tool("write", {"path": "new.txt", "content": "x"})
    assert result.is_error and "cannot ask its user" in _text(result)
    assert not (served.project / "new.txt").exists()
    [session] = served.sessions()
    [part] = served.timeline(session["id"])
    assert part["state"] == "error" and part["error_kind"] == "corrected"


async def test_mcp_serve_ask_allow_approves_once_without_elicitation(served: Served) -> None:
    served.user_config({"permission": {"edit": "ask"}, "mcp_serve": {"ask": "allow"}})
    async with served.stdio() as client:
        result = await client.call_tool("write", {"path": "new.txt", "content": "x"})
        protected = await client.call_tool("write", {"path": ".git/hooks/pre-commit", "content": "evil"})
    assert not result.is_error, _text(result)
    assert (served.project / "new.txt").read_text() == "x"
    assert protected.is_error and not (served.project / ".git").exists()


async def test_a_denied_call_fails_with_the_rule_and_leaves_the_file_alone(served: Served) -> None:
    served.user_config({"permission": {"edit": {"*": "allow", "notes.txt": "deny"}}})
    async with served.stdio() as client:
        result = await client.call_tool(
            "edit", {"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}
        )
    assert result.is_error and "notes.txt" in _text(result)
    assert (served.project / "notes.txt").read_text().startswith("alpha")


@pytest.mark.parametrize(
    "mode", ["legacy", "auto"]
)  # auto: 2026-07-28, the form returns as InputRequiredResult
async def test_an_ask_is_put_to_the_clients_user_through_elicitation(served: Served, mode: str) -> None:
    served.user_config({"permission": {"edit": "ask"}})
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        asked.append(params.message)
        decision = "once" if "approved.txt" in params.message else "reject"
        content = {"decision": decision, "feedback": "write it under docs/ instead"}
        return types.ElicitResult(action="accept", content=content)

    async with served.stdio(elicit=elicit, mode=mode) as client:
        approved = await client.call_tool("write", {"path": "approved.txt", "content": "yes"})
        rejected = await client.call_tool("write", {"path": "rejected.txt", "content": "no"})
    assert not approved.is_error, _text(approved)
    assert (served.project / "approved.txt").read_text() == "yes"
    assert rejected.is_error and "write it under docs/ instead" in _text(rejected)
    assert not (served.project / "rejected.txt").exists()
    assert len(asked) == 2 and "edit" in asked[0] and "approved.txt" in asked[0]


async def test_a_retry_with_an_unknown_request_state_runs_nothing(served: Served) -> None:
    async with served.stdio(mode="auto") as client:
        result = await client.session.call_tool(
            "write", {"path": "a.txt", "content": "1"}, request_state="forged", allow_input_required=True
        )
    assert isinstance(result, types.CallToolResult) and result.is_error
    assert "request_state" in _text(result)
    assert not (served.project / "a.txt").exists()


async def test_always_from_elicitation_is_saved_for_the_project(served: Served) -> None:
    served.user_config({"permission": {"edit": "ask"}})
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "always"})

    async with served.stdio(elicit=elicit) as client:
        first = await client.call_tool("write", {"path": "a.txt", "content": "1"})
        second = await client.call_tool("write", {"path": "b.txt", "content": "2"})
    assert not first.is_error and not second.is_error
    assert len(asked) == 1  # the second write matched the saved approval
    listed = served.cli.run("permissions", "--dir", str(served.project))
    assert "edit" in listed.stdout


async def test_declining_the_elicitation_rejects_only_that_call(served: Served) -> None:
    served.user_config({"permission": {"edit": "ask"}})

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with served.stdio(elicit=elicit) as client:
        result = await client.call_tool("write", {"path": "a.txt", "content": "1"})
        after = await client.call_tool("read", {"path": "notes.txt"})
    assert result.is_error and "rejected" in _text(result)
    assert not after.is_error  # the session goes on serving
    assert not (served.project / "a.txt").exists()


async def test_calls_from_one_client_run_in_parallel(served: Served) -> None:
    # Two calls that each wait for the other's file: they finish only if both run at the same time.
    served.user_config({"permission": {"bash": "allow"}})
    wait_for = "for i in $(seq 600); do [ -e {0} ] && exit 0; sleep 0.05; done; exit 1"
    async with served.stdio() as client:
        results: dict[str, types.CallToolResult] = {}

        async def call(mine: str, other: str) -> None:
            command = f"touch {mine}; " + wait_for.format(other)
            results[mine] = await client.call_tool("bash", {"command": command, "description": "rendezvous"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "one", "two")
            tg.start_soon(call, "two", "one")
    assert all(not r.is_error for r in results.values()), {k: _text(r) for k, r in results.items()}


async def test_progress_is_forwarded_and_cancellation_aborts_the_call(served: Served) -> None:
    started = anyio.Event()
    updates: list[str | None] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        updates.append(message)
        if message and "started" in message:
            started.set()

    served.user_config({"permission": {"bash": "allow"}})
    command = "echo started; sleep 60; touch finished"
    async with served.stdio() as client:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await client.call_tool(
                    "bash", {"command": command, "description": "wait"}, progress_callback=progress
                )

            tg.start_soon(call)
            with anyio.fail_after(30):
                await started.wait()
            tg.cancel_scope.cancel()  # the client sends notifications/cancelled
        after = await client.call_tool("read", {"path": "notes.txt"})  # the server goes on serving
        assert not after.is_error
        [session] = served.sessions()
        with anyio.fail_after(30):
            while True:  # the server records the cancelled call on its own time: read its store until it has
                parts = served.timeline(session["id"])
                if parts[0]["state"] != "running":
                    break
                await anyio.sleep(0.1)
    assert "started" in (updates[0] or "")
    bash = parts[0]
    assert bash["tool"] == "bash" and bash["state"] == "error" and bash.get("interrupted") is True
    assert not (served.project / "finished").exists()


MEASURE_TOOL = '''
from pydantic import BaseModel

from tether.tools import tool


class Size(BaseModel):
    words: int
    chars: int


@tool
def measure(text: str) -> Size:
    """Count the words and characters of a text."""
    return Size(words=len(text.split()), chars=len(text))
'''


async def test_a_typed_output_is_advertised_and_returned_as_structured_content(served: Served) -> None:
    tools_dir = served.cli.tmp / "config" / "tools"
    tools_dir.mkdir()
    (tools_dir / "measure.py").write_text(MEASURE_TOOL)
    async with served.stdio() as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("measure", {"text": "two words"})
    schema = listed["measure"].output_schema
    assert (
        schema is not None and schema["type"] == "object" and set(schema["properties"]) == {"words", "chars"}
    )
    assert listed["read"].output_schema is None  # text-only tools declare none
    assert not result.is_error and result.structured_content == {"words": 2, "chars": 9}


async def test_an_untrusted_projects_mcp_serve_allow_is_ignored(served: Served) -> None:
    served.user_config({"permission": {"edit": "ask"}})
    (served.project / "tether.json").write_text('{"mcp_serve": {"ask": "allow"}}')
    async with served.stdio() as client:
        result = await client.call_tool("write", {"path": "planted.txt", "content": "x"})
    assert result.is_error and "cannot ask its user" in _text(result)
    assert not (served.project / "planted.txt").exists()
