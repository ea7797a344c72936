"""Two projects in one store: a server answers for its own project only, on every route and every stream.

The attack: projects A and B share one data directory (one store); B's agent read a secret file. A's server, asked
for the whole log (``Last-Event-ID: 0``), for B's session by id (``?session=``, path parameters) or for B's pending
asks, must show nothing of B: neither the secret nor a session id. The routes are enumerated from the served API
document (built from the table the app is built from), so a route added later is read too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from tests.postgres.fixtures import OpenStore

from tether import Runtime
from tether.client import Client, Event
from tether.permissions import PermissionAsked, PermissionReplied
from tether.server._routes import handlers
from tether.session import (
    MessageUpdated,
    QuestionAsked,
    QuestionReplied,
    SessionInfo,
    SessionStatus,
    SessionUpdated,
    UserInfo,
)
from tether.testing import ScriptedModel, tool_call

from .conftest import Live, start

READ_TIMEOUT = 30.0
HEARTBEAT = 0.2
"""The stream's heartbeat: a ping is sent only once nothing is queued, so reading until it reads all there is."""

SECRETS = {"a": "vault-of-alpha-4c1e7", "b": "vault-of-bravo-93d2f"}
MISSING = "per_00000000000000000000000000000"


def _project(tmp: Path, name: str) -> Path:
    project = tmp / name
    project.mkdir()
    (project / "vault.txt").write_text(f"the key is {SECRETS[name]}\n")
    return project


def _until_idle(events: Iterator[Event], session_id: str, seen: list[Event]) -> None:
    for event in events:
        seen.append(event)
        if event.type == "status" and event.data["session"] == session_id and event.data["status"] == "idle":
            return
    raise AssertionError("the stream ended first")


def _example(schema: dict[str, Any], components: dict[str, Any]) -> Any:
    """The smallest value that the body schema accepts (so a request gets past validation to the id check)."""
    if "$ref" in schema:
        return _example(components[schema["$ref"].rsplit("/", 1)[1]], components)
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return _example(next(s for s in schema["anyOf"] if s.get("type") != "null"), components)
    kind = schema.get("type")
    if kind == "object":
        return {k: _example(schema["properties"][k], components) for k in schema.get("required", ())}
    if kind == "array":
        return []
    if kind == "string":
        return "x"
    if kind == "integer":
        return 1
    return None


def _until_ping(response: httpx2.Response) -> str:
    """What an event stream sent until its first heartbeat: a ping goes out only once nothing is queued."""
    lines: list[str] = []
    for line in response.iter_lines():
        if line == ": ping":
            break
        lines.append(line)
    return "\n".join(lines)


def _read_stream(http: httpx2.Client, path: str, params: dict[str, str]) -> tuple[int, str]:
    """The stream (from ``Last-Event-ID: 0`` when the client sends it) until its first heartbeat: the replay and
    what is pending come before it."""
    with http.stream("GET", path, params=params, timeout=httpx2.Timeout(10.0, read=READ_TIMEOUT)) as response:
        return response.status_code, _until_ping(response)


def plant_outputs(data_dir: Path, sessions: Sequence[str], secret: str) -> dict[str, str]:
    """A retained output holding ``secret`` in each session's output directory (as a bounded call leaves one); the
    output id of each session."""
    names: dict[str, str] = {}
    for session_id in sessions:
        directory = data_dir / "tool-output" / session_id
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        names[session_id] = "tool_0planted"
        (directory / names[session_id]).write_text(f"the key is {secret}\n")
    return names


