"""``tether worker --temporal HOST:PORT`` and ``tether run --temporal HOST:PORT``: durable turns on Temporal.

``tether worker`` opens a runtime (the data directory's store, the project's config and tools) and serves turns from
a task queue until it is stopped. ``tether run --temporal`` submits one turn to that queue and follows it: the
turn's events as the workflow records them (step by step and call by call), its asks answered here (a terminal
prompt, ``--yes`` or ``--deny-asks``), and Ctrl-C cancels the turn. Both need ``tether[temporal]``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import typer

from ._common import CANCELLED, OK, TURN_FAILED, err_console, fail, freeze_startup, opened, run_async

if TYPE_CHECKING:
    from ..session import PendingQuestion

__all__ = ["run_temporal_command", "worker_command"]

_MISSING = "Temporal support is not installed: pip install 'tether[temporal]'"


def _require() -> None:
    try:
        import temporalio  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        fail(_MISSING)


def worker_command(
    *,
    data_dir: Path,
    temporal: str,
    task_queue: str,
    roots: list[Path],
    trust: bool,
    allow_test_models: bool,
    connection: dict[str, Any],
) -> None:
    """The body of ``tether worker``: serve turns until interrupted (exit 0 on Ctrl-C or SIGTERM)."""
    _require()
    directory = roots[0]

    async def main() -> int:
        from ..temporal import run_worker
        from ._models import choose_model
        from ._trust import project_config

        config = await anyio.to_thread.run_sync(lambda: project_config(data_dir, directory, trust=trust))

        def resolve(name: str) -> Any:
            return choose_model(name, config.data)

        def ready() -> None:
            err_console().print(
                f"tether worker: serving task queue {task_queue!r} on {temporal} (Ctrl-C stops)"
            )
            sys.stderr.flush()

        stop = anyio.Event()

        async def stop_on_signal() -> None:
            # SIGTERM (a service manager) and SIGINT stop the worker in order, so the runtime closes its store
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    stop.set()
                    return

        async with opened(data_dir, config) as rt, anyio.create_task_group() as tg:
            tg.start_soon(stop_on_signal)
            freeze_startup()
            await run_worker(
                rt,
                temporal,
                task_queue=task_queue,
                resolve=resolve,
                ready=ready,
                stop=stop,
                roots=roots,
                allow_test_models=allow_test_models,
                **connection,
            )
            tg.cancel_scope.cancel()
        err_console().print("tether worker: stopped")
        return OK

    try:
        raise typer.Exit(run_async(main))
    except KeyboardInterrupt:
        raise typer.Exit(OK) from None


def run_temporal_command(
    *,
    data_dir: Path,
    prompt: str | None,
    model: str | None,
    agent: str | None,
    directory: Path | None,
    session_id: str | None,
    temporal: str,
    task_queue: str,
    connection: dict[str, Any],
    yes: bool,
    deny_asks: bool,
    output_format: str,
    quiet: bool,
) -> None:
    """The body of ``tether run --temporal``: submit, follow, answer, and exit with the turn's code."""
    _require()
    from ._run import _output, _user_input, approval_mode, project_dir
    from ._trust import project_config

    approval, why_deny = approval_mode(yes=yes, deny_asks=deny_asks)
    path = project_dir(directory)
    output = _output(output_format, quiet)
    content = _user_input(prompt, ())
    assert isinstance(content, str)
    config = project_config(data_dir, path)
    chosen = model or config.get("model")
    if not isinstance(chosen, str) or not chosen:
        fail('--temporal needs a model: pass --model provider/model (the workers resolve it) or set "model"')

    patience = _patience()

    async def main() -> int:
        from ..temporal import TemporalRunner, TurnUnreadable

        runner = await TemporalRunner.connect(
            temporal, task_queue=task_queue, data_dir=data_dir, **connection
        )
        handle = await runner.submit(
            content,
            model=chosen,
            directory=path,
            session_id=session_id,
            agent=agent,
            # no person here (no terminal, --yes, --deny-asks): a question fails at once and the model goes on
            answers_questions=approval == "ask",
        )
        if output != "json":
            err_console().print(f"turn {handle.workflow_id} submitted to {task_queue!r} on {temporal}")
        reconnecting = _Reconnecting(handle.workflow_id)
        try:
            async for event in handle.events(patience=patience, reconnecting=reconnecting):
                reconnecting.back()
                _show(event.kind, event.data, output)
                if event.kind == "ask":
                    await _answer(handle, event.data, approval, why_deny)
            result = await handle.result(patience=patience, reconnecting=reconnecting)
        except anyio.get_cancelled_exc_class():
            # Ctrl-C (asyncio cancels the main task on SIGINT): the one way this follower cancels the turn. A failure
            # to read the turn is no reason to: it propagates below, and the turn goes on without this follower.
            await _cancel(handle, output)
            raise
        except TurnUnreadable as exc:
            err_console().print(
                f"gave up following turn {handle.workflow_id}: {exc.message}. The turn was not cancelled: it goes on "
                "on the workers (tether session show shows its session).",
                markup=False,
                highlight=False,
            )
            return TURN_FAILED
        if output == "quiet":
            if result.text:
                sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
        elif output != "json":
            err_console().print(
                f"{result.stop}: {result.steps} steps, {result.tool_calls} tool calls · session {result.session_id}"
            )
        if result.stop == "cancelled":
            return CANCELLED
        return TURN_FAILED if result.stop == "declined" else OK

    # Ctrl-C cancels the turn whatever SIGINT's disposition the command inherited, as `tether run` without --temporal
    # does (its signal receiver): a shell without job control starts `cmd &` with SIGINT ignored, and then Python
    # installs no handler, asyncio none either, and a SIGINT did nothing (the follower waited for the turn's end).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        raise typer.Exit(run_async(main))
    except KeyboardInterrupt:
        raise typer.Exit(CANCELLED) from None


