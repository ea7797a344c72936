"""Strangers on the Temporal server (issue 34 item 3, issue 36 item 5): a client without the key, or with another
key, sends every update, signal and query of the turn workflow. Each is refused (an update rejected, a query failed, a
signal dropped) with a line in the log; the session's claim and the rightful client's turn are untouched.

The handlers are enumerated from the workflow class (its ``__temporal_workflow_definition``), so a handler added later
is attacked too, and the test fails until it is given a forged payload below. The histories under ``histories/`` were
recorded before updates carried a signed payload (``hold`` had none): today's workflow replays them unchanged.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowHandle,
    WorkflowHistory,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateStage,
)
from temporalio.common import RawValue
from temporalio.converter import DataConverter
from temporalio.worker import Replayer, Worker

from tether import Runtime
from tether.errors import UsageError
from tether.temporal import TurnEvent, TurnWorkflow, connect
from tether.temporal._codec import data_converter
from tether.temporal._types import AnswerInput, AsksQuery, HoldInput
from tether.temporal._worker import workflow_runner

from .conftest import Turns
from .support import count, wait_for

pytestmark = pytest.mark.anyio

HISTORIES = Path(__file__).parent / "histories"
HISTORY_KEY = b"tether-replay-fixture-key-0123456789abcdef"
"""The key the histories were signed with (tests/temporal/histories, recorded by a worker with this key)."""


@dataclass
class _Turn:
    workflow_id: str
    run_id: str
    session_id: str
    ask_id: str


def _forged(turn: _Turn) -> dict[str, list[Any]]:
    """What a stranger sends to each handler: the payload the rightful client or worker would send, unsigned."""
    return {
        "answer": [AnswerInput(ask_id=turn.ask_id, reply="always")],
        "hold": [HoldInput(session_id=turn.session_id, run_id=turn.run_id)],
        "hold_state": [HoldInput(session_id=turn.session_id, run_id=turn.run_id)],
        "events": [0],
        "asks": [AsksQuery()],
    }


def _handlers() -> tuple[list[str], list[str], list[str | None]]:
    """The workflow's updates, queries and signals (``None``: the dynamic signal handler), from its definition."""
    definition = getattr(TurnWorkflow, "__temporal_workflow_definition")
    return list(definition.updates), list(definition.queries), list(definition.signals)


async def _strangers(target: str) -> dict[str, Client]:
    return {
        "keyless": await Client.connect(target),  # plain temporalio: no codec, no key
        "another key": await connect(target, key=b"k" * 40),
    }


def _lines(caplog: pytest.LogCaptureFixture, word: str, workflow_id: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "tether.temporal" and r.getMessage().startswith(word) and workflow_id in r.getMessage()
    ]


def _causes(error: BaseException) -> str:
    """The messages of ``error`` and its causes (what the stranger is told), one a line."""
    found: list[str] = []
    cause: BaseException | None = error
    while cause is not None:
        found.append(str(cause))
        cause = cause.__cause__
    return "\n".join(found)


async def _hold_payload(handle: WorkflowHandle[Any, Any]) -> Payload:
    """The signed payload of the ``hold`` update in a finished turn's history (anyone who reads the server has it)."""
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if request.input.name == "hold":
                return request.input.args.payloads[0]
    raise AssertionError("the turn's history has no hold update")


async def _user_messages(rt: Runtime, session_id: str) -> int:
    return sum(1 for m in await rt.store.load_messages(session_id) if m.info.role == "user")