def read_every_route(
    live: Live,
    *,
    own: Sequence[str],
    other: Sequence[str],
    requests: Sequence[str] = (),
    outputs: Mapping[str, str] | None = None,
) -> list[tuple[str, str]]:
    """Call every route of the served API document with every id that fits it (the served project's ``own``
    sessions, the ``other`` project's sessions and pending ``requests``, each session's retained ``outputs``),
    ``Last-Event-ID: 0`` on each: (what was asked, the body) of each. The own ids answer 200; another project's
    answers exactly as a missing id does (404, the same body but for the id it echoes, which is left out of the body
    returned)."""
    outputs = outputs or plant_outputs(live.data_dir, [*own, *other], "planted")
    headers = {"authorization": f"Bearer {live.token}", "last-event-id": "0"}
    bodies: list[tuple[str, str]] = []
    with httpx2.Client(base_url=live.url, headers=headers, timeout=30) as http:

        def call(method: str, path: str, query: dict[str, str], body: Any, stream: bool) -> tuple[int, str]:
            if stream:
                return _read_stream(http, path, query)
            response = http.request(method.upper(), path, params=query, json=body)
            return response.status_code, response.text

        spec = http.get("/api/openapi.json").json()
        paths: dict[str, dict[str, Any]] = spec["paths"]
        assert {(m.upper(), p) for p, ops in paths.items() for m in ops} == {(m, p) for m, p, _ in handlers()}
        components = spec["components"]["schemas"]
        for path, operations in paths.items():
            for method, operation in operations.items():
                names = {p["name"] for p in operation.get("parameters", ()) if p["in"] == "query"}
                queries: list[dict[str, str]] = [{}]
                if "session" in names:
                    queries += [{"session": i} for i in (*own, *other)]
                if "q" in names:  # a search for what every project's sessions hold
                    queries += [{"q": "vault"}, {"q": "read"}, {"q": "t"}]
                # (the path asked, the id in it that must read as missing)
                targets: list[tuple[str, str | None]] = [(path, None)]
                if "{session_id}" in path:
                    mine: list[tuple[str, str | None]] = []

                    def fill(session_id: str, path: str = path) -> str:
                        return path.replace("{session_id}", session_id).replace(
                            "{output_id}", outputs[session_id]
                        )

                    if method == "get":
                        mine = [(fill(i), None) for i in own]
                    targets = mine + [(fill(i), i) for i in other]
                if "{request_id}" in path:
                    targets = [(path.replace("{request_id}", i), i) for i in (*requests, MISSING)]
                body = None
                if "requestBody" in operation:
                    schema = operation["requestBody"]["content"]["application/json"]["schema"]
                    body = _example(schema, components)
                stream = any(
                    "text/event-stream" in r.get("content", {}) for r in operation["responses"].values()
                )
                for target, hidden in targets:
                    for query in queries:
                        asked = f"{method.upper()} {target} {query}"
                        status, text = call(method, target, query, body, stream)
                        if hidden is None:
                            assert status < 300, (asked, status, text)
                        else:
                            missing = f"{hidden[:4]}{'0' * (len(hidden) - 4)}"
                            twin = call(method, target.replace(hidden, missing), query, body, stream)
                            assert status == 404, (asked, status, text)
                            assert twin == (404, text.replace(hidden, missing)), (asked, text, twin)
                            text = text.replace(hidden, "<the id asked>")
                        bodies.append((asked, text))
    return bodies


def _assert_nothing_of(bodies: list[tuple[str, str]], secret: str, ids: Sequence[str]) -> None:
    for asked, text in bodies:
        for leak in (secret, *ids):
            assert leak not in text, f"{asked} shows {leak}: {text[:2000]}"


def _turn(live: Live, api: Client, name: str) -> str:
    """Start a turn in project ``name``: its session runs a ``task`` child that reads the vault; the session id."""
    session = api.create_session()
    task = {"description": "d", "prompt": "look", "subagent_type": "explore"}
    live.script(
        [tool_call("task", task)],
        [tool_call("read", {"path": "vault.txt"})],
        f"the child saw {SECRETS[name]}",
        f"the vault says {SECRETS[name]}",
    )
    api.prompt(session["id"], "what is in the vault?")
    return session["id"]