CANCEL_WAIT = 10.0
"""Seconds Ctrl-C waits for the Temporal server to take the turn's cancel, at most (it takes milliseconds)."""


async def _cancel(handle: Any, output: str) -> None:
    """Ask the server to cancel the turn (Ctrl-C) and return once it has recorded the request: the workers cancel the
    running calls and write the turn's end, whether this process is still there or not (docs/temporal.md).

    Not shielded: the first Ctrl-C's cancellation of the main task is spent, so this waits; a second Ctrl-C makes
    asyncio cancel the task again, and the command exits at once, without waiting for the server.
    """
    from ..errors import TetherError

    console = err_console()
    if output != "json":
        console.print(
            f"cancelling turn {handle.workflow_id} (Ctrl-C again exits at once)",
            markup=False,
            highlight=False,
        )
    problem: str | None = None
    try:
        with anyio.move_on_after(CANCEL_WAIT) as waited:
            await handle.cancel()
        if waited.cancelled_caught:
            problem = f"the Temporal server did not answer within {CANCEL_WAIT:g} s"
    except TetherError as exc:
        problem = exc.message
    if problem is not None:
        console.print(
            f"could not cancel turn {handle.workflow_id}: {problem}. It may go on on the workers: cancel it with "
            f"temporal workflow cancel --workflow-id {handle.workflow_id}",
            markup=False,
            highlight=False,
        )
    elif output != "json":
        console.print(
            f"turn {handle.workflow_id} cancelled: the workers stop its running calls",
            markup=False,
            highlight=False,
        )


PATIENCE_ENV = "TETHER_TEMPORAL_PATIENCE"


def _patience() -> float:
    """Seconds of failed reads in a row after which ``tether run --temporal`` stops following (the turn goes on)."""
    from ..temporal.internal import PATIENCE_SECONDS

    raw = os.environ.get(PATIENCE_ENV)
    if raw is None:
        return PATIENCE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        fail(f"${PATIENCE_ENV} is a number of seconds above 0; got {raw!r}")
    return value


