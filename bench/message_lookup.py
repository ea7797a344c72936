"""What a Temporal tool call pays to find its part: the whole session (``load_messages``, before) against one message
by key (``load_message``, after), in sessions of 1,000 and 10,000 parts on the SQLite store.

A session of assistant messages, each a text part and four tool parts (small inputs, as most calls have); the lookup
is of the last message (the one a running turn's calls settle). Figures: median wall time per lookup over 3
alternating blocks of each kind (a whole-session read leaves the call after it slower: its garbage, and a process
that just burnt ~100 ms of CPU waits longer for its threads on a loaded machine), and the ratio. Law 10: the "after"
column stays flat as the session grows.

Run: ``.venv/bin/python bench/message_lookup.py [--repeat N] [--postgres URL]``
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from tether.content import Text
from tether.records import DurableEvent
from tether.session import (
    AssistantInfo,
    MessageUpdated,
    PartUpdated,
    SessionInfo,
    SessionUpdated,
    TextPart,
    ToolPart,
)
from tether.store import PostgresStore, SQLiteStore, StoredMessage

PARTS_PER_MESSAGE = 5
ROUNDS = 3


def session(sid: str, parts: int) -> tuple[list[DurableEvent], str]:
    events: list[DurableEvent] = [
        SessionUpdated(
            SessionInfo(id=sid, project="/p", directory="/p", title="t", agent="build", created=1, updated=1)
        )
    ]
    mid = ""
    for n in range(parts // PARTS_PER_MESSAGE):
        mid = f"msg_{sid}_{n:06d}"
        events.append(
            MessageUpdated(
                AssistantInfo(
                    id=mid,
                    session_id=sid,
                    parent_id="msg_u",
                    agent="build",
                    model="m",
                    created=n,
                    completed=n,
                )
            )
        )
        events.append(
            PartUpdated(TextPart(id=f"prt_{sid}_{n:06d}_t", session_id=sid, message_id=mid, text="ok " * 40))
        )
        for k in range(PARTS_PER_MESSAGE - 1):
            events.append(
                PartUpdated(
                    ToolPart(
                        id=f"prt_{sid}_{n:06d}_{k}",
                        session_id=sid,
                        message_id=mid,
                        call_id=f"call_{sid}_{n}_{k}",
                        tool="read",
                        state="completed",
                        input={"filePath": f"/p/src/file_{n}_{k}.py"},
                        content=(Text("line\n" * 20),),
                    )
                )
            )
    return events, mid


def _find(stored: list[StoredMessage] | tuple[StoredMessage, ...], message_id: str) -> StoredMessage | None:
    return next((m for m in reversed(stored) if m.info.id == message_id), None)


async def measure(store: SQLiteStore | PostgresStore, sizes: list[int], repeat: int) -> None:
    targets: dict[int, tuple[str, str]] = {}
    for size in sizes:
        events, last = session(f"ses_{size}", size)
        for event in events:
            store.append(event)
        await store.flush()
        targets[size] = (f"ses_{size}", last)
    for size, (sid, mid) in targets.items():
        before: list[float] = []
        after: list[float] = []
        whole = _find(list(await store.load_messages(sid)), mid)
        for _ in range(ROUNDS):  # blocks of each, alternating: a whole-session read leaves the next call slow
            for _ in range(repeat):
                t = time.perf_counter()
                _find(list(await store.load_messages(sid)), mid)
                before.append(time.perf_counter() - t)
            gc.collect()
            for _ in range(repeat):
                t = time.perf_counter()
                one = await store.load_message(sid, mid)
                after.append(time.perf_counter() - t)
                assert one is not None and one == whole
        b, a = statistics.median(before) * 1000, statistics.median(after) * 1000
        print(f"{size:>6} parts  load_messages+find {b:9.2f} ms   load_message {a:7.3f} ms   {b / a:7.0f}x")


async def main() -> None:
    parser = argparse.ArgumentParser(description="Time a tool call's message lookup, before and after.")
    parser.add_argument("--repeat", type=int, default=10, help="lookups per block")
    parser.add_argument("--postgres", help="a PostgreSQL URL (an empty database) to measure that store too")
    args = parser.parse_args()
    sizes = [1_000, 10_000]
    with tempfile.TemporaryDirectory() as tmp:
        print("SQLite")
        async with SQLiteStore(Path(tmp) / "tether.db") as store:
            await measure(store, sizes, args.repeat)
    if args.postgres:
        print("PostgreSQL")
        async with PostgresStore(args.postgres) as pg:
            await measure(pg, sizes, args.repeat)


if __name__ == "__main__":
    anyio.run(main)
