"""Issue 34 item 4, performed for real: a model's call with a lone surrogate (``bash {"description": "\\ud800"}``) is
refused, and every renderer of the stored session (``tether session show``, ``--json``, ``export``, ``tether sessions
--json``, the server's session routes and event replay, the inspector page) answers with the text shown as an escape.

The run and the CLI commands are real subprocesses; the session lives in a project directory whose name is not UTF-8
(its exact name is kept: the session reopens there). A second test writes what an older store holds (raw lone
surrogates in every stored text, written straight to the store) and reads it through the same renderers: a renderer
never fails on odd text already stored.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.cli.conftest import Cli

from tether import Runtime
from tether.client import Client
from tether.content import Text
from tether.errors import UsageError
from tether.session import (
    AssistantInfo,
    MessageError,
    MessageUpdated,
    PartUpdated,
    SessionInfo,
    SessionUpdated,
    TextPart,
    ToolPart,
    UserInfo,
)
from tether.storable import has_surrogates
from tether.store import SQLiteStore

TOKEN = "storable-token-" + "x" * 32
ODD_DIR = os.fsdecode(b"proj\xff")  # a project directory whose name is not UTF-8: "proj\udcff"
ODD_FILE = os.fsdecode(b"bad\xfename.txt")
CHROMIUM = os.environ.get("TETHER_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:  # pyright: ignore[reportUnknownVariableType]
            yield from strings(item)


def showable(document: Any) -> None:
    """A rendered document holds no lone surrogate anywhere (it is valid UTF-8 JSON as written)."""
    odd = [s for s in strings(document) if has_surrogates(s)]
    assert odd == []


def tool_parts(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        p
        for item in document["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p["type"] == "tool"
    ]


@contextmanager
def serving(data_dir: Path, project: Path) -> Generator[tuple[Client, str]]:
    """A real ``tether serve`` app for ``project`` over ``data_dir``, on 127.0.0.1 in a thread (it prompts nothing)."""
    from tether.server import bind, serve

    sock: socket.socket = bind("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    ready = threading.Event()
    box: dict[str, Any] = {}

    def no_model(name: str | None) -> Any:
        raise UsageError("no model is served in this test")

    def started(server: Any) -> None:
        box["server"] = server
        ready.set()

    async def main() -> None:
        async with Runtime(data_dir=data_dir, plugins=False) as rt:
            location = await rt.location(project)
            await serve(
                rt, location, sock=sock, host="127.0.0.1", token=TOKEN, choose_model=no_model, started=started
            )

    def run() -> None:
        try:
            anyio.run(main)
        except BaseException as exc:  # raised by the teardown
            box["failure"] = exc
            ready.set()

    thread = threading.Thread(target=run, name="storable-serve", daemon=True)
    thread.start()
    assert ready.wait(60), "the server did not start"
    if "failure" in box:
        raise box["failure"]
    try:
        with Client(url, TOKEN, timeout=30) as client:
            yield client, url
    finally:
        box["server"].should_exit = True
        thread.join(60)
        assert not thread.is_alive(), "the server did not stop"
        if "failure" in box:
            raise box["failure"]


def replayed(
    client: Client, session_id: str, until: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """The session's durable events replayed by the server from the store's log, up to the first part ``until``
    accepts."""
    found: list[dict[str, Any]] = []
    with client.events(session=session_id, last_event_id=0, read_timeout=60) as stream:
        for event in stream:
            if event.id is not None:
                found.append(event.data)
                if event.type == "part_updated" and until(event.data["part"]):
                    return found
    raise AssertionError("the stream ended")


def check_cli(cli: Cli, session_id: str, project: Path, tmp_path: Path) -> dict[str, Any]:
    """``session show`` (text and ``--json``), ``session export`` (stdout and ``-o``) and ``sessions --json`` all
    exit 0 with valid UTF-8 and no lone surrogate in what they print. Returns the ``--json`` document."""
    text = cli.run("session", "show", session_id)
    assert text.code == 0, text.output
    assert "Traceback" not in text.output and "\x1b" not in text.stdout
    shown = cli.run("session", "show", session_id, "--json")
    assert shown.code == 0, shown.output
    document = json.loads(shown.stdout)
    showable(document)
    exported = cli.run("session", "export", session_id)
    assert exported.code == 0, exported.output
    export = json.loads(exported.stdout)
    showable(export)
    assert export["format"] == "tether.session/2"
    target = tmp_path / "export.json"
    written = cli.run("session", "export", session_id, "-o", str(target))
    assert written.code == 0, written.output
    assert json.loads(target.read_bytes().decode("utf-8")) == export
    listed = cli.run("sessions", "--json", "--dir", str(project))
    assert listed.code == 0, listed.output
    rows = json.loads(listed.stdout)
    showable(rows)
    assert session_id in [r["id"] for r in rows]
    return document


def check_server(client: Client, session_id: str) -> dict[str, Any]:
    """Every session route answers 200 with valid JSON and no lone surrogate."""
    listed = client.sessions()
    assert session_id in [s["id"] for s in listed]
    session = client.session(session_id)
    messages = client.messages(session_id)
    export = client.export(session_id)
    for document in (listed, session, messages, export):
        showable(document)
    return export


def test_a_refused_call_with_a_lone_surrogate_is_shown_escaped_by_every_renderer(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    project = tmp_path / ODD_DIR
    project.mkdir()
    (project / ODD_FILE).write_bytes("café \x1b[31mred\n".encode())
    script = [
        {
            "text": "Working \ud800.",
            "tool_calls": [
                {
                    "name": "bash",
                    "arguments": {"command": "true", "description": "\ud800"},
                },  # the call
                {"name": "glob", "arguments": {"pattern": "*.txt"}},
                {"name": "read", "arguments": {"path": "bad\\xfename.txt"}},  # the name as glob showed it
                {"name": "re\udcffad", "arguments": {"path": "x"}},  # no such tool, and not valid Unicode
            ],
        },
        {"text": "Done \udcff."},
    ]
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script), encoding="ascii")  # JSON escapes: "\ud800" reads back as one

    run = cli.run("run", "go \udcff", "--model", f"scripted:{script_file}", "--dir", str(project))
    assert run.code == 0, run.output
    session_id = json.loads(cli.run("sessions", "--json", "--dir", str(project)).stdout)[0]["id"]

    document = check_cli(cli, session_id, project, tmp_path)
    assert document["session"]["directory"] == str(tmp_path / "proj\\xff")  # the exact name, shown escaped
    bash, glob, read, unknown = tool_parts(document)
    assert (bash["tool"], bash["state"], bash["error_kind"]) == ("bash", "error", "invalid_input")
    assert bash["input"] == {"command": "true", "description": "\\ud800"}
    assert "not valid Unicode" in bash["error"]
    assert glob["state"] == "completed", glob["error"]
    assert "bad\\xfename.txt" in glob["content"][0]["text"]
    assert read["state"] == "completed", read["error"]
    assert "caf" in read["content"][0]["text"]
    assert (unknown["tool"], unknown["error"]) == ("re\\xffad", "Unknown tool: re\\xffad")
    texts = [p["text"] for item in document["timeline"] for p in item.get("parts", ()) if p["type"] == "text"]
    assert texts == ["Working \\ud800.", "Done \\xff."]
    assert document["timeline"][0]["text"] == "go \\xff"  # an argv byte that is not UTF-8

    with serving(cli.data_dir, project) as (client, _):
        export = check_server(client, session_id)
        events = replayed(
            client, session_id, lambda part: part.get("tool") == "re\\xffad" and part["state"] == "error"
        )
    stored = [p for m in export["messages"] for p in m["parts"] if p["type"] == "tool"]
    assert stored[0]["input"] == {"command": "true", "description": "\\ud800"}
    # the session's record keeps its exact directory: the stream carries it as JSON escapes (ASCII, never a failure)
    showable([e for e in events if e["type"] != "session_updated"])
    assert {"command": "true", "description": "\\ud800"} in [
        e["part"].get("input") for e in events if "part" in e
    ]


def older_store(path: Path, project: Path) -> str:
    """A session as a store written before every stored text was made storable holds it: raw lone surrogates in
    the title, the prompt, model text, a tool's input, raw arguments, error, content, title, metadata, output paths
    and permission records, and in a message's error (written straight to the store, which keeps text exactly)."""
    odd = "x\ud800y\udcff\x00\x1b[2J"
    session_id, user_id, step_id = "ses_older", "msg_older_0", "msg_older_1"

    async def main() -> None:
        async with SQLiteStore(path) as store:
            store.append(
                SessionUpdated(
                    SessionInfo(
                        id=session_id,
                        project=str(project),
                        directory=str(project),
                        title="title " + odd,
                        agent="build",
                        created=1,
                        updated=1,
                    )
                )
            )
            store.append(
                MessageUpdated(UserInfo(id=user_id, session_id=session_id, agent="build", created=1))
            )
            store.append(
                PartUpdated(TextPart(id="prt_older_0", session_id=session_id, message_id=user_id, text=odd))
            )
            store.append(
                MessageUpdated(
                    AssistantInfo(
                        id=step_id,
                        session_id=session_id,
                        parent_id=user_id,
                        agent="build",
                        model="m" + odd,
                        created=2,
                        completed=3,
                        finish="stop",
                        error=MessageError(kind="error", message="failed: " + odd),
                    )
                )
            )
            store.append(
                PartUpdated(TextPart(id="prt_older_1", session_id=session_id, message_id=step_id, text=odd))
            )
            store.append(
                PartUpdated(
                    ToolPart(
                        id="prt_older_2",
                        session_id=session_id,
                        message_id=step_id,
                        call_id="call_" + odd,
                        tool="bash" + odd,
                        state="error",
                        input={odd: [odd, {"k": odd}]},
                        raw="{" + odd,
                        content=(Text(odd),),
                        metadata={odd: odd},
                        title=odd,
                        output_paths=("/out/" + odd,),
                        error="error " + odd,
                        error_kind="invalid_input",
                        permissions=({"event": "permission.decided", "resources": [odd]},),
                        started=2,
                        ended=3,
                    )
                )
            )
            await store.flush()

    anyio.run(main)
    return session_id


