"""One registered tool under its effective name (:class:`Entry`: what a step captures), and what a step's
materialization reads of the registry it was taken from (:class:`RegistryView`).

Here, below both the registry (``_registry``, which makes entries and materializations) and settle (``_settle``,
which runs the captured entries), so that settle never imports the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .._record import record
from ._tool import Tool

if TYPE_CHECKING:
    from ..output import OutputStore
    from ._hooks import AfterHook, BeforeHook

__all__ = ["Entry", "RegistryView"]


@record(kw_only=False, eq=False)
class Entry:
    """One registered tool under its effective name. Identity (``is``) is what stale detection compares."""

    name: str
    tool: Tool[Any, Any]
    token: int
    origin: str = "application"

    @property
    def action(self) -> str:
        """The permission action used for catalog visibility."""
        return self.tool.permission or self.name


class RegistryView(Protocol):
    """What a materialization reads of its registry (a ``ToolRegistry`` is one) while its step settles calls."""

    @property
    def output(self) -> OutputStore:
        """The output store that bounds the results (law 6)."""
        ...

    def hooks(self) -> tuple[tuple[BeforeHook, ...], tuple[AfterHook, ...]]:
        """The before and after hooks, in registration order."""
        ...

    def current(self, name: str) -> Entry | None:
        """The registration effective for ``name`` now (a call whose captured entry is no longer it is stale)."""
        ...
