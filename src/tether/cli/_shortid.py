"""Short session ids: six hex digits a person can read and type, and the one lookup every command uses.

A session id is ``ses_<14 hex digits of time><14 random hex digits>`` (``tether.ids``): it sorts by creation, so all
sessions of a day share their first eight digits and a unique *prefix* of the id needs about twelve characters. The
random tail does not share: its first six digits (24 bits) tell apart the sessions of a store in practice (two of 1,000
sessions share them with a chance of about 3 %). So:

* a session's **short id** is the start of its random tail, six digits, lengthened where two of the sessions shown
  together share them (:func:`short_ids`); lists show it (``tether sessions``, ``/sessions``), ``session show``
  names it beside the full id;
* a **bare hex** argument (``9f3c1a``: no ``ses_``) is a short id: the sessions whose tail starts with it
  (:func:`resolve_session`; this reads the session list, newest first, since the store indexes ids by their start),
  and failing that the sessions whose id starts with ``ses_`` + it (a full id copied without its prefix);
* anything else (``ses_…``, a full id or a prefix of one) is the store's own lookup: one range of the id index.

The ids themselves are unchanged: still ascending, still sortable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["SHORT", "resolve_session", "short_id", "short_ids"]

SHORT = 6
"""Digits of a short id (more where two shown sessions share them)."""

_ID = re.compile(r"ses_[0-9a-f]{14}([0-9a-f]{14})")
_BARE = re.compile(r"[0-9a-f]{4,28}")
_SCANNED = 1_000_000
"""Sessions a short id is matched against (all of them, in practice)."""
_AMBIGUOUS_SHOWN = 5


def _tail(session_id: str) -> str | None:
    match = _ID.fullmatch(session_id)
    return match.group(1) if match else None


def short_id(session_id: str) -> str:
    """The six-digit short id of ``session_id`` (an id of another shape is shown whole)."""
    tail = _tail(session_id)
    return tail[:SHORT] if tail is not None else session_id


def short_ids(session_ids: Iterable[str]) -> Mapping[str, str]:
    """Each id's short id among ``session_ids``: the shortest start of its tail, at least :data:`SHORT` digits, that
    no other of them shares (an id of another shape is shown whole)."""
    tails = {sid: _tail(sid) for sid in dict.fromkeys(session_ids)}
    known = [t for t in tails.values() if t is not None]
    shown: dict[str, str] = {}
    for sid, tail in tails.items():
        if tail is None:
            shown[sid] = sid
            continue
        length = SHORT
        while length < len(tail) and sum(other.startswith(tail[:length]) for other in known) > 1:
            length += 1
        shown[sid] = tail[:length]
    return shown


async def resolve_session(store: Any, given: str) -> Any:
    """The session ``given`` names: a short id (bare hex, see the module docstring), else an id or a prefix of one.

    Raises:
        UsageError: ``given`` is empty, or ambiguous (the candidates are named).
        NotFoundError: no session matches.
    """
    from ..errors import NotFoundError, UsageError

    text = given.strip()
    if not _BARE.fullmatch(text):
        return await store.resolve_session(given)
    infos = [
        info for info in await store.list_sessions(limit=_SCANNED) if (_tail(info.id) or "").startswith(text)
    ]
    if len(infos) == 1:
        return infos[0]
    if len(infos) > 1:
        shown = short_ids(info.id for info in infos)
        names = ", ".join(f"{shown[info.id]} ({info.id})" for info in infos[:_AMBIGUOUS_SHOWN])
        more = ", ..." if len(infos) > _AMBIGUOUS_SHOWN else ""
        raise UsageError(f"short id {text} is ambiguous: {names}{more}; give more digits")
    try:
        return await store.resolve_session(f"ses_{text}")
    except NotFoundError:
        raise NotFoundError(
            f"Session not found: {text} (no session's short id or id starts with it; see `tether sessions`)"
        ) from None
