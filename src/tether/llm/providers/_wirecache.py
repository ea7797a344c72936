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

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ...tools import ToolDefinition
from .._request import AssistantMessage, Message, ToolCallContent
from ._common import CallIds, dumps

__all__ = ["DEFAULT_MAXSIZE", "BodyCache", "WireCache", "WireMessage", "call_ids", "splice"]

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


@dataclass(frozen=True, slots=True)
class WireMessage:
    """One history message on the wire: its items' JSON, comma-joined (``b""`` when it sends nothing)."""

    items: bytes
    call_ids: tuple[str, ...] = ()
    """The tool-call ids the message holds (assistant messages): the assembler must not hand them out again."""
    tag: Hashable = None
    """What the adapter needs to join the fragments (Anthropic: the role; Responses: each call's item type)."""


class BodyCache:
    """The wire forms of one model's history messages and tool definitions, each computed once (law 10).

    The adapters build a step's body as these cached fragments joined around the few fields that change every
    step, so a step serializes only its new messages, and learns the history's call ids from the cache.
    """

    __slots__ = ("messages", "tools")

    def __init__(self) -> None:
        self.messages: WireCache[WireMessage] = WireCache()
        self.tools: WireCache[bytes] = WireCache(maxsize=1024)

    def message(
        self,
        message: Message,
        variant: Hashable,
        convert: Callable[[], Sequence[Mapping[str, Any]]],
        tag: Callable[[], Hashable] | None = None,
    ) -> WireMessage:
        """``message``'s wire form: ``convert()`` gives its wire items (once), ``tag()`` the adapter's extra."""

        def build() -> WireMessage:
            ids: tuple[str, ...] = ()
            if isinstance(message, AssistantMessage):
                ids = tuple(p.call_id for p in message.content if isinstance(p, ToolCallContent))
            return WireMessage(
                items=b",".join(dumps(item) for item in convert()),
                call_ids=ids,
                tag=None if tag is None else tag(),
            )

        return self.messages.get(message, variant, build)

    def tool_list(
        self, tools: Sequence[ToolDefinition], variant: Hashable, convert: Callable[[ToolDefinition], Any]
    ) -> bytes:
        """The JSON array of ``tools``, each definition converted once."""
        parts = [self.tools.get(t, variant, lambda t=t: dumps(convert(t))) for t in tools]
        return b"[" + b",".join(parts) + b"]"


def call_ids(wire: Iterable[WireMessage]) -> CallIds:
    """The call ids already used in a history, from its cached wire forms (no message is walked)."""
    seen: list[str] = []
    for message in wire:
        if message.call_ids:
            seen.extend(message.call_ids)
    return CallIds(seen)


def splice(fields: Mapping[str, bytes], rest: Mapping[str, Any]) -> bytes:
    """A JSON object: ``fields`` (values already JSON) first, then the members of ``rest``."""
    members = [dumps(key) + b":" + value for key, value in fields.items()]
    tail = dumps(dict(rest))
    if tail != b"{}":
        members.append(tail[1:-1])
    return b"{" + b",".join(members) + b"}"
