"""Per-message wire forms, cached so a step converts only the messages that are new (law 10).

A session's history is append-only and its messages are immutable (frozen dataclasses) kept by the session, so the
wire form of a message (its serialized JSON fragment, the call ids it holds) never changes: it is computed once,
when the message first appears in a request, and looked up by identity afterwards. Identity, not equality: hashing a
message would walk its content (and tool inputs are dicts, which do not hash). The cache keeps a strong reference to
each message it holds, so an id is never reused while its entry lives; it is bounded (oldest entries go first), which
only ever costs a recomputation.

``variant`` distinguishes wire forms of one message that depend on the request (the tool-name mapping): it is part
of the key, and is usually the same small value at every step.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["DEFAULT_MAXSIZE", "WireCache"]

V = TypeVar("V")

DEFAULT_MAXSIZE = 16_384
"""Messages per model instance: well beyond any context window's worth of history."""


class WireCache(Generic[V]):
    """``message -> value`` by identity, computing a value once per (message, variant)."""

    __slots__ = ("_entries", "_maxsize", "conversions")

    def __init__(self, maxsize: int = DEFAULT_MAXSIZE) -> None:
        self._entries: dict[tuple[int, Hashable], tuple[object, V]] = {}
        self._maxsize = maxsize
        self.conversions = 0
        """How many values were computed (not looked up): what a test of per-step cost counts."""

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, message: object, variant: Hashable, convert: Callable[[], V]) -> V:
        key = (id(message), variant)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is message:
            return entry[1]
        value = convert()
        self.conversions += 1
        if len(self._entries) >= self._maxsize:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = (message, value)
        return value
