"""The PostgreSQL store's own behaviour: opening errors without the password, migrations, leases across processes,
claims raced by real processes, a server restart mid-run, odd text, saved approvals, the runtime's selection."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.postgres.server import PASSWORD, PostgresServer

from tether import Runtime
from tether.config import Config
from tether.errors import StoreError, UsageError
from tether.session import AssistantInfo, MessageUpdated, PartUpdated, SessionInfo, SessionUpdated, ToolPart
from tether.store import PgSavedApprovals, PostgresStore
from tether.store._postgres_conn import describe, redact
from tether.store._postgres_rows import EVENTS_LOCK, pg_text, py_text
from tether.store._postgres_schema import MIGRATIONS
from tether.store.internal import INTERRUPTED_ERROR
from tether.tools import Text

ROOT = Path(__file__).resolve().parents[2]


def session(sid: str = "ses_1", project: str = "/p") -> SessionInfo:
    return SessionInfo(
        id=sid, project=project, directory=project, title="t", agent="build", created=1, updated=1
    )


def running(part_id: str = "prt_1", session_id: str = "ses_1") -> ToolPart:
    return ToolPart(
        id=part_id,
        session_id=session_id,
        message_id="msg_1",
        call_id="c1",
        tool="t",
        state="running",
        input={},
    )


def assistant(session_id: str = "ses_1") -> AssistantInfo:
    return AssistantInfo(
        id="msg_1", session_id=session_id, parent_id="msg_0", agent="build", model="m", created=1
    )


def sql(url: str, statement: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement, args)  # pyright: ignore[reportArgumentType]
        return cursor.fetchall() if cursor.description else []


# -- opening ---------------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_wrong_password_is_a_clear_error_that_never_shows_the_password(
    postgres: PostgresServer,
) -> None:
    wrong = "not-the-" + PASSWORD
    with pytest.raises(StoreError, match="password authentication failed") as caught:
        await PostgresStore(postgres.url(password=wrong)).open()
    assert wrong not in str(caught.value) and "***" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # no traceback shows the URL


@pytest.mark.anyio
async def test_an_unreachable_server_fails_within_the_connect_timeout(postgres: PostgresServer) -> None:
    with anyio.fail_after(20):  # a blackhole address: only the connect timeout ends the wait
        with pytest.raises(StoreError, match="Cannot open session store") as caught:
            await PostgresStore(f"postgresql://u:{PASSWORD}@10.255.255.1:5432/db?connect_timeout=1").open()
    assert PASSWORD not in str(caught.value)


@pytest.mark.anyio
async def test_a_flush_asked_while_the_store_fails_to_open_is_answered_with_the_failure() -> None:
    # A task flushes while another opens the store; the connection never comes (a blackhole address, 1 s timeout):
    # the flush is answered with the store's failure instead of waiting on a thread that will never serve it.
    store = PostgresStore(f"postgresql://u:{PASSWORD}@10.255.255.1:5432/db?connect_timeout=1")
    failures: list[str] = []

    async def flush() -> None:
        await anyio.sleep(0.2)  # the writer thread is connecting
        try:
            await store.flush()
        except StoreError as exc:
            failures.append(exc.message)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(flush)
            with pytest.raises(StoreError, match="Cannot open session store"):
                await store.open()
    assert len(failures) == 1 and "Cannot open session store" in failures[0] and PASSWORD not in failures[0]


def test_redaction_covers_the_userinfo_the_query_and_the_decoded_password() -> None:
    url = "postgresql://me:p%40ss@h/db?password=q2"
    assert describe(url) == "postgresql://me:***@h/db?password=***"
    assert redact("failed for p@ss and q2", url) == "failed for *** and ***"
    assert repr(PostgresStore(url)) == "<PostgresStore postgresql://me:***@h/db?password=***>"


@pytest.mark.anyio
async def test_a_newer_schema_is_refused(postgres: PostgresServer) -> None:
    url = postgres.database()
    sql(url, "UPDATE tether_schema SET version = %s", len(MIGRATIONS) + 1)
    with pytest.raises(StoreError, match="schema version"):
        await PostgresStore(url).open()


@pytest.mark.anyio
async def test_stores_opening_one_fresh_database_together_migrate_it_once(postgres: PostgresServer) -> None:
    url = postgres.database(template=None)
    stores = [PostgresStore(url) for _ in range(6)]
    async with anyio.create_task_group() as tg:
        for store in stores:
            tg.start_soon(store.open)
    for store in stores:
        await store.aclose()
    assert sql(url, "SELECT version FROM tether_schema") == [(len(MIGRATIONS),)]
    assert sql(url, "SELECT count(*) FROM owners") == [(0,)]


def test_the_lease_must_be_positive() -> None:
    with pytest.raises(UsageError, match="lease"):
        PostgresStore("postgresql://h/db", lease=0)


# -- leases ----------------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_expired_lease_is_recovered_and_its_store_then_refuses_to_write(
    postgres: PostgresServer,
) -> None:
    url = postgres.database()
    async with PostgresStore(url) as paused, PostgresStore(url) as other:
        paused.append(SessionUpdated(session()))
        paused.append(MessageUpdated(assistant()))
        paused.append(PartUpdated(running()))
        await paused.flush()
        assert await other.recover() == 0  # live: lease valid and its connection holds its lock
        sql(url, "UPDATE owners SET lease_until = 0 WHERE id = %s", paused.owner)  # as if it stopped renewing
        assert await other.recover() == 1
        await other.claim("ses_1")
        paused.append(PartUpdated(running("prt_2")))
        with pytest.raises(StoreError, match="lease expired"):
            await paused.flush()
        (message,) = await other.load_messages("ses_1")
    (part,) = message.parts
    assert isinstance(part, ToolPart) and part.error == INTERRUPTED_ERROR and part.interrupted


HOLDER = textwrap.dedent(
    """
    import sys
    import anyio
    from tether.session import AssistantInfo, MessageUpdated, PartUpdated, PostgresStore, SessionInfo, SessionUpdated
    from tether.session import ToolPart

    async def main(url: str, session_id: str) -> None:
        async with PostgresStore(url, recover=False) as store:
            store.append(SessionUpdated(SessionInfo(id=session_id, project="/p", directory="/p", title="t",
                                                    agent="build", created=1, updated=1)))
            store.append(MessageUpdated(AssistantInfo(id="msg_1", session_id=session_id, parent_id="msg_0",
                                                      agent="build", model="m", created=1)))
            store.append(PartUpdated(ToolPart(id="prt_" + session_id, session_id=session_id, message_id="msg_1",
                                              call_id="c1", tool="t", state="running", input={})))
            await store.flush()
            print(sys.argv[3] if len(sys.argv) > 3 else "ready", flush=True)
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if line.strip() == "claim":
                try:
                    await store.claim("ses_shared")
                except Exception as exc:
                    print("busy:", exc, flush=True)
                else:
                    print("won", flush=True)
                await anyio.to_thread.run_sync(sys.stdin.readline)

    anyio.run(main, sys.argv[1], sys.argv[2])
    """
)


def spawn(url: str, session_id: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url, session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


def end(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.communicate()


@pytest.mark.anyio
async def test_a_live_workers_call_is_kept_and_a_killed_workers_call_is_recovered(
    postgres: PostgresServer,
) -> None:
    url = postgres.database()
    worker = spawn(url, "ses_w")
    try:
        async with PostgresStore(url) as store:
            assert store.recovered == 0  # the worker lives: its running call is left alone
            (message,) = await store.load_messages("ses_w")
            assert [p.state for p in message.parts if isinstance(p, ToolPart)] == ["running"]
            os.kill(worker.pid, signal.SIGKILL)
            end(worker)
            # The server drops the dead worker's connection, and its advisory lock with it, as it notices the
            # closed socket: no lease to wait out.
            with anyio.fail_after(10):
                while await store.recover() == 0:
                    await anyio.sleep(0.05)
            (message,) = await store.load_messages("ses_w")
        (part,) = [p for p in message.parts if isinstance(p, ToolPart)]
        assert part.state == "error" and part.error == INTERRUPTED_ERROR and part.interrupted
        assert isinstance(message.info, AssistantInfo) and message.info.error is not None
    finally:
        end(worker)


@pytest.mark.anyio
async def test_workers_racing_for_one_session_never_both_get_it(postgres: PostgresServer) -> None:
    url = postgres.database()
    workers = [spawn(url, f"ses_{n}") for n in range(4)]
    try:
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("claim\n")
            worker.stdin.flush()
        answers = [worker.stdout.readline().strip() for worker in workers if worker.stdout is not None]
        assert sorted(a.split(":")[0] for a in answers) == ["busy", "busy", "busy", "won"], answers
        async with PostgresStore(url) as store:
            with pytest.raises(UsageError, match="is busy"):
                await store.claim("ses_shared")
            winner = workers[[a.split(":")[0] for a in answers].index("won")]
            end(winner)
            with anyio.fail_after(10):  # the winner is gone: its claim is free at once, no lease to wait out
                while True:
                    try:
                        await store.claim("ses_shared")
                    except UsageError:
                        await anyio.sleep(0.05)
                    else:
                        break
    finally:
        for worker in workers:
            end(worker)


# -- failures --------------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_server_restart_mid_run_is_a_store_error_and_loses_nothing_flushed(
    postgres: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = postgres.database()
    store = await PostgresStore(url).open()
    try:
        store.append(SessionUpdated(session()))
        await store.flush()
        await anyio.to_thread.run_sync(postgres.restart)
        store.append(SessionUpdated(session("ses_2")))
        with anyio.fail_after(30), pytest.raises(StoreError) as caught:
            await store.flush()
        assert "server closed the connection" in str(caught.value) and PASSWORD not in str(caught.value)
        with pytest.raises(StoreError):
            store.append(SessionUpdated(session("ses_3")))
    finally:
        await store.aclose()
    async with PostgresStore(url) as reopened:
        assert [s.id for s in await reopened.list_sessions()] == ["ses_1"]
    assert caplog.records and not [r for r in caplog.records if PASSWORD in r.getMessage()]


@pytest.mark.anyio
async def test_huge_and_odd_outputs_are_stored_losslessly(postgres: PostgresServer) -> None:
    big = "x\x00y\udcff" * 2_000_000  # 8 M characters with NUL bytes and a lone surrogate
    part = ToolPart(
        id="prt_1",
        session_id="ses\x00odd",
        message_id="msg_1",
        call_id="c\x00\ud800",
        tool="t",
        state="completed",
        input={"big": big},
        content=(Text(big),),
    )
    url = postgres.database()
    async with PostgresStore(url) as store:
        store.append(SessionUpdated(session("ses\x00odd", "/p\x00\udcff")))
        store.append(MessageUpdated(assistant("ses\x00odd")))
        store.append(PartUpdated(part))
        await store.flush()
        assert [s.id for s in await store.list_sessions(project="/p\x00\udcff")] == ["ses\x00odd"]
        assert (await store.resolve_session("ses\x00odd")).project == "/p\x00\udcff"
    async with PostgresStore(url) as store:
        (message,) = await store.load_messages("ses\x00odd")
    (stored,) = message.parts
    assert isinstance(stored, ToolPart) and stored.input == {"big": big} and stored.call_id == "c\x00\ud800"
    assert stored.content == (Text(big),)


@given(
    st.text(alphabet=st.characters(exclude_categories=()))
    | st.just("\x01")
    | st.from_regex(r"\x01\".*", fullmatch=True)
)
def test_pg_text_is_reversible_and_always_storable(value: str) -> None:
    stored = pg_text(value)
    assert py_text(stored) == value
    assert "\x00" not in stored
    stored.encode("utf-8")


# -- saved approvals and the runtime ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_saved_approvals_are_shared_by_every_worker(postgres: PostgresServer) -> None:
    url = postgres.database()
    async with PgSavedApprovals(url, refresh=0) as one, PgSavedApprovals(url, refresh=0) as two:
        added = await one.add("/p", "bash", ["git *", "git *", "ls"])
        assert [a.resource for a in added] == ["git *", "ls"]
        assert await one.add("/p", "bash", ["ls"]) == []
        assert [r.resource for r in (await two.rules("/p")).rules] == ["git *", "ls"]
        await two.remove(added[0].id)
        assert [a.resource for a in await one.list("/p")] == ["ls"]
    with pytest.raises(StoreError, match="closed"):
        await one.list()


@pytest.mark.anyio
async def test_saved_approvals_errors_never_show_the_password(postgres: PostgresServer) -> None:
    saved = PgSavedApprovals(postgres.url(password="wrong-" + PASSWORD))
    with pytest.raises(StoreError) as caught:
        await saved.list()
    assert PASSWORD not in str(caught.value)
    await saved.close()


@pytest.mark.anyio
async def test_the_runtime_uses_the_store_url_from_the_environment_or_the_config(
    postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres.database()
    monkeypatch.setenv("TETHER_STORE_URL", url)
    async with Runtime(data_dir=tmp_path / "data", plugins=False) as rt:
        assert isinstance(rt.store, PostgresStore)
        assert isinstance(rt.saved, PgSavedApprovals)
    monkeypatch.delenv("TETHER_STORE_URL")
    config = Config(data={"store": url, "output_dir": str(tmp_path / "shared")})
    async with Runtime(data_dir=tmp_path / "data", config=config, plugins=False) as rt:
        assert isinstance(rt.store, PostgresStore)
        assert rt.output.directory == tmp_path / "shared"
    monkeypatch.setenv("TETHER_STORE_URL", "mysql://u:pw@h/db")
    with pytest.raises(UsageError, match="postgresql://") as caught:
        async with Runtime(data_dir=tmp_path / "data", plugins=False):
            pass
    assert "pw" not in str(caught.value)


@pytest.mark.anyio
async def test_a_refused_write_keeps_exactly_the_events_appended_before_it(postgres: PostgresServer) -> None:
    url = postgres.database()
    async with PostgresStore(url) as store:
        store.append(SessionUpdated(session()))
        await store.flush()
        sql(
            url,
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.id = 'prt_bad' THEN RAISE EXCEPTION 'no space left'; END IF; RETURN NEW; END $$",
        )
        sql(url, "CREATE TRIGGER refuse BEFORE INSERT ON parts FOR EACH ROW EXECUTE FUNCTION refuse()")
        # one batch: the message and prt_1 come before the refused part, prt_3 after it
        store.append(MessageUpdated(assistant()))
        store.append(PartUpdated(running("prt_1")))
        store.append(PartUpdated(running("prt_bad")))
        store.append(PartUpdated(running("prt_3")))
        with anyio.fail_after(10), pytest.raises(StoreError, match="no space left"):
            await store.flush()
        with pytest.raises(StoreError, match="no space left"):
            store.append(PartUpdated(running("prt_4")))
        (message,) = await store.load_messages("ses_1")  # reads are still answered
    assert [p.id for p in message.parts] == ["prt_1"]


@pytest.mark.anyio
async def test_an_idle_store_renews_its_lease_and_fails_once_it_is_lost(postgres: PostgresServer) -> None:
    url = postgres.database()
    async with PostgresStore(url, lease=0.3) as store:
        ((first,),) = sql(url, "SELECT lease_until FROM owners WHERE id = %s", store.owner)
        with anyio.fail_after(10):
            while sql(url, "SELECT lease_until FROM owners WHERE id = %s", store.owner)[0][0] == first:
                await anyio.sleep(0.05)  # renewed every 0.1 s with nothing to write
        sql(url, "DELETE FROM owners WHERE id = %s", store.owner)  # as another worker's recovery does
        with anyio.fail_after(10):
            while store.error is None:
                await anyio.sleep(0.05)
        assert "lease expired" in str(store.error)
        with pytest.raises(StoreError, match="lease expired"):
            store.append(SessionUpdated(session()))


@pytest.mark.anyio
async def test_todos_children_and_the_event_stream_read_from_postgres(postgres: PostgresServer) -> None:
    from tether.store._todos import Todo

    url = postgres.database()
    async with PostgresStore(url) as store:
        assert await store.last_seq() == 0
        store.append(SessionUpdated(session("ses_1")))
        child = SessionInfo(
            id="ses_2",
            project="/p",
            directory="/p",
            title="c",
            agent="build",
            parent_id="ses_1",
            created=2,
            updated=2,
        )
        store.append(SessionUpdated(child))
        store.append(MessageUpdated(assistant("ses_2")))
        store.append(PartUpdated(running("prt_1", "ses_2")))
        todos = [
            Todo(id="1", content="odd \x00 text \udcff", status="in_progress", priority="high"),
            Todo(id="2", content="plain", status="pending", priority="low"),
        ]
        await store.save_todos("ses_1", todos)
        assert await store.load_todos("ses_1") == (
            Todo(id="1", content="odd \x00 text \\xff", status="in_progress", priority="high"),
            todos[1],
        )
        await store.save_todos("ses_1", [])
        assert await store.load_todos("ses_1") == ()
        assert [s.id for s in await store.child_sessions("ses_1")] == ["ses_2"]
        events = await store.events_after(0)
        assert [(e[1], e[2], e[4]) for e in events] == [
            ("ses_1", "session.updated", None),
            ("ses_2", "session.updated", None),
            ("ses_2", "message.updated", None),
            ("ses_2", "message.part.updated", "msg_1"),
        ]
        assert await store.last_seq() == events[-1][0]
        assert [e[2] for e in await store.events_after(events[1][0], session_id="ses_2", limit=1)] == [
            "message.updated"
        ]


@pytest.mark.anyio
async def test_workers_writing_the_same_rows_in_opposite_orders_never_deadlock(
    postgres: PostgresServer,
) -> None:
    # Two stores update the same rows in opposite orders, in large batches: every write transaction takes the
    # event-log lock before any row lock, so no lock cycle forms (PostgreSQL would abort one: a failed store).
    url = postgres.database()
    ids = [f"ses_{n:03}" for n in range(60)]
    async with PostgresStore(url, window=0.01) as one, PostgresStore(url, window=0.01) as two:

        async def write(store: PostgresStore, order: list[str]) -> None:
            for _ in range(15):
                for sid in order:
                    store.append(SessionUpdated(session(sid)))
                    store.append(PartUpdated(running(f"prt_{sid}", sid)))
                await anyio.sleep(0)
            await store.flush()

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(write, one, ids)
                tg.start_soon(write, two, ids[::-1])
        assert one.error is None and two.error is None
        events = await one.events_after(0, limit=10_000)
    seqs = [seq for seq, *_ in events]
    # Each store logs each record once per transaction (its last version), so at least once and at most 15 times.
    assert seqs == sorted(seqs) and 2 * 60 * 2 <= len(seqs) <= 2 * 15 * 60 * 2


@pytest.mark.anyio
async def test_a_stopped_worker_cannot_hold_the_write_lock_longer_than_its_lease(
    postgres: PostgresServer,
) -> None:
    async with PostgresStore(postgres.database(), lease=12.5) as store:
        shown = await store._run(  # pyright: ignore[reportPrivateUsage]
            lambda conn: conn.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0], read=True
        )
    assert shown == "12500ms"


@pytest.mark.anyio
async def test_a_session_moves_to_another_worker_with_its_retained_outputs(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    from pydantic import BaseModel

    from tether.testing import ScriptedModel, tool_call
    from tether.tools import Tool, ToolResponse

    class Nothing(BaseModel):
        pass

    def dump(value: Nothing, ctx: Any) -> ToolResponse[Any]:
        return ToolResponse(content="".join(f"line {n}\n" for n in range(5000)))

    url = postgres.database()
    project = tmp_path / "project"
    project.mkdir()
    shared = tmp_path / "shared-outputs"
    config = Config(data={"store": url, "output_dir": str(shared)})
    async with Runtime(data_dir=tmp_path / "one", config=config, plugins=False) as one:
        one.tools.register({"dump": Tool(description="A long output", input=Nothing, execute=dump)})
        session = await one.sessions.create(project)
        model = ScriptedModel([[tool_call("dump", {})], "dumped"])
        with model, anyio.fail_after(20):
            await session.prompt("dump it", model=model)
        (part,) = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
        (retained,) = part.output_paths
        assert Path(retained).is_relative_to(shared)
    async with Runtime(data_dir=tmp_path / "two", config=config, plugins=False) as two:
        moved = await two.sessions.get(
            session.id
        )  # another worker: another data directory, the same database
        model = ScriptedModel([[tool_call("read", {"path": retained, "offset": 4990})], "done"])
        with model, anyio.fail_after(20):
            await moved.prompt("read the rest", model=model)  # its own retained output: read without asking
        parts = [p for m in await moved.messages() for p in m.parts if isinstance(p, ToolPart)]
    assert parts[-1].state == "completed" and "line 4999" in parts[-1].content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_store_kept_busy_with_reads_only_still_renews_its_lease(postgres: PostgresServer) -> None:
    url = postgres.database()
    async with PostgresStore(url, lease=0.3) as store:
        ((first,),) = sql(url, "SELECT lease_until FROM owners WHERE id = %s", store.owner)
        with anyio.fail_after(10):
            while sql(url, "SELECT lease_until FROM owners WHERE id = %s", store.owner)[0][0] == first:
                await store.list_sessions()  # never idle long enough for the idle renewal
        assert store.error is None


@pytest.mark.anyio
async def test_a_flush_with_nothing_to_write_waits_for_no_other_workers_write_lock(
    postgres: PostgresServer,
) -> None:
    # A flush only waits for this store's own writes: with none queued it takes no transaction, so another worker
    # inside a long write transaction (holding the event log's lock) never holds it up.
    url = postgres.database()
    async with PostgresStore(url) as store:
        with psycopg.connect(url) as other, other.transaction():
            other.execute("SELECT pg_advisory_xact_lock(%s)", (EVENTS_LOCK,))
            with anyio.fail_after(10):
                await store.flush()
            store.append(SessionUpdated(session("ses_w")))
            with anyio.move_on_after(0.5) as waiting:
                await store.flush()  # a write does wait for the lock (event log order)
            assert waiting.cancelled_caught
        with anyio.fail_after(10):
            await store.flush()
        assert [s.id for s in await store.list_sessions()] == ["ses_w"]