def test_a_server_shows_nothing_of_another_project_in_the_same_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    servers = {
        name: start(
            tmp_path / f"home-{name}", project=_project(tmp_path, name), data_dir=data, heartbeat=HEARTBEAT
        )
        for name in ("a", "b")
    }
    lives = {name: next(server) for name, server in servers.items()}
    try:
        ids: dict[str, list[str]] = {}
        with lives["a"].client() as api_a, lives["b"].client() as api_b:
            apis = {"a": api_a, "b": api_b}
            streams = {n: apis[n].events(read_timeout=READ_TIMEOUT) for n in apis}
            seen: dict[str, list[Event]] = {"a": [], "b": []}
            for name in ("a", "b", "a", "b"):  # each tail wakes after the other project's turn was stored
                session = _turn(lives[name], apis[name], name)
                _until_idle(streams[name], session, seen[name])
                ids.setdefault(name, []).append(session)
            for stream in streams.values():
                stream.close()
            for name, api in apis.items():
                for parent in list(ids[name]):
                    tools = [p for m in api.messages(parent) for p in m["parts"] if p["type"] == "tool"]
                    child = tools[0]["metadata"]["session_id"]
                    assert SECRETS[name] in str(api.messages(child))
                    ids[name].append(child)
        for name, other in (("a", "b"), ("b", "a")):
            live_text = "\n".join(str(e.data) for e in seen[name])
            assert all(i in live_text for i in ids[name][:2])  # the project's own turns are on its stream
            _assert_nothing_of([("the live stream", live_text)], SECRETS[other], ids[other])
            outputs = {
                **plant_outputs(data, ids[name], SECRETS[name]),
                **plant_outputs(data, ids[other], SECRETS[other]),
            }
            bodies = read_every_route(lives[name], own=ids[name], other=ids[other], outputs=outputs)
            assert any(SECRETS[name] in text for asked, text in bodies if "/outputs/" in asked)
            _assert_nothing_of(bodies, SECRETS[other], ids[other])
            replay = "\n".join(text for asked, text in bodies if asked.startswith("GET /api/events {}"))
            assert SECRETS[name] in replay and all(i in replay for i in ids[name])  # children included
    finally:
        for server in servers.values():
            server.close()


def test_another_projects_turn_in_the_same_runtime_stays_out_of_the_stream_and_the_asks(
    tmp_path: Path,
) -> None:
    # an application serving A runs a turn of B in the same runtime: B's deltas, asks and questions are on its bus
    other = _project(tmp_path, "b")
    created, go, asked = threading.Event(), threading.Event(), threading.Event()
    found: dict[str, Any] = {"requests": [], "answers": []}

    async def run_b(rt: Runtime) -> None:
        def watch(event: Any) -> None:
            if isinstance(event, PermissionAsked | QuestionAsked):
                found["requests"].append(event.request.id)
                if len(found["requests"]) == 2:
                    asked.set()
            elif isinstance(event, PermissionReplied | QuestionReplied):
                found["answers"].append(event)
            elif (
                isinstance(event, SessionStatus) and event.status == "idle" and event.session_id == session.id
            ):
                found["answers"].append(event)

        session = await rt.sessions.create(other, rules=[("bash", "*", "ask")])  # asks, sandbox or not
        found["session"] = session.id
        created.set()
        await anyio.to_thread.run_sync(go.wait, abandon_on_cancel=True)
        question = {"questions": [{"question": f"Keep {SECRETS['b']}?", "header": "Keep", "options": [
            {"label": "yes", "description": "keep it"}, {"label": "no", "description": "drop it"}]}]}  # fmt: skip
        command = {"command": f"echo {SECRETS['b']} > copy.txt", "description": "copy"}
        model = ScriptedModel(
            [
                [f"the key is {SECRETS['b']}", tool_call("bash", command), tool_call("question", question)],
                "done",
            ]
        )
        with rt.bus.subscribe("*", watch), rt.bus.subscribe(QuestionAsked, watch):
            await session.prompt("copy the key", model=model)

    server = start(tmp_path, beside=run_b, heartbeat=HEARTBEAT)
    live = next(server)
    headers = {"authorization": f"Bearer {live.token}"}
    try:
        assert created.wait(30)
        other_id = found["session"]
        with (
            live.client() as api,
            httpx2.Client(base_url=live.url, headers=headers, timeout=30) as http,
            http.stream(
                "GET",
                "/api/events",
                params={"session": other_id},
                timeout=httpx2.Timeout(10.0, read=READ_TIMEOUT),
            ) as filtered,
        ):
            everything = api.events(read_timeout=READ_TIMEOUT)
            go.set()
            assert asked.wait(30), "B's turn did not ask"
            mine = api.create_session()
            live.script([tool_call("read", {"path": "notes.txt"})], "alpha")
            api.prompt(mine["id"], "read the notes")
            seen: list[Event] = []
            _until_idle(everything, mine["id"], seen)  # B's frames were published before, so they came first
            everything.close()
            filtered_text = _until_ping(filtered)
            # joining now: B's asks are pending, and would be sent first
            _, joined_text = _read_stream(http, "/api/events", {"session": other_id})
        live_text = "\n".join(str(e.data) for e in seen)
        assert mine["id"] in live_text
        outputs = {
            **plant_outputs(live.data_dir, [mine["id"]], "mine"),
            **plant_outputs(live.data_dir, [other_id], SECRETS["b"]),
        }
        bodies = read_every_route(
            live, own=[mine["id"]], other=[other_id], requests=found["requests"], outputs=outputs
        )
        bodies += [("the live stream", live_text), ("B's stream", filtered_text), ("B's stream", joined_text)]
        _assert_nothing_of(bodies, SECRETS["b"], [other_id, *found["requests"]])
        assert found["answers"] == []  # nothing A's server was asked answered, cancelled or ended B's turn
    finally:
        server.close()