class _Reconnecting:
    """Tells the person once per streak of failed reads that the turn still runs and this follower reconnects."""

    def __init__(self, workflow_id: str) -> None:
        self._workflow_id = workflow_id
        self._failing = False

    def __call__(self, error: Exception) -> None:
        if self._failing:
            return
        self._failing = True
        err_console().print(
            f"turn {self._workflow_id} still running, reconnecting ({error})", markup=False, highlight=False
        )

    def back(self) -> None:
        self._failing = False


def _show(kind: str, data: dict[str, Any], output: str) -> None:
    if output == "json":
        sys.stdout.write(json.dumps({"type": kind, **data}, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        return
    if output == "quiet":
        return
    console = err_console()
    if kind == "text":
        sys.stdout.write(str(data["text"]) + "\n")
        sys.stdout.flush()
    elif kind == "call":
        mark = "✓" if data.get("outcome") == "completed" else "✗"
        line = f"{mark} {data.get('name')}"
        if data.get("error"):
            line += f": {data['error']}"
        console.print(line, markup=False, highlight=False)
    elif kind == "ask":
        request = data.get("request") or {}
        what = request.get("action") or "question"
        console.print(f"? {what} {' '.join(request.get('resources') or [])}", markup=False, highlight=False)
    elif kind == "retry":
        console.print(
            f"retrying in {data.get('retry_in')}s: {data.get('message')}", markup=False, highlight=False
        )


async def _answer(handle: Any, data: dict[str, Any], approval: str, why_deny: str) -> None:
    ask_id = str(data["id"])
    if data.get("kind") == "question":
        # questions need a person at a terminal (asked as an in-process run asks them); --yes cannot invent answers
        answers = None
        if approval == "ask":
            from ._approve import _ask_questions  # pyright: ignore[reportPrivateUsage]

            answers = await _ask_questions(err_console(), _pending_question(data.get("request") or {}), "")
        if answers is None:  # dismissed: the call is declined and the turn stops, as in process
            await handle.answer(ask_id, "reject")
        else:
            await handle.answer(ask_id, "once", answers=answers)
        return
    if approval == "yes":
        await handle.answer(ask_id, "once")
        return
    if approval == "deny":
        err_console().print(f"rejected ({why_deny})", markup=False, highlight=False)
        await handle.answer(ask_id, "reject")
        return
    # the in-process prompt, read whole (never a first letter: "absolutely not" is no "always"), naming what
    # "always" saves; the request is the signed wire form the worker sent
    from ..permissions import PermissionRequest
    from ._approve import read_reply

    request = data.get("request") or {}
    asked = PermissionRequest(
        session_id=str(request.get("session_id", "")),
        action=str(request.get("action", "")),
        resources=tuple(str(r) for r in request.get("resources") or ()),
        save=tuple(str(p) for p in request.get("save") or ()),
        protected=request.get("protected"),
    )
    reply, message = await read_reply(err_console(), asked)
    await handle.answer(ask_id, reply, message=message)


def _pending_question(request: dict[str, Any]) -> PendingQuestion:
    """The ``PendingQuestion`` an ask event carries (its ``to_json()`` form, signed by the worker)."""
    from ..session import PendingQuestion, Question, QuestionOption

    questions = tuple(
        Question(
            question=str(q.get("question", "")),
            header=str(q.get("header", "")),
            options=tuple(
                QuestionOption(label=str(o.get("label", "")), description=str(o.get("description", "")))
                for o in q.get("options") or ()
            ),
            multiple=bool(q.get("multiple", False)),
        )
        for q in request.get("questions") or ()
    )
    return PendingQuestion(
        id=str(request.get("id", "")),
        session_id=str(request.get("session_id", "")),
        agent=str(request.get("agent", "")),
        message_id=str(request.get("message_id", "")),
        call_id=str(request.get("call_id", "")),
        questions=questions,
    )
