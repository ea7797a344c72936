"""Ascending, sortable identifiers with a type prefix (``ses_``, ``msg_``, ``prt_``, ``call_``, ``per_``, ``tool_``).

An id is ``<prefix>_<14 hex digits><14 random hex digits>``. The hex part is ``milliseconds * 4096 + counter``, so ids
created later in this process sort after earlier ones even within one millisecond; the random tail keeps ids from
different processes apart. Descending ids (newest first) are available for listings that want that order.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Literal

__all__ = ["Prefix", "ascending", "descending", "timestamp_ms"]

Prefix = Literal["ses", "msg", "prt", "call", "per", "que", "tool", "evt", "prj", "sav"]

_MAX = (1 << 56) - 1
_lock = threading.Lock()
_last = 0
_clock = time.time
# The module PRNG is seeded from os.urandom at import and reseeded in forked children (the same instance, so this
# bound method stays right); unlike os.urandom it takes no syscall, which matters with several ids per tool call
# while the store's writer thread holds the GIL.
_tail = random.getrandbits


def _next_value() -> int:
    global _last
    with _lock:
        value = int(_clock() * 1000) << 12  # milliseconds * 4096
        if value <= _last:
            value = _last + 1
        _last = value
    return value


def ascending(prefix: Prefix) -> str:
    """Return a new id that sorts after every id this process created before (same prefix)."""
    # Several a step: the two hex parts formatted in one string (1.4 -> 0.9 us an id).
    return f"{prefix}_{_next_value():014x}{_tail(56):014x}"


def descending(prefix: Prefix) -> str:
    """Return a new id that sorts before every id this process created before (same prefix)."""
    return f"{prefix}_{_MAX - _next_value():014x}{_tail(56):014x}"


def timestamp_ms(identifier: str) -> int:
    """Return the creation time (ms since the epoch) encoded in an ascending id."""
    hex_part = identifier.split("_", 1)[1][:14]
    return int(hex_part, 16) // 4096
