"""The routes the inspector needs beyond the session API: search (title, text, tool name; the served project only),
a call's retained full output (the session's own files only, as text), and the preview of a pending request (the
diff an edit would write, computed from the file, and the command of a bash call)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from tests.postgres.fixtures import OpenStore

from tether import Runtime
from tether.client import ApiError, Client
from tether.config import Config
from tether.location import Location
from tether.permissions import PermissionRequest, PermissionSource
from tether.rules import Rule
from tether.server._preview import Change, change_of
from tether.session import (
    MessageUpdated,
    PartUpdated,
    SessionInfo,
    SessionUpdated,
    TextPart,
    ToolPart,
    UserInfo,
)
from tether.store._search import snippet
from tether.testing import tool_call

from .conftest import Live, start
from .test_api import READ_TIMEOUT, idle, until


def _session(session_id: str, project: str, title: str, updated: int) -> SessionInfo:
    return SessionInfo(
        id=session_id,
        project=project,
        directory=project,
        title=title,
        agent="build",
        created=1,
        updated=updated,
    )


@pytest.mark.anyio
async def test_search_finds_a_projects_sessions_by_title_text_and_tool_name(open_store: OpenStore) -> None:
    async with open_store() as store:
        sessions = [
            ("ses_a", "/p", "Fix the parser", 5),
            ("ses_b", "/p", "untitled", 4),
            ("ses_c", "/p", "other", 3),
            ("ses_d", "/q", "Fix the parser too", 6),  # another project: never found
            ("ses_e", "/p", "100% done_x", 2),
        ]
        for sid, project, title, updated in sessions:
            store.append(SessionUpdated(_session(sid, project, title, updated)))
        for sid in ("ses_b", "ses_c", "ses_d"):
            store.append(MessageUpdated(UserInfo(id=f"msg_{sid}", session_id=sid, agent="build", created=1)))
        text = "Please look at the TOKENIZER module " + "and more words " * 20
        store.append(PartUpdated(TextPart(id="prt_1", session_id="ses_b", message_id="msg_ses_b", text=text)))
        grep = ToolPart(
            id="prt_2",
            session_id="ses_c",
            message_id="msg_ses_c",
            call_id="c1",
            tool="grep",
            state="completed",
        )
        store.append(PartUpdated(grep))
        store.append(
            PartUpdated(TextPart(id="prt_3", session_id="ses_d", message_id="msg_ses_d", text="grep it"))
        )
        await store.flush()

        def found(words: str, limit: int = 50) -> list[tuple[str, str, str]]:
            return [(m.info.id, m.field, m.text) for m in matches[words, limit]]

        matches: dict[tuple[str, int], Sequence[Any]] = {}
        for words, limit in [("parser", 50), ("tokenizer", 50), ("GREP", 50), ("e", 2), ("%", 50), ("_x", 50),
                             ("_", 50), ("nothing like it", 50)]:  # fmt: skip
            matches[words, limit] = await store.search_sessions(words, project="/p", limit=limit)
        assert found("parser") == [("ses_a", "title", "Fix the parser")]
        [(sid, field, shown)] = found("tokenizer")
        assert (sid, field) == ("ses_b", "text") and "TOKENIZER module" in shown and len(shown) < len(text)
        # the tool's name; another project's text is not
        assert found("GREP") == [("ses_c", "tool", "grep")]
        newest = [s.id for s in await store.list_sessions(project="/p")]
        assert [m[0] for m in found("e", 2)] == newest[:2]  # most recently updated first, up to the limit
        assert [m[0] for m in found("%")] == ["ses_e"]  # LIKE's wildcards are literal
        assert [m[0] for m in found("_x")] == ["ses_e"]
        assert [m[0] for m in found("_")] == ["ses_e"]
        assert found("nothing like it") == []


def test_a_text_match_is_shown_as_the_line_around_it() -> None:
    text = "a" * 200 + "\nthe NEEDLE\there\n" + "b" * 200
    shown = snippet(text, "needle")
    assert shown.startswith("…") and shown.endswith("…") and "the NEEDLE here" in shown and "\n" not in shown
    assert snippet("short needle", "needle") == "short needle"


def test_the_route_searches_the_served_project_and_refuses_a_long_query(live: Live, api: Client) -> None:
    session = api.create_session(title="counting")
    live.script([tool_call("glob", {"pattern": "*.txt"}, id="c1")], ["found the notes"])
    with api.events(session=session["id"], read_timeout=READ_TIMEOUT) as stream:
        api.prompt(session["id"], "list the text files")
        until(stream, idle)
    api.create_session(title="unrelated")
    [hit] = api.sessions(q="glob")
    assert hit["id"] == session["id"] and hit["match"] == {"field": "tool", "text": "glob"}
    assert hit["busy"] is False and hit["title"] == "counting"
    [hit] = api.sessions(q="  TEXT   files ")  # spaces are collapsed, ASCII case ignored
    assert hit["match"]["field"] == "text" and hit["match"]["text"] == "list the text files"
    assert [s["title"] for s in api.sessions(q="")] == ["unrelated", "counting"]  # no words: the plain list
    assert api.sessions(q="a\x00b") == []
    with pytest.raises(ApiError) as refused:
        api.sessions(q="x" * 201)
    assert refused.value.status == 400 and "at most 200" in str(refused.value.detail)


def test_another_projects_sessions_are_never_found(tmp_path: Path) -> None:
    data = tmp_path / "data"
    servers = [start(tmp_path / name, project=tmp_path / f"p-{name}", data_dir=data) for name in ("a", "b")]
    a, b = (next(s) for s in servers)
    try:
        with a.client() as api_a, b.client() as api_b:
            api_b.create_session(title="secret plan")
            assert api_a.sessions(q="secret") == []
            assert [s["title"] for s in api_b.sessions(q="secret")] == ["secret plan"]
    finally:
        for server in servers:
            server.close()


def _bounded_call(live: Live, api: Client) -> tuple[str, dict[str, object]]:
    session = api.create_session(title="long")
    live.script([tool_call("bash", {"command": "seq 1 5000", "description": "count"}, id="c1")], ["counted"])
    with api.events(session=session["id"], read_timeout=READ_TIMEOUT) as stream:
        api.prompt(session["id"], "count")
        until(stream, idle)
    part = next(p for m in api.messages(session["id"]) for p in m["parts"] if p["type"] == "tool")
    return session["id"], part


def test_a_retained_output_is_served_whole_as_text_for_its_session_only(live: Live, api: Client) -> None:
    session_id, part = _bounded_call(live, api)
    [path] = part["output_paths"]  # type: ignore[misc]
    name = Path(str(path)).name
    full = api.output(session_id, name)
    assert full.startswith("".join(f"{n}\n" for n in range(1, 5001)))  # every line, the cut middle included
    headers = {"authorization": f"Bearer {live.token}"}
    response = httpx2.get(f"{live.url}/api/sessions/{session_id}/outputs/{name}", headers=headers)
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert "sandbox" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    other = api.create_session(title="other")
    for session, output in [(other["id"], name), (session_id, "tool_0"), (session_id, "..%2Fserver.token"),
                            (session_id, "server.token"), (session_id, f"{name}x")]:  # fmt: skip
        with pytest.raises(ApiError) as missing:
            api.output(session, output)
        assert missing.value.status == 404, (session, output)
    assert "output_paths" in str(missing.value.detail)
    # a symlink planted in the session's output directory is not followed
    (Path(str(path)).parent / "tool_1planted").symlink_to(live.data_dir / "server.token")
    with pytest.raises(ApiError) as planted:
        api.output(session_id, "tool_1planted")
    assert planted.value.status == 404
    assert not os.path.exists(live.data_dir / "server.token") or "test-token" not in str(planted.value.detail)


@pytest.fixture
def asking(tmp_path: Path) -> Iterator[Live]:
    """A server whose edits ask (the config tightens the build agent's allow)."""
    yield from start(tmp_path, config=Config(permission=(Rule("edit", "*", "ask"), Rule("bash", "*", "ask"))))


def _ask(live: Live, api: Client, *steps: object) -> tuple[str, dict[str, object]]:
    session = api.create_session(title="ask")
    live.script(*steps)
    api.prompt(session["id"], "go")
    with api.events(session=session["id"], read_timeout=READ_TIMEOUT) as stream:
        asked = until(stream, lambda e: e.type == "permission_asked")
    return session["id"], api.preview(asked.data["request"])


def test_an_edits_preview_is_the_diff_it_would_write(asking: Live) -> None:
    (asking.project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    with asking.client() as api:
        edit = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
        session_id, preview = _ask(asking, api, [tool_call("edit", edit, id="e1")], ["fixed"])
        assert preview["tool"] == "edit" and preview["input"] == edit and preview["reason"] is None
        patch = str(preview["patch"])
        assert "-    return a - b\n+    return a + b\n" in patch and "calc.py" in patch
        assert (asking.project / "calc.py").read_text().endswith("a - b\n")  # nothing written by a preview
        [request] = api.permissions(session=session_id)
        api.reply(request["id"], "reject")


def test_a_preview_says_why_it_has_no_diff_and_a_commands_preview_is_its_call(asking: Live) -> None:
    with asking.client() as api:
        edit = {"path": "notes.txt", "old_string": "gamma", "new_string": "delta"}
        session_id, preview = _ask(asking, api, [tool_call("edit", edit, id="e1")], ["no"])
        assert preview["patch"] is None and preview["reason"] == "old_string does not match the file once"
        api.reply(api.permissions(session=session_id)[0]["id"], "reject")
        write = {"path": "new.txt", "content": "one\ntwo\n"}
        session_id, preview = _ask(asking, api, [tool_call("write", write, id="w1")], ["no"])
        assert "+one\n+two\n" in str(preview["patch"])
        api.reply(api.permissions(session=session_id)[0]["id"], "reject")
        bash = {"command": "rm notes.txt", "description": "remove"}
        session_id, preview = _ask(asking, api, [tool_call("bash", bash, id="b1")], ["no"])
        assert preview == {"request": preview["request"], "tool": "bash", "input": bash, "patch": None,
                           "reason": None}  # fmt: skip
        api.reply(api.permissions(session=session_id)[0]["id"], "reject")
        with pytest.raises(ApiError) as missing:
            api.preview("per_00000000000000000000000000000")
        assert missing.value.status == 404


def test_a_request_that_is_not_a_stored_calls_previews_as_nothing(tmp_path: Path) -> None:
    asked = threading.Event()

    async def ask_beside(rt: Runtime) -> None:
        session = await rt.sessions.create(tmp_path / "project", rules=[("bash", "*", "ask")])
        for source in (None, PermissionSource(message_id="msg_gone", call_id="call_gone")):
            request = PermissionRequest(
                session_id=session.id, action="bash", resources=["echo hi"], source=source
            )
            await rt.permissions.ask(request)
        asked.set()
        await anyio.sleep_forever()  # the handle stays alive: its asks are the served project's

    server = start(tmp_path, beside=ask_beside)
    live = next(server)
    try:
        assert asked.wait(30)
        with live.client() as api:
            requests = api.permissions()
            assert len(requests) == 2
            for request in requests:
                assert api.preview(request["id"]) == {
                    "request": request["id"], "tool": None, "input": None, "patch": None, "reason": None
                }  # fmt: skip
    finally:
        server.close()


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "big.txt").write_text("x" * (4 << 20) + "y")
    (project / "latin1.txt").write_bytes(b"caf\xe9\n")
    (project / "gone.txt").write_text("old\n")
    (project / "move.txt").write_text("one\n")
    return project


def _patch(*lines: str) -> dict[str, str]:
    return {"patch_text": "\n".join(["*** Begin Patch", *lines, "*** End Patch"])}


@pytest.mark.anyio
async def test_the_change_of_each_edit_tool_is_computed_from_the_file_or_said_why_not(tmp_path: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data", plugins=False) as rt:
        await _changes((await rt.location(_project(tmp_path))).location)


async def _changes(location: Location) -> None:
    edit = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
    found = await change_of(location, "edit", edit)
    assert found.reason is None and "-    return a - b\n+    return a + b\n" in str(found.patch)
    write = await change_of(location, "write", {"path": "calc.py", "content": "\ufeffx = 1\r\n"})
    assert "-def add(a, b):" in str(write.patch) and "+x = 1\n" in str(write.patch)
    patch = _patch(
        "*** Add File: new.txt", "+hello",
        "*** Delete File: gone.txt",
        "*** Update File: move.txt", "*** Move to: moved.txt", "@@", "-one", "+two",
    )  # fmt: skip
    applied = str((await change_of(location, "apply_patch", patch)).patch)
    assert (
        "+hello" in applied and "-old" in applied and "move.txt -> moved.txt" in applied and "+two" in applied
    )
    assert (location.root / "gone.txt").exists() and not (
        location.root / "new.txt"
    ).exists()  # nothing written
    reasons = {
        "edit of a missing file": ("edit", {**edit, "path": "missing.py"}),
        "edit that does not match": ("edit", {**edit, "old_string": "nowhere"}),
        "edit without strings": ("edit", {"path": "calc.py"}),
        "a file too large": ("write", {"path": "big.txt", "content": "x"}),
        "not UTF-8": ("write", {"path": "latin1.txt", "content": "x"}),
        "write without content": ("write", {"path": "calc.py"}),
        "no path": ("edit", {"old_string": "a", "new_string": "b"}),
        "a path that cannot be": ("edit", {**edit, "path": "calc.py\x00"}),
        "a directory": ("write", {"path": ".", "content": "x"}),
        "outside the project": ("edit", {**edit, "path": "/etc/passwd"}),
        "patch without text": ("apply_patch", {}),
        "patch that does not parse": ("apply_patch", {"patch_text": "nonsense"}),
        "patch of a missing file": ("apply_patch", _patch("*** Update File: missing.txt", "@@", "-a", "+b")),
        "patch that does not apply": (
            "apply_patch",
            _patch("*** Update File: calc.py", "@@", "-nowhere", "+b"),
        ),
        "patch outside the project": ("apply_patch", _patch("*** Delete File: /etc/passwd")),
    }
    for case, (tool, tool_input) in reasons.items():
        change = await change_of(location, tool, tool_input)
        assert change.patch is None and change.reason, case
    assert "larger than 4 MiB" in str(
        (await change_of(location, "write", {"path": "big.txt", "content": ""})).reason
    )
    update = await change_of(location, "apply_patch", _patch("*** Update File: calc.py", "@@", "-    return a - b",
                                                             "+    return b + a"))  # fmt: skip
    assert "+    return b + a" in str(update.patch) and "->" not in str(update.patch)
    outside = await change_of(location, "write", {"path": "/etc/passwd", "content": "x"})
    assert outside == Change(
        reason="/etc/passwd is outside the project: its content is not read for a preview"
    )
    assert await change_of(location, "bash", {"command": "ls"}) == Change()
    assert await change_of(location, "edit", "not an object") == Change()
