"""Run model-written Python in pydantic-monty and answer its tool calls: the sandbox driver.

The code runs in a ``monty`` worker subprocess (pydantic-monty's pool, one worker per ``execute`` call: about 5 ms,
and nothing survives from one call to the next). This module drives it one suspension at a time with the sync
snapshot API, each step in a worker thread (law 9), so every decision is the host's:

- ``tools.<name>(...)`` (a method call on the one host object the code sees) starts the inner call at once, in this
  call's task group, and hands the code a future: ``await`` gets the result, and calls the code awaits together
  (``asyncio.gather``) run in parallel. A call never awaited still runs to its end (it was started).
- ``search(query)`` is answered in a worker thread (law 9): the query is capped at ``SEARCH_QUERY_CHARS`` and the
  searches of one run at the inner-call limit, so a model cannot keep the host matching without end.
- Operating-system calls (``open``, ``os.*``, ``pathlib``) get monty's default refusal: no mount, no handler.
- Any other host function or attribute is refused with the Python error the model can read.

Limits: the inner calls (counted here), the heap, the recursion depth and the interpreter's own running time (monty
enforces them in the worker), the ``print`` output (kept up to a cap here, the loss reported). The wall time is the
caller's cancel scope; when it (or the turn) cancels, the worker is killed (SIGKILL to the worker this call checked
out) so no interpreter keeps running, and the inner calls are cancelled with the task group.

What this module does not do: settle, record or bound anything (``_execute`` does, per inner call).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import pydantic_monty as monty

from ._answers import CallHandler, Raise, RunResult, Stop
from ._settings import CodeModeSettings

__all__ = ["SEARCH_QUERY_CHARS", "run_code"]

SEARCH_QUERY_CHARS = 1000
"""The longest ``search`` query: a few words find a tool; a longer text is refused, never matched."""


@dataclass(slots=True)
class _Printer:
    cap: int
    chunks: list[str] = field(default_factory=list[str])
    size: int = 0
    dropped: int = 0

    def __call__(self, stream: str, text: str) -> None:
        room = self.cap - self.size
        if room <= 0:
            self.dropped += len(text)
            return
        if len(text) > room:
            self.dropped += len(text) - room
            text = text[:room]
        self.chunks.append(text)
        self.size += len(text)

    def text(self) -> str:
        body = "".join(self.chunks)
        if self.dropped:
            body += (
                f"\n[print output cut: {self.dropped} more characters were dropped at the {self.cap} cap]\n"
            )
        return body


class _Tools:
    """The host object behind ``tools`` in the sandbox; its methods are answered by the driver, never run."""

    __slots__ = ()


class _Limit(Exception):
    """A limit the driver enforces (inner calls): ends the run with this message."""


def _limits(settings: CodeModeSettings) -> monty.ResourceLimits:
    return {
        "max_memory": settings.max_memory,
        "max_recursion_depth": settings.max_recursion,
        "max_feed_duration_secs": settings.cpu_seconds,
        # every tool call is 1-3 host round trips, a search one; the limits below are the ones the model reads
        "max_suspensions": settings.max_calls * 5 + 1000,
    }


def _limit_message(brief: str, settings: CodeModeSettings) -> str | None:
    """The sentence naming the limit monty enforced (``brief``: its ``Type: message``), or ``None`` for the code's
    own exception. The traceback follows it, so the model sees both which limit and where."""
    if brief.startswith("TimeoutError: feed time limit"):
        return (
            f"the code's interpreter time passed {settings.cpu_seconds:g} s (the cpu_seconds limit; time waiting on "
            "tools does not count): an endless loop, or too much work in code. Do less per execute call."
        )
    if brief.startswith(("MemoryError: memory limit", "MemoryError: the worker exceeded its memory limit")):
        return (
            f"the code used more than {settings.max_memory // (1024 * 1024)} MiB (the memory limit). Keep less in "
            "memory: print or return a summary, not whole outputs."
        )
    if brief.startswith("RecursionError"):
        return f"the code called itself deeper than {settings.max_recursion} frames (the recursion limit)."
    if brief.startswith("RuntimeError: suspension limit"):
        return (
            "the code went back to the host too often (tool calls, refused file or os calls, unknown tools and "
            "awaits all count): stop retrying what fails. Do less per execute call."
        )
    return None


async def run_code(
    code: str,
    *,
    settings: CodeModeSettings,
    names: Mapping[str, str],
    call: CallHandler,
    search: Callable[[str], Any],
    result: RunResult,
    refused: Mapping[str, str] | None = None,
) -> None:
    """Run ``code`` and fill in ``result`` (its printed text also when the run is cancelled); ``names`` maps each
    ``tools.<attribute>`` to the catalog name ``call`` receives; ``refused`` maps attributes the code may not call to
    the ``AttributeError`` message it gets.

    Raises:
        Exception: the ``error`` of a :class:`Stop` answer, after the sandbox and the other calls ended.
    """
    printer = _Printer(settings.max_print_bytes)
    pool = monty.Monty(min_processes=1, max_processes=1)
    await anyio.to_thread.run_sync(pool.__enter__)
    try:
        session = pool.checkout(limits=_limits(settings), os_policy={"sleep": "zero"})
        await anyio.to_thread.run_sync(session.__enter__)
        driver = _Driver(
            session,
            names=names,
            refused=refused or {},
            call=call,
            search=search,
            settings=settings,
            result=result,
        )
        try:
            await driver.run(code, printer)
        finally:
            with anyio.CancelScope(shield=True):
                driver.kill_if_busy()
                await anyio.to_thread.run_sync(session.__exit__, None, None, None)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(pool.__exit__, None, None, None)
        result.printed = printer.text()
        result.dropped = printer.dropped


class _Driver:
    __slots__ = (
        "_busy",
        "_call",
        "_done",
        "_names",
        "_pid",
        "_search",
        "_session",
        "_settings",
        "_wake",
        "refused",
        "result",
    )

    def __init__(
        self,
        session: monty.MontySession,
        *,
        names: Mapping[str, str],
        refused: Mapping[str, str],
        call: CallHandler,
        search: Callable[[str], Any],
        settings: CodeModeSettings,
        result: RunResult,
    ) -> None:
        self._session = session
        self._pid = session.worker_pid
        self._names = names
        self._call = call
        self._search = search
        self._settings = settings
        self._busy = False
        self.refused = refused
        self._done: dict[int, Any] = {}
        self._wake = anyio.Event()
        self.result = result

    def kill_if_busy(self) -> None:
        """A step abandoned by cancellation may still run in the worker: end the worker (this call's own)."""
        if self._busy and self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)

    async def _step(self, func: Callable[..., Any], *args: Any) -> Any:
        self._busy = True
        value = await anyio.to_thread.run_sync(functools.partial(func, *args), abandon_on_cancel=True)
        self._busy = False
        return value

    async def run(self, code: str, printer: _Printer) -> None:
        stop: Stop | None = None
        async with anyio.create_task_group() as group:
            try:
                snapshot = await self._step(
                    functools.partial(
                        self._session.feed_start,
                        code,
                        inputs={"tools": monty.ClassInstance(_Tools()), "search": self._search},
                        print_callback=printer,
                    )
                )
                while not isinstance(snapshot, monty.MontyComplete):
                    snapshot, stop = await self._answer(snapshot, group)
                    if stop is not None:
                        break
                else:
                    # calls started and never awaited still finish (they were started, and are recorded)
                    self.result.value = snapshot.output
            except monty.MontyError as exc:
                self._busy = False  # the step ended (with the code's error): the worker is idle, not killed
                self._fail(exc)
            except _Limit as exc:
                self.result.error = str(exc)
                self.result.limit = True
            if stop is not None or self.result.error is not None:
                group.cancel_scope.cancel()  # the run failed: its unfinished calls end (aborted)
        if stop is not None:
            raise stop.error

    def _fail(self, exc: monty.MontyError) -> None:
        if isinstance(exc, monty.MontyRuntimeError | monty.MontySyntaxError):
            text = exc.display("traceback")
            limit = _limit_message(exc.display("type-msg"), self._settings)
            if limit is not None:
                text = f"execute stopped: {limit}\n{text}"
            self.result.limit = limit is not None
        else:  # the worker died (a kill by the host, an abort): a limit of the sandbox, not the code's exception
            text = f"The sandbox stopped: {exc}"
            self.result.limit = True
        self.result.error = text

    async def _answer(self, snapshot: Any, group: anyio.abc.TaskGroup) -> tuple[Any, Stop | None]:
        if isinstance(snapshot, monty.FunctionSnapshot):
            return await self._function(snapshot, group), None
        if isinstance(snapshot, monty.FutureSnapshot):
            return await self._futures(snapshot)
        if isinstance(snapshot, monty.NameLookupSnapshot):
            return await self._step(
                snapshot.resume
            ), None  # an unknown name or attribute: NameError/AttributeError
        raise AssertionError(f"unexpected monty snapshot {type(snapshot).__name__}")  # pragma: no cover

    async def _function(self, snapshot: monty.FunctionSnapshot, group: anyio.abc.TaskGroup) -> Any:
        if snapshot.is_os_function:
            return await self._step(snapshot.resume_not_handled)
        name = snapshot.function_name
        if snapshot.object_id is None:
            if name == "search" and len(snapshot.args) == 1 and isinstance(snapshot.args[0], str):
                return await self._search_answer(snapshot, snapshot.args[0])
            if name == "search":
                return await self._raise(
                    snapshot, "TypeError", "search(query) takes one string: search('git log')"
                )
            return await self._raise(snapshot, "RuntimeError", f"{name} is not available in this sandbox")
        catalog = self._names.get(name)
        if name in self.refused:
            return await self._raise(snapshot, "AttributeError", self.refused[name])
        if catalog is None:
            return await self._raise(
                snapshot,
                "AttributeError",
                f"tools has no tool {name!r}: it is not in this step's catalog. search('{name}') lists similar tools.",
            )
        if snapshot.args:
            return await self._raise(
                snapshot,
                "TypeError",
                f"tools.{name}() takes keyword arguments only: tools.{name}(name=value, ...)",
            )
        self.result.calls += 1
        if self.result.calls > self._settings.max_calls:
            raise _Limit(
                f"execute stopped: the code made more than {self._settings.max_calls} tool calls (the limit of one "
                "execute call). Do fewer calls per execute call, or split the work over several."
            )
        call_id = snapshot.call_id
        group.start_soon(self._settle, call_id, catalog, dict(snapshot.kwargs))
        return await self._step(snapshot.resume, {"future": ...})

    async def _search_answer(self, snapshot: monty.FunctionSnapshot, query: str) -> Any:
        if len(query) > SEARCH_QUERY_CHARS:
            return await self._raise(
                snapshot,
                "ValueError",
                f"search(query) takes at most {SEARCH_QUERY_CHARS} characters (this one has {len(query)}): "
                "pass a few words naming what the tool does, e.g. search('read file').",
            )
        self.result.searches += 1
        if self.result.searches > self._settings.max_calls:
            raise _Limit(
                f"execute stopped: the code called search() more than {self._settings.max_calls} times (the limit "
                "of one execute call). Search once with a few words and reuse the answer."
            )
        found = await anyio.to_thread.run_sync(self._search, query)
        return await self._step(snapshot.resume, {"return_value": found})

    async def _raise(self, snapshot: monty.FunctionSnapshot, exc_type: str, message: str) -> Any:
        return await self._step(snapshot.resume, {"exc_type": exc_type, "message": message})

    async def _settle(self, call_id: int, name: str, kwargs: dict[str, Any]) -> None:
        self._done[call_id] = await self._call(name, kwargs)
        self._wake.set()

    async def _futures(self, snapshot: monty.FutureSnapshot) -> tuple[Any, Stop | None]:
        pending = snapshot.pending_call_ids
        while not any(i in self._done for i in pending):
            self._wake = anyio.Event()
            await self._wake.wait()
        answers: dict[int, Any] = {}
        for i in pending:
            if i not in self._done:
                continue
            answer = self._done.pop(i)
            if isinstance(answer, Stop):
                return snapshot, answer
            if isinstance(answer, Raise):
                answers[i] = {"exc_type": answer.exc_type, "message": answer.message}
            else:
                answers[i] = {"return_value": answer}
        return await self._step(snapshot.resume, answers), None
