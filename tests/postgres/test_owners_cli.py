"""``tether sessions --owners`` (issue 36 item 4): the open stores sharing a session store, on SQLite and PostgreSQL.

A live holder (another process with the store open, a session claimed, a call ``running``) is listed with its claim,
its unfinished call and, on PostgreSQL, its lease and held advisory lock; once it is SIGKILLed, the next command's
store recovers it and it is gone from the list.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

_HOLDER = textwrap.dedent(
    """
    import sys, anyio
    from tether.session import AssistantInfo, MessageUpdated, PartUpdated, PostgresStore, SQLiteStore, ToolPart

    async def main(kind, target):
        store = await (SQLiteStore(target) if kind == "sqlite" else PostgresStore(target)).open()
        store.append(MessageUpdated(AssistantInfo(
            id="msg_1", session_id="ses_1", parent_id="msg_0", agent="build", model="m", created=1)))
        store.append(PartUpdated(ToolPart(
            id="prt_1", session_id="ses_1", message_id="msg_1", call_id="c1", tool="t", state="running", input={})))
        await store.flush()
        await store.claim("ses_1")
        print("ready", store.owner, flush=True)
        await anyio.sleep_forever()

    anyio.run(main, *sys.argv[1:3])
    """
)


def owners(env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", "sessions", "--owners", *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_sessions_owners_lists_a_live_holder_and_forgets_a_killed_one(
    store_kind: str, store_target: Callable[[str], str], tmp_path: Path
) -> None:
    target = store_target("tether.db")
    env: dict[str, Any] = {
        **os.environ,
        "TETHER_DATA_DIR": str(tmp_path),
        "TETHER_CONFIG_DIR": str(tmp_path / "config"),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    env.pop("TETHER_STORE_URL", None)
    if store_kind == "postgresql":
        env["TETHER_STORE_URL"] = target
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, store_kind, target], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        word, holder_id = holder.stdout.readline().split()
        assert word == "ready"
        listed = owners(env, "--json")
        assert listed.returncode == 0, listed.stderr
        rows = {row["id"]: row for row in json.loads(listed.stdout)}
        held = rows[holder_id]
        assert (held["pid"], held["live"], held["this"]) == (holder.pid, True, False)
        assert (held["claims"], held["unfinished"]) == (["ses_1"], 1)
        [me] = [row for row in rows.values() if row["this"]]
        assert me["live"] and me["pid"] != holder.pid
        if store_kind == "postgresql":
            assert held["locked"] is True and held["lease_until"] >= held["heartbeat"]
        else:
            assert held["locked"] is None and held["lease_until"] is None
        table = owners(env)
        assert table.returncode == 0, table.stderr
        assert holder_id in table.stdout and "(this command)" in table.stdout and "ses_1" in table.stdout
        assert ("lease until" in table.stdout) == (store_kind == "postgresql")
        holder.kill()  # SIGKILL: its row stays behind until a store recovers it
        holder.wait()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    after = owners(env, "--json")
    assert after.returncode == 0, after.stderr
    assert [row["this"] for row in json.loads(after.stdout)] == [True]  # recovered by this command's store
