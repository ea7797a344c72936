"""The server holds the handles of the sessions it served last, bounded (``Sessions`` itself holds none)."""

from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass
from typing import Any, cast

from tether.client import Client
from tether.server._state import RECENT_SESSIONS, ServerState

from .conftest import Live
from .test_api import READ_TIMEOUT, idle, until


@dataclass
class _Handle:
    id: str


def _state() -> ServerState:
    return ServerState(
        rt=cast(Any, None),
        location=cast(Any, None),
        project=cast(Any, None),
        hub=cast(Any, None),
        choose_model=lambda _: None,
    )


def test_the_least_recently_used_handle_goes_past_the_cap() -> None:
    state = _state()
    handles = [_Handle(f"ses_{n}") for n in range(RECENT_SESSIONS + 1)]
    for handle in handles[:RECENT_SESSIONS]:
        state.keep(cast(Any, handle))
    state.keep(cast(Any, handles[0]))  # used again: now the most recent
    state.keep(cast(Any, handles[-1]))  # one past the cap: the least recently used goes
    assert len(state.recent) == RECENT_SESSIONS
    assert "ses_1" not in state.recent
    assert list(state.recent)[-2:] == ["ses_0", f"ses_{RECENT_SESSIONS}"]


def test_a_session_keeps_its_handle_between_turns_and_deleting_drops_it(live: Live, api: Client) -> None:
    state: ServerState = live.server.config.app._app.state.tether  # behind the security middleware
    session = api.create_session(title="notes")
    stream = api.events(session=session["id"], read_timeout=READ_TIMEOUT)
    api.prompt(session["id"], "hi")
    until(stream, idle)
    handle = weakref.ref(state.recent[session["id"]])
    gc.collect()
    assert handle() is not None  # held between turns: the next prompt reopens nothing and replays nothing
    api.prompt(session["id"], "again")
    until(stream, idle)
    stream.close()
    assert state.recent[session["id"]] is handle()
    api.delete(session["id"])
    assert session["id"] not in state.recent
