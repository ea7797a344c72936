"""The tool contract: one opaque, immutable value for every kind of tool (law 1).

A :class:`Tool` has no intrinsic name; it is named when registered. Its codecs are built once, here, at construction.
``execute(input, ctx)`` may be a coroutine function or a plain function (which then runs in a worker thread, law 9).
It returns a :class:`ToolResponse` or a bare output value.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from typing_extensions import TypeVar as DefaultTypeVar

from .._record import record
from ..content import Content
from ..errors import BlockedError, UsageError
from ._codec import Codec, make_codec
from ._decision import PermissionRecord

__all__ = [
    "DEFAULT_TIMEOUT",
    "UNSET",
    "Asker",
    "DepsT",
    "PermissionRecorder",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinition",
    "ToolResponse",
]

InT = TypeVar("InT")
OutT = TypeVar("OutT")
DepsT = DefaultTypeVar("DepsT", default=Any)
"""The type of ``ToolContext.deps``: ``ToolContext[MyDeps]`` types it, a bare ``ToolContext`` leaves it ``Any``."""

DEFAULT_TIMEOUT = 300.0
"""Seconds a tool may run before settle fails the call (``timeout=None`` opts out)."""


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()
"""Marks an absent ``output`` in a :class:`ToolResponse` (``None`` is a valid output value)."""


PermissionRecorder = Callable[[PermissionRecord], None]
"""Receives each permission decision taken for one call (the session writes it on the call's tool part)."""


Asker = Callable[
    ["ToolContext[Any]", str, tuple[str, ...], tuple[str, ...], Mapping[str, Any] | None], Awaitable[None]
]
"""How ``ToolContext.ask`` reaches the permission service: ``(ctx, action, resources, save, metadata)``, returning on
allow and raising ``BlockedError`` / ``DeclinedError`` / ``CorrectedError`` otherwise. A session's dispatcher fills it
in (this package never imports ``tether.permissions``)."""


def _no_progress(update: Mapping[str, Any]) -> None:
    return None


def _no_record(record: PermissionRecord) -> None:
    return None


_NO_DEPS: Any = None


@record(slots=False)
class ToolContext(Generic[DepsT]):
    """The invocation context every tool receives: the call's durable identity, its scope and what it reports back.

    ``progress(update)`` publishes a JSON-able mapping (for a UI: a live tail, a percentage). It never blocks and may be
    called from a worker thread.

    ``record_permission(record)`` receives each permission decision taken for this call: requests built with
    ``PermissionRequest.from_context(ctx, ...)`` (and :meth:`ask`) carry it, and the permission service reports to it. A
    session's dispatcher records on the call's tool part; a call settled outside a session records nothing unless its
    caller passes a recorder (``records.append`` collects them in a list).

    ``deps`` are the application's dependencies (a database handle, an HTTP client, settings): given at registration
    (``registry.register(tools, deps=...)``, which wins) or at session creation (``rt.sessions.create(..., deps=...)``).
    Annotate ``ctx: ToolContext[MyDeps]`` to type them. ``location_root`` is the Location's root (read it as
    :attr:`root`); ``asker`` carries :meth:`ask` to the permission service.

    Not slotted: ``ToolContext[MyDeps](...)`` sets ``__orig_class__``, which a slotted dataclass refuses.
    """

    session_id: str
    agent: str
    message_id: str
    call_id: str
    progress: Callable[[Mapping[str, Any]], None] = field(default=_no_progress)
    record_permission: PermissionRecorder = field(default=_no_record)
    deps: DepsT = _NO_DEPS
    location_root: Path | None = None
    asker: Asker | None = None

    @property
    def root(self) -> Path:
        """The root directory of the Location the call runs in (the project directory).

        Raises:
            UsageError: the call was settled outside a Location (no ``location_root`` was given).
        """
        if self.location_root is None:
            raise UsageError(
                "ctx.root is unknown: this call was settled outside a Location. Run it in a session, or build the "
                "ToolContext with location_root=..."
            )
        return self.location_root

    async def ask(
        self,
        action: str,
        resources: str | Sequence[str],
        *,
        save: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Ask the permission service for ``action`` on ``resources``, as the built-in tools do; return on allow.

        The session's rules decide (last matching rule wins, no match asks a person); the decision, its rule and any
        reply are recorded on this call's tool part. Let a refusal propagate: the call then fails with the reason the
        model reads (kind ``blocked``, ``declined`` or ``corrected``), exactly like a built-in tool's.

        Args:
            action: the permission action, as rules name it (``deploy``, ``http``, ...).
            resources: what the call touches (``"prod"``, a URL, a path); one string or several.
            save: the patterns an "always" reply saves (default: exactly ``resources``).
            metadata: JSON-able details shown to the person asked.

        Raises:
            BlockedError: a rule denies it (also when the call runs without a permission service).
            DeclinedError: the person rejected it without feedback.
            CorrectedError: the person rejected it with feedback for the model.
            UsageError: ``action`` is empty or ``resources`` is empty.
        """
        found = (resources,) if isinstance(resources, str) else tuple(resources)
        if not isinstance(action, str) or not action:
            raise UsageError("ctx.ask needs a non-empty action name")
        if not found or not all(isinstance(r, str) and r for r in found):
            raise UsageError(f"ctx.ask({action!r}, ...) needs at least one non-empty resource string")
        if self.asker is None:
            raise BlockedError(
                f"Permission denied: {action}. This call runs without a permission service (it was settled outside a "
                "session), so every request is denied.",
                action=action,
                resources=found,
            )
        await self.asker(self, action, found, found if save is None else tuple(save), metadata)


@record
class ToolResponse(Generic[OutT]):
    """What ``execute`` may return: a typed ``output``, model-facing ``content`` and optional UI ``metadata``."""

    output: OutT = UNSET
    content: str | Sequence[Content] | None = None
    metadata: Mapping[str, Any] | None = None
    title: str | None = None


@record
class ToolDefinition:
    """What a provider is told about a tool: its effective name, description and JSON Schemas."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None


@record
class ToolCall:
    """One call from the model: its id, the tool name it asked for, and the raw (parsed JSON) input."""

    call_id: str
    name: str
    input: Any


Execute = Callable[[Any, ToolContext], Any]
ToModelOutput = Callable[[Any, Any], "str | Sequence[Content]"]


class Tool(Generic[InT, OutT]):
    """An opaque, reusable, immutable tool value.

    Args:
        description: what the tool does, written for the model.
        input: a pydantic model, any type a ``TypeAdapter`` accepts, a ``TypeAdapter``, or a raw JSON Schema dict.
        execute: ``(input, ctx) -> ToolResponse | output``; async, or sync (run in a worker thread).
        output: the declared output schema (same forms as ``input``), or ``None`` for content-only tools.
        to_model_output: ``(input, encoded_output) -> str | content`` used when a response carries no content.
        timeout: seconds before settle fails the call; ``None`` opts out (tools that enforce their own deadline).
        permission: the permission action for catalog visibility (default: the registered name).
        idempotent: running a call twice with the same input does no harm (a read, a lookup). A durable runner
            (``tether.temporal``) re-runs such a call when the worker running it died; any other call that was
            running then is reported to the model as interrupted, never run again.

    Raises:
        TypeError: a schema cannot be built, or ``execute`` is not callable.
        UsageError: ``timeout`` is not a positive, finite number of seconds or ``None``, or ``idempotent`` is not a
            bool.
    """

    __slots__ = (
        "_description",
        "_execute",
        "_idempotent",
        "_input",
        "_is_async",
        "_output",
        "_permission",
        "_timeout",
        "_to_model_output",
    )

    def __init__(
        self,
        *,
        description: str,
        input: Any,
        execute: Callable[
            [InT, ToolContext], Awaitable[ToolResponse[OutT] | OutT] | ToolResponse[OutT] | OutT
        ],
        output: Any = None,
        to_model_output: ToModelOutput | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        permission: str | None = None,
        idempotent: bool = False,
    ) -> None:
        if not isinstance(description, str) or not description.strip():
            raise TypeError("Tool description must be a non-empty string")
        if not callable(execute):
            raise TypeError("Tool execute must be callable")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf
        ):
            raise UsageError(
                f"Tool timeout must be a positive, finite number of seconds (or None for no deadline); got {timeout!r}"
            )
        if not isinstance(idempotent, bool):
            raise UsageError(f"Tool idempotent must be True or False; got {idempotent!r}")
        set_ = object.__setattr__
        set_(self, "_description", description)
        set_(self, "_input", make_codec(input))
        set_(self, "_output", None if output is None else make_codec(output))
        set_(self, "_execute", execute)
        set_(self, "_is_async", inspect.iscoroutinefunction(execute))
        set_(self, "_to_model_output", to_model_output)
        set_(self, "_timeout", timeout)
        set_(self, "_permission", permission)
        set_(self, "_idempotent", idempotent)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Tool values are immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Tool values are immutable")

    def __repr__(self) -> str:
        return f"<Tool {self._description[:40]!r}>"

    @property
    def description(self) -> str:
        return self._description

    @property
    def timeout(self) -> float | None:
        return self._timeout

    @property
    def idempotent(self) -> bool:
        """Whether a call may run again after its worker died mid-call (``Tool(idempotent=True)``)."""
        return self._idempotent

    @property
    def permission(self) -> str | None:
        """The permission action override, if any (``edit``, ``write`` and ``apply_patch`` share ``edit``)."""
        return self._permission

    @property
    def input_codec(self) -> Codec:
        return self._input

    @property
    def output_codec(self) -> Codec | None:
        return self._output

    @property
    def has_output(self) -> bool:
        return self._output is not None

    def _clone(self, **changes: Any) -> Tool[InT, OutT]:
        clone = object.__new__(Tool)
        for slot in Tool.__slots__:
            object.__setattr__(clone, slot, changes.get(slot, getattr(self, slot)))
        return clone

    def with_permission(self, action: str) -> Tool[InT, OutT]:
        """Return a new tool with the same behaviour and ``action`` as its permission action."""
        return self._clone(_permission=action)

    def with_deps(self, deps: Any) -> Tool[InT, OutT]:
        """Return a new tool with the same behaviour whose calls see ``ctx.deps`` as ``deps``.

        Registration-level dependencies (``registry.register(tools, deps=...)`` uses this): they win over the
        session's.
        """
        execute = self._execute
        if self._is_async:

            async def bound_async(value: Any, ctx: ToolContext) -> Any:
                return await execute(value, replace(ctx, deps=deps))

            return self._clone(_execute=bound_async)

        def bound(value: Any, ctx: ToolContext) -> Any:
            return execute(value, replace(ctx, deps=deps))

        return self._clone(_execute=bound)

    def definition(self, name: str) -> ToolDefinition:
        """The provider-facing definition of this tool under the effective ``name``."""
        return ToolDefinition(
            name=name,
            description=self._description,
            input_schema=self._input.schema,
            output_schema=None if self._output is None else self._output.schema,
        )
