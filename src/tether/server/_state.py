"""What every route of ``tether serve`` shares: the runtime, the served project, the event hub and the turns.

A server answers for its project only (:class:`~._project.ServedProject`, :attr:`ServerState.project`), though the
store it reads is shared with every other project of the data directory.

Prompts are asynchronous: :meth:`ServerState.start_turn` starts the turn in the server's task group and returns at
once; its progress is on the event stream, and a failure becomes an ``error`` frame there (the turn's record is in
the store as always). One turn per session at a time (a second prompt is refused with 409 until it is idle). When
the server stops, :meth:`ServerState.stop_turns` cancels the running turns (their calls are recorded as aborted, as
``session.cancel()`` records them) and refuses new ones.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..errors import ConfigError, ProviderError, StoreError, UsageError

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from .._runtime import Runtime, RuntimeLocation
    from ..llm import Model
    from ..session import Session
    from ._events import EventHub
    from ._project import ServedProject

__all__ = ["Conflict", "ServerState"]

log = logging.getLogger("tether.server")

RECENT_SESSIONS = 1024
"""Session handles the server keeps between turns, the most recently used (see :meth:`ServerState.keep`)."""


class Conflict(UsageError):
    """The request is valid but the state refuses it now (a busy session): HTTP 409."""


@dataclass(kw_only=True, slots=True)
class ServerState:
    """The server's shared state (one per app).

    Attributes:
        rt: the open runtime.
        location: the served project's Location (``--dir``).
        project: what the server answers for (every route asks it).
        hub: the event stream.
        choose_model: ``provider/model`` (or ``None``: the default) -> a model; raises ``UsageError`` or
            ``ConfigError`` for a name it cannot resolve.
        heartbeat: seconds between SSE heartbeats.
        recent: the handles of the sessions most recently created or prompted, at most :data:`RECENT_SESSIONS`.
    """

    rt: Runtime
    location: RuntimeLocation
    project: ServedProject
    hub: EventHub
    choose_model: Callable[[str | None], Model]
    heartbeat: float = 15.0
    task_group: TaskGroup | None = None
    running: set[str] = field(default_factory=set[str])
    stopping: bool = False
    scopes: set[anyio.CancelScope] = field(default_factory=set[anyio.CancelScope])
    recent: OrderedDict[str, Session] = field(default_factory=OrderedDict[str, "Session"])

    def directory(self, given: str | None) -> Path:
        """The real directory a new session works in: ``given`` (relative to the served root) or the served one.

        Raises:
            UsageError: ``given`` lies outside the served project, or is not a directory.
        """
        root = self.location.root
        if given is None:
            return self.location.directory
        path = Path(os.path.realpath(root / given))
        if path != root and root not in path.parents:
            raise UsageError(f"directory {given!r} is outside the served project {root}: name one inside it")
        if not path.is_dir():
            raise UsageError(f"directory {given!r} is not a directory of the served project")
        return path

    def keep(self, session: Session) -> None:
        """Hold ``session``'s handle between its turns, dropping the least recently used past the cap.

        ``Sessions`` holds no handle itself (a released one is reopened from the store, its history replayed at its
        next turn), so a server that held none would reopen and replay a conversation at every prompt. The cap bounds
        the memory a long-running server keeps (about 10-20 KiB per idle session); a session past it is reopened
        when it is prompted again, losing nothing.
        """
        self.recent[session.id] = session
        self.recent.move_to_end(session.id)
        while len(self.recent) > RECENT_SESSIONS:
            self.recent.popitem(last=False)

    def start_turn(self, session: Session, text: str, model: Model) -> None:
        """Run one turn of ``session`` in the background.

        Raises:
            Conflict: the session is running a turn already, or the server is stopping.
        """
        if self.stopping:
            raise Conflict("the server is stopping: no new turn starts")
        if session.id in self.running or session.busy:
            raise Conflict(f"session {session.id} is busy: wait for its status to be idle, or cancel it")
        assert self.task_group is not None
        self.running.add(session.id)
        self.task_group.start_soon(self._turn, session, text, model)

    def stop_turns(self) -> None:
        """Cancel every running turn and refuse new ones (the server is stopping)."""
        self.stopping = True
        for scope in self.scopes:
            scope.cancel()

    async def _turn(self, session: Session, text: str, model: Model) -> None:
        kind: str | None = None
        message = ""
        # its own scope, so that stopping cancels the turns and not the server around them
        with anyio.CancelScope() as scope:
            self.scopes.add(scope)
            if self.stopping:  # stopped between start_turn and this task's start
                scope.cancel()
            try:
                await session.prompt(text, model=model)
            except ProviderError as exc:
                kind, message = "provider", str(exc)
            except StoreError as exc:
                kind, message = "store", str(exc)
            except (UsageError, ConfigError) as exc:
                kind, message = "usage", str(exc)
            except Exception as exc:  # a defect: said on the stream and logged, the server goes on
                log.exception("turn of %s failed", session.id)
                kind, message = "defect", f"{type(exc).__name__}: {exc}"
            finally:
                self.scopes.discard(scope)
                self.running.discard(session.id)
        if kind is not None:
            first = message.splitlines()[0] if message else kind
            self.hub.publish({"v": 1, "type": "error", "session": session.id, "kind": kind, "message": first})