def test_text_an_older_store_kept_raw_is_shown_escaped_by_every_renderer(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    project = tmp_path / ODD_DIR
    project.mkdir()
    session_id = older_store(cli.data_dir / "tether.db", project)

    document = check_cli(cli, session_id, project, tmp_path)
    assert document["session"]["title"] == "title x\\ud800y\\xff\x00\x1b[2J"  # JSON escapes the controls
    (tool,) = tool_parts(document)
    assert tool["input"] == {
        "x\\ud800y\\xff\x00\x1b[2J": ["x\\ud800y\\xff\x00\x1b[2J", {"k": "x\\ud800y\\xff\x00\x1b[2J"}]
    }
    text = cli.run("session", "show", session_id)
    assert (
        "x\\ud800y\\xff" in text.stdout and "\\x1b[2J" in text.stdout
    )  # shown, never acted on by a terminal

    with serving(cli.data_dir, project) as (client, _):
        check_server(client, session_id)
        events = replayed(client, session_id, lambda part: part["type"] == "tool")  # escaped by JSON
    assert events[-1]["part"]["error"] == "error x\ud800y\udcff\x00\x1b[2J"


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/bootstrap installs it)")
def test_the_inspector_shows_a_refused_input_with_a_lone_surrogate(tmp_path: Path) -> None:
    playwright_sync = pytest.importorskip("playwright.sync_api")
    cli = Cli(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    # the page shows a call by its subject (its path here; a bash call by its command only)
    script = [{"tool_calls": [{"name": "read", "arguments": {"path": "a\ud800"}}]}]
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script), encoding="ascii")
    assert cli.run("run", "go", "--model", f"scripted:{script_file}", "--dir", str(project)).code == 0
    session_id = older_store(cli.data_dir / "tether.db", project)
    with serving(cli.data_dir, project) as (_, url):
        with playwright_sync.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                page.set_default_timeout(30_000)
                page.goto(f"{url}/#token={TOKEN}")
                page.wait_for_selector("#live:text('live')")
                for item in page.query_selector_all("#sessions li"):
                    if item.get_attribute("data-id") != session_id:
                        item.click()
                        break
                page.wait_for_selector("li.tool")
                assert "a\\ud800" in page.inner_text("li.tool")
                page.click(f"li[data-id='{session_id}']")
                page.wait_for_selector("#session-head h2:text('title x')")
                page.wait_for_selector("li.tool")
                assert "x\\ud800y\\xff" in page.inner_text("#timeline")
                assert errors == []
            finally:
                browser.close()
