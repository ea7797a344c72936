"""One message by key (``load_message``), on both stores (``open_store``) and the in-memory store: what a Temporal
tool call reads to find its part, whatever the session's length (law 10)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from tests.postgres.fixtures import OpenStore

from tether.records import DurableEvent
from tether.session import (
    AssistantInfo,
    MessageUpdated,
    PartUpdated,
    SessionInfo,
    SessionUpdated,
    TextPart,
    ToolPart,
    UserInfo,
)
from tether.store import SQLiteStore
from tether.store._admin import _MESSAGE_PARTS  # pyright: ignore[reportPrivateUsage]
from tether.testing import MemoryStore

pytestmark = pytest.mark.anyio

BIG = "x" * 20_000
"""An input past the inline limit: stored once in ``inputs`` and joined back on read."""


def history(sid: str, messages: int) -> list[DurableEvent]:
    """A session of ``messages`` messages (ids unique across sessions, as ``tether.ids`` makes them), each a text part and a tool call (every third call with a large input)."""
    events: list[DurableEvent] = [
        SessionUpdated(
            SessionInfo(id=sid, project="/p", directory="/p", title="t", agent="build", created=1, updated=1)
        )
    ]
    for n in range(messages):
        mid = f"msg_{sid}_{n:04d}"
        info = (
            UserInfo(id=mid, session_id=sid, agent="build", created=n)
            if n % 2 == 0
            else AssistantInfo(
                id=mid,
                session_id=sid,
                parent_id=f"msg_{sid}_{n - 1:04d}",
                agent="build",
                model="m",
                created=n,
                completed=n,
            )
        )
        events.append(MessageUpdated(info))
        events.append(
            PartUpdated(TextPart(id=f"prt_{sid}_{n:04d}a", session_id=sid, message_id=mid, text=f"text {n}"))
        )
        tool = ToolPart(
            id=f"prt_{sid}_{n:04d}b",
            session_id=sid,
            message_id=mid,
            call_id=f"call_{sid}_{n}",
            tool="t",
            state="completed",
            input={"value": BIG if n % 3 == 0 else n},
        )
        events.append(PartUpdated(tool))
    return events


async def test_one_message_among_many_is_the_one_load_messages_holds(open_store: OpenStore) -> None:
    async with open_store() as store:
        for event in history("ses_1", 60) + history("ses_2", 3):
            store.append(event)
        whole = await store.load_messages("ses_1")
        for index in (0, 1, 30, 59):
            found = await store.load_message("ses_1", f"msg_ses_1_{index:04d}")
            assert found == whole[index]
            assert found is not None and len(found.parts) == 2
        big = await store.load_message("ses_1", "msg_ses_1_0030")
        assert big is not None and isinstance(big.parts[1], ToolPart) and big.parts[1].input == {"value": BIG}


async def test_a_missing_message_or_another_sessions_is_none(open_store: OpenStore) -> None:
    async with open_store() as store:
        for event in history("ses_1", 3) + history("ses_2", 5):
            store.append(event)
        assert await store.load_message("ses_1", "msg_ses_1_9999") is None
        assert await store.load_message("ses_1", "msg_ses_2_0004") is None  # ses_2 has it, ses_1 does not
        assert await store.load_message("ses_nope", "msg_ses_1_0000") is None
        found = await store.load_message("ses_2", "msg_ses_2_0004")
        assert found is not None and found.info.session_id == "ses_2"


async def test_a_read_after_append_sees_the_parts_being_written(open_store: OpenStore) -> None:
    # A window no burst outlasts: nothing is committed until the read (queued behind the writes) cuts it short.
    async with open_store(window=60.0) as store:
        events = history("ses_1", 2)
        for event in events:
            store.append(event)
        first = await store.load_message("ses_1", "msg_ses_1_0001")
        assert first is not None and [p.id for p in first.parts] == ["prt_ses_1_0001a", "prt_ses_1_0001b"]
        tool = first.parts[1]
        assert isinstance(tool, ToolPart)
        extra = TextPart(id="prt_ses_1_0001c", session_id="ses_1", message_id="msg_ses_1_0001", text="more")
        store.append(PartUpdated(replace(tool, state="error", error="boom")))
        store.append(PartUpdated(extra))
        again = await store.load_message("ses_1", "msg_ses_1_0001")
        assert again is not None
        assert [p.id for p in again.parts] == ["prt_ses_1_0001a", "prt_ses_1_0001b", "prt_ses_1_0001c"]
        assert isinstance(again.parts[1], ToolPart) and again.parts[1].state == "error"


async def test_the_memory_store_finds_one_message_as_the_stores_do() -> None:
    store = MemoryStore()
    for event in history("ses_1", 4) + history("ses_2", 2):
        store.append(event)
    whole = await store.load_messages("ses_1")
    assert await store.load_message("ses_1", "msg_ses_1_0002") == whole[2]
    assert await store.load_message("ses_1", "msg_ses_1_9999") is None
    assert await store.load_message("ses_nope", "msg_ses_1_0000") is None


async def test_the_sqlite_lookup_searches_the_message_s_parts_by_key_not_the_session_s(
    tmp_path: Path,
) -> None:
    """With no statistics (no ``ANALYZE``) the planner would walk the session's parts by the primary key: the read
    names ``parts_message`` (law 10)."""
    async with SQLiteStore(tmp_path / "tether.db"):
        pass
    conn = sqlite3.connect(tmp_path / "tether.db")
    plan = [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {_MESSAGE_PARTS}", ("ses_1", "msg_1"))]
    conn.close()
    assert any("parts_message (session_id=? AND message_id=?)" in d for d in plan), plan
    assert not any("TEMP B-TREE" in d for d in plan), plan