def _info(session_id: str, project: str, *, parent: str | None = None, updated: int = 1) -> SessionInfo:
    return SessionInfo(
        id=session_id,
        project=project,
        directory=project,
        title="t",
        agent="build",
        parent_id=parent,
        created=1,
        updated=updated,
    )


@pytest.mark.anyio
async def test_a_projects_log_holds_its_sessions_and_children_and_passes_other_projects_once(
    open_store: OpenStore,
) -> None:
    async with open_store() as store:
        store.append(SessionUpdated(_info("ses_a", "/a")))
        store.append(SessionUpdated(_info("ses_b", "/b")))
        store.append(SessionUpdated(_info("ses_c", "/a", parent="ses_a")))  # a task child of A's session
        store.append(MessageUpdated(UserInfo(id="msg_b", session_id="ses_b", agent="build", created=1)))
        store.append(MessageUpdated(UserInfo(id="msg_c", session_id="ses_c", agent="build", created=1)))
        await store.flush()
        everything = await store.events_after(0)
        rows, covered = await store.project_events_after(0, project="/a")
        assert [(r[1], r[2]) for r in rows] == [
            ("ses_a", "session.updated"),
            ("ses_c", "session.updated"),
            ("ses_c", "message.updated"),
        ]
        assert covered == everything[-1][0]
        # only another project writes now: A's tail moves past its events, and never reads them again
        for n in range(3):
            store.append(SessionUpdated(_info("ses_b", "/b", updated=n + 2)))
            await store.flush()
        rows, moved = await store.project_events_after(covered, project="/a")
        assert rows == [] and moved == await store.last_seq() > covered
        assert await store.project_events_after(moved, project="/a") == ([], moved)
        # a page ends at its last row; the session filter never reaches another project's session
        rows, covered = await store.project_events_after(0, project="/a", limit=2)
        assert covered == rows[-1][0] and [r[1] for r in rows] == ["ses_a", "ses_c"]
        assert (await store.project_events_after(0, project="/a", session_id="ses_b"))[0] == []
        rows, _ = await store.project_events_after(0, project="/b", session_id="ses_b")
        assert {r[1] for r in rows} == {"ses_b"} and len(rows) >= 2