async def test_a_stranger_s_hold_does_not_let_a_turn_run_on_a_session_another_process_holds(
    turns: Turns, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tether.temporal")
    async with turns.worker():
        first = await turns.submit([["fast", {"n": 1}]])
        with anyio.fail_after(60):
            session_id = (await first.result()).session_id
        copied = await _hold_payload(turns.client.get_workflow_handle(first.workflow_id))
    async with Runtime(data_dir=turns.data, plugins=False) as other:
        await other.store.claim(session_id)  # another process runs the session (`tether run --session`)
        turn = await turns.submit([["fast", {"n": 2}]], session_id=session_id)
        run_id = (await turns.client.get_workflow_handle(turn.workflow_id).describe()).run_id
        claim = HoldInput(session_id=session_id, run_id=run_id)
        strangers = await _strangers(turns.target)
        attempts: dict[str, tuple[Client, list[Any]]] = {
            "keyless, no payload": (strangers["keyless"], []),
            "keyless, a forged claim": (strangers["keyless"], [claim]),
            "another key": (strangers["another key"], [claim]),
            "a signed claim copied from the session's earlier turn": (
                strangers["keyless"],
                [RawValue(copied)],
            ),
        }
        # a worker of the workflow alone: the turn waits for its hold activity, which no one runs yet
        async with Worker(
            turns.client, task_queue=turns.queue, workflows=[TurnWorkflow], workflow_runner=workflow_runner()
        ):
            for name, (client, args) in attempts.items():
                stranger = client.get_workflow_handle(turn.workflow_id)
                with anyio.fail_after(60):
                    update = await stranger.start_update(
                        "hold", args=args, wait_for_stage=WorkflowUpdateStage.ACCEPTED
                    )
                    # rejected, known at once (an accepted hold would wait here for the turn's end)
                    with pytest.raises(WorkflowUpdateFailedError) as rejected:
                        await update.result()
                told = _causes(rejected.value)
                assert "tether signature" in told or "copied from another turn" in told, (name, told)
        refused = _lines(caplog, "Refused", turn.workflow_id)
        assert len(refused) == len(attempts), refused
        assert any("no payload with a valid tether signature" in line for line in refused)
        assert any("(unsigned)" in line for line in refused)
        assert any("(signed with another key)" in line for line in refused)
        assert any("a claim copied from another turn" in line for line in refused)
        async with turns.worker() as rt:  # now the hold runs, and finds the session held by the other process
            with anyio.fail_after(60), pytest.raises(UsageError, match=f"session {session_id} is busy"):
                await turn.result()
            assert await _user_messages(rt, session_id) == 1  # the refused turn wrote nothing
            assert count(turns.marks, "fast") == 1
            await other.store.release(session_id)
            after = await turns.submit([["fast", {"n": 3}]], session_id=session_id)  # the rightful client's
            with anyio.fail_after(60):
                assert (await after.result()).text == "done: fast=fast 3"
    assert count(turns.marks, "fast") == 2


async def test_every_update_query_and_signal_from_a_stranger_is_refused_and_the_turn_goes_on(
    turns: Turns, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tether.temporal")
    updates, queries, signals = _handlers()
    async with turns.worker() as rt:
        handle = await turns.submit([["guarded", {}]])
        ask = await wait_for(handle, "ask")  # the turn holds its session and waits for the answer
        session_id = await handle.session_id()
        assert session_id is not None
        run_id = (await turns.client.get_workflow_handle(handle.workflow_id).describe()).run_id
        forged = _forged(_Turn(handle.workflow_id, run_id, session_id, ask["id"]))
        assert set(forged) == {*updates, *queries}, "a handler was added: give it a forged payload in _forged"
        assert signals == [None], "a signal handler was added: send it a forged payload here"
        for who, client in (await _strangers(turns.target)).items():
            stranger = client.get_workflow_handle(handle.workflow_id)
            for signed in (False, True):  # no payload at all; the rightful payload, not signed with the key
                for name in [*updates, *queries]:
                    given = forged[name] if signed else []
                    before = len(_lines(caplog, "Refused", handle.workflow_id))
                    with anyio.fail_after(60):
                        if name in updates:
                            with pytest.raises(WorkflowUpdateFailedError):
                                await stranger.execute_update(name, args=given)
                        else:
                            with pytest.raises(WorkflowQueryFailedError):  # not an answer it cannot decode
                                await stranger.query(name, args=given, result_type=RawValue)
                    assert len(_lines(caplog, "Refused", handle.workflow_id)) > before, (
                        f"{who} {name} {given}"
                    )
                for name in (*updates, *queries, "stranger"):
                    await stranger.signal(name, args=forged.get(name, ["x"]) if signed else [])
        sent = 2 * 2 * (len(updates) + len(queries) + 1)
        with anyio.fail_after(60):
            while len(_lines(caplog, "Dropped the signal", handle.workflow_id)) < sent:
                await anyio.sleep(0.05)
        # nothing changed: the ask still waits, the claim is the turn's, nothing ran
        assert [a.id for a in await handle.asks()] == [ask["id"]]
        events: list[TurnEvent] = await handle._query("events", 0, result_type=list[TurnEvent])  # pyright: ignore[reportPrivateUsage]
        assert "answer" not in [e.kind for e in events]
        async with Runtime(data_dir=turns.data, plugins=False) as other:
            with pytest.raises(UsageError, match=f"session {session_id} is busy"):
                await other.store.claim(session_id)
        assert count(turns.marks, "guarded") == 0
        await handle.answer(ask["id"], "once")  # the rightful client's turn goes on
        with anyio.fail_after(60):
            result = await handle.result()
        assert (result.stop, result.text) == ("done", "done: guarded=deployed")
        assert await _user_messages(rt, session_id) == 1
    assert count(turns.marks, "guarded") == 1
    # the dropped signals are in the turn's history: it replays as it ran, without logging them again
    dropped = len(_lines(caplog, "Dropped the signal", handle.workflow_id))
    await _replay(
        await turns.client.get_workflow_handle(handle.workflow_id).fetch_history(),
        turns.client.data_converter,
    )
    assert len(_lines(caplog, "Dropped the signal", handle.workflow_id)) == dropped


@pytest.mark.parametrize("name", ["unsigned-hold-new-session", "unsigned-hold-continued-session"])
async def test_a_turn_recorded_before_updates_were_signed_replays_on_today_s_workflow(name: str) -> None:
    recorded = json.loads((HISTORIES / f"{name}.json").read_text())
    workflow_id = recorded["events"][0]["workflowExecutionStartedEventAttributes"]["workflowId"]
    await _replay(WorkflowHistory.from_json(workflow_id, recorded), data_converter(HISTORY_KEY))


async def _replay(history: WorkflowHistory, converter: DataConverter) -> None:
    """Replay ``history`` on today's workflow code; raises on a nondeterminism error."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        replayer = Replayer(
            workflows=[TurnWorkflow],
            data_converter=converter,
            workflow_runner=workflow_runner(),
            workflow_task_executor=pool,
        )
        result = await replayer.replay_workflow(history)
    assert result.replay_failure is None
