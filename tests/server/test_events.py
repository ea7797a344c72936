"""The event hub on a real store: a slow client is dropped without slowing the publisher, heartbeats, replay
from the log, and the log is read by key ranges (law 10), the served project's events only."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tether import Runtime
from tether.server._events import EventHub
from tether.server._project import ServedProject
from tether.session import PartDelta, Session
from tether.store import SQLiteStore
from tether.store._sqlite import _PROJECT_EVENTS

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _delta(session: Session, i: int) -> PartDelta:
    return PartDelta(session_id=session.id, message_id="msg_a", part_id="prt_a", field="text", delta=f"d{i}")


async def test_a_client_that_does_not_read_is_dropped_and_the_publisher_never_waits(tmp_path: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data", plugins=False) as rt:
        session = await rt.sessions.create(tmp_path)
        hub = EventHub(rt.store, ServedProject(rt, session.info.project), queue_size=4)
        slow = await hub.connect(None, None)
        stream = hub.stream(slow, replay=False, heartbeat=60)
        assert await anext(stream) == b"retry: 1000\n\n"
        for i in range(1000):  # synchronous: it cannot wait for anyone
            hub.on_event(_delta(session, i))
        assert slow.dropped and hub.clients == 0
        frames = [frame async for frame in stream]
        assert len(frames) == 5
        assert all(b"event: text" in f for f in frames[:4]) and b'"delta":"d0"' in frames[0]
        assert frames[-1].startswith(b"event: dropped")
        # a client that keeps up is not affected by the slow one
        fast = await hub.connect(session.id, None)
        stream = hub.stream(fast, replay=False, heartbeat=60)
        await anext(stream)
        for i in range(3):
            hub.on_event(_delta(session, i))
            assert b'"delta":"d%d"' % i in await anext(stream)
        hub.on_event(PartDelta(session_id="ses_other", message_id="m", part_id="p", field="text", delta="x"))
        hub.on_event(_delta(session, 9))
        assert b'"delta":"d9"' in await anext(stream)  # another session's event was filtered out
        await stream.aclose()
        assert hub.clients == 0


async def test_an_idle_stream_sends_heartbeats(tmp_path: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data", plugins=False) as rt:
        hub = EventHub(rt.store, ServedProject(rt, str(tmp_path)))
        stream = hub.stream(await hub.connect(None, None), replay=False, heartbeat=0.01)
        await anext(stream)
        with anyio.fail_after(5):
            assert await anext(stream) == b": ping\n\n"
        await stream.aclose()


def test_the_log_is_read_by_key_ranges_never_scanned(tmp_path: Path) -> None:
    import sqlite3

    async def make() -> None:
        async with SQLiteStore(tmp_path / "tether.db"):
            pass

    anyio.run(make)
    conn = sqlite3.connect(tmp_path / "tether.db")
    select = (
        "SELECT e.seq, e.session_id, e.type, e.data, p.message_id FROM events e LEFT JOIN parts p "
        "ON e.type = 'message.part.updated' AND p.session_id = e.session_id AND p.id = e.ref "
    )
    for where, args in (
        ("WHERE e.seq > ? ORDER BY e.seq LIMIT ?", (0, 10)),
        ("WHERE e.session_id = ? AND e.seq > ? ORDER BY e.seq LIMIT ?", ("s", 0, 10)),
    ):
        plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {select}{where}", args))
        assert "SCAN e" not in plan.replace("SCAN e USING INTEGER PRIMARY KEY", ""), plan
        assert "SCAN p" not in plan, plan
        assert "TEMP B-TREE" not in plan, plan
    # a server's stream: the served project's events, the log walked from the last event read (not the project's
    # every session, sorted), each event's session found by its key
    for session, args in (("", ("/p", 0, 10, 10)), ("AND e.session_id = ? ", ("/p", 0, 10, "s", 10))):
        query = _PROJECT_EVENTS.format(session=session)
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {query}", args)]
        assert plan[0].startswith("SEARCH e USING"), plan
        assert "SEARCH s USING INDEX sqlite_autoindex_sessions_1 (id=?)" in plan, plan
        assert not any("SCAN" in step or "TEMP B-TREE" in step for step in plan), plan
    conn.close()


async def test_replay_after_a_seq_returns_exactly_the_later_events(tmp_path: Path) -> None:
    from tether import Runtime
    from tether.testing import ScriptedModel

    async with Runtime(data_dir=tmp_path / "data", plugins=False) as rt:
        session = await rt.sessions.create(tmp_path)
        await session.prompt("hi", model=ScriptedModel(["hello"]))
        await rt.store.flush()
        everything = await rt.store.events_after(0, session_id=session.id)
        assert [row[0] for row in everything] == sorted(row[0] for row in everything)
        hub = EventHub(rt.store, ServedProject(rt, session.info.project))
        middle = everything[len(everything) // 2][0]
        stream = hub.stream(await hub.connect(session.id, middle), replay=True, heartbeat=60)
        await anext(stream)
        replayed = [await anext(stream) for _ in range(len(everything) - len(everything) // 2 - 1)]
        await stream.aclose()
        seqs = [int(f.split(b"\n", 1)[0].removeprefix(b"id: ")) for f in replayed]
        assert seqs == [row[0] for row in everything if row[0] > middle]
        parts = [json.loads(f.split(b"data: ", 1)[1]) for f in replayed if b"event: part_updated" in f]
        assert parts and all(p["message_id"].startswith("msg_") for p in parts)
