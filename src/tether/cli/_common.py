"""What every command shares: the async entry point, error reporting, and opening the runtime.

Errors a person can fix (a broken config file, an unknown session id, a bad flag, a store that cannot be opened) are
printed as one precise line on stderr and exit with code 2; they are never tracebacks. Anything else is a defect and
keeps its traceback. The exit codes, the consoles and :func:`fail` live in ``_console`` (below ``_trust``, which
this module's :func:`runtime` loads the config through) and are re-exported here.

Every command opens the runtime, and with it the session store, through :func:`opened` (or :func:`runtime`, which
loads the project's config first): the store is the one the resolved config names (``tether.config._store``), so
every command sees the same sessions, and none creates a SQLite file when the config names PostgreSQL.
"""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from ..errors import ConfigError, NotFoundError, StoreError, TetherError, UsageError
from ._console import (
    CANCELLED,
    OK,
    TURN_FAILED,
    USAGE,
    Output,
    err_console,
    fail,
    out_console,
    stdin_is_terminal,
)

if TYPE_CHECKING:
    from .. import Runtime
    from ..config import Config

__all__ = [
    "CANCELLED",
    "OK",
    "TURN_FAILED",
    "USAGE",
    "Output",
    "err_console",
    "fail",
    "opened",
    "out_console",
    "run_async",
    "runtime",
    "stdin_is_terminal",
]

T = TypeVar("T")


def run_async(main: Callable[[], Awaitable[T]]) -> T:
    """Run ``main`` on anyio (asyncio), turning the errors a person can fix into exit code 2."""
    import anyio

    try:
        try:
            return anyio.run(main)
        except BaseExceptionGroup as group:
            raise _single(group) from None
    except ConfigError as exc:
        fail(f"configuration: {exc.message}")
    except (NotFoundError, UsageError) as exc:
        fail(exc.message)
    except TetherError as exc:
        fail(f"{type(exc).__name__}: {exc.message}", TURN_FAILED)


class _Opened:
    """``async with`` the runtime of a command: :meth:`Runtime.__aenter__`, with a store that cannot be opened turned
    into a usage error naming where the store was chosen (exit code 2)."""

    __slots__ = ("_config", "_runtime")

    def __init__(self, runtime: Runtime, config: Config) -> None:
        self._runtime = runtime
        self._config = config

    async def __aenter__(self) -> Runtime:
        from ..config.internal import store_choice

        try:
            return await self._runtime.__aenter__()
        except StoreError as exc:
            origin = store_choice(self._config).origin
            raise UsageError(f"{exc.message} (the store is set by {origin})") from None

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._runtime.__aexit__(kind, error, tb)


def opened(data_dir: Path, config: Config) -> _Opened:
    """The one way a command opens its runtime (``async with opened(data_dir, config) as rt``): its session store is
    the one ``config`` names (``$TETHER_STORE_URL``, else ``store``, else ``<data_dir>/tether.db``).

    Raises:
        UsageError: on entering, the store cannot be opened (a broken or unreachable URL, a corrupt file); the
            message names the config file or variable that chose it, never the password.
    """
    from .. import Runtime

    return _Opened(Runtime(data_dir=data_dir, config=config), config)


async def runtime(data_dir: Path, directory: Path | None = None) -> _Opened:
    """:func:`opened` with the merged ``tether.json`` of the project ``directory`` (default: the current directory)
    belongs to: ``async with await runtime(data_dir) as rt``.

    The config goes through :func:`tether.cli._trust.project_config`, as every command's does: an untrusted
    project's file only tightens, and what it may not set is printed on stderr.

    Raises:
        ConfigError: a config file is broken (reported with file, line and key; exit code 2).
    """
    import anyio.to_thread

    from ._trust import project_config

    path = (directory or Path.cwd()).resolve()
    config = await anyio.to_thread.run_sync(lambda: project_config(data_dir, path))
    return opened(data_dir, config)


def freeze_startup() -> None:
    """Keep what start-up loaded out of every later garbage collection (once the command's runtime is open).

    Modules, classes, the provider SDK's types, the config and the runtime live as long as the process. Left in the
    collector's oldest generation, each full collection walks them all again (about 100,000 objects after start-up):
    a 1,000-call parallel step made three full collections of 70-100 ms each, a third of its CPU time per call
    (``bench/peer.py``; issue 14). ``gc.freeze`` moves every object tracked now to the permanent generation, which
    collections skip; objects made later are collected as before. What start-up made and already dropped is kept
    (a few cycles, once per process), which is why this runs once and only in the CLI's long-lived commands: the
    library never changes the collector of the application it is embedded in.

    ``tether.cli.main`` turns the collector off while the command starts; this turns it back on (a command run from
    a test's ``CliRunner`` had it on all along), with a young generation of :data:`YOUNG` objects instead of 700: a
    turn makes short-lived containers by the thousand (a call's parts, events, records), and at 700 a 1,000-call
    step made ~150 young collections, ~13 of the middle generation and a full one (50-150 ms of CPU, 13-20 % of the
    step, issue 38); most of those objects are gone before 10,000 more are made, so a collection finds little.
    """
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
        gc.set_threshold(YOUNG, 10, 10)
        gc.enable()


_frozen = False

YOUNG = 10_000
"""Allocations of tracked objects between two young collections in the CLI's long-lived commands (Python's: 700)."""


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside nested task-group wrappers, or the group itself."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
