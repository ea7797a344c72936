"""Asking for path permissions in the fixed order: ``external_directory`` (when needed), then the action.

Leaves call these helpers *before* touching target content, so a denied request reveals nothing about the file
(not its content, not whether an edit would match). Permission outcomes (``BlockedError``, ``DeclinedError``,
``CorrectedError``) propagate unchanged: settle turns them into the model-visible failure or the loop stop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..permissions import PermissionRequest
from ..tools import ToolContext
from ._resolve import ResolvedPath

__all__ = ["PermissionAsserter", "authorize", "authorize_edit", "require_external"]


class PermissionAsserter(Protocol):
    """What the helpers need from the permission service: ``assert_`` returns on allow and raises otherwise."""

    async def assert_(self, request: PermissionRequest, /) -> object: ...


async def require_external(
    permissions: PermissionAsserter,
    ctx: ToolContext,
    resolved: ResolvedPath | Iterable[ResolvedPath],
    *,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Ask ``external_directory`` once per distinct external directory among ``resolved`` (in first-seen order).

    One request per directory, never one request listing several: a person approves or rejects each directory on
    its own, and an "always" reply saves exactly the pattern of the directory it was asked for. Every tool (the file
    tools, ``apply_patch``, ``bash``) asks through here. Internal paths ask nothing. The request's resource is
    ``<dir>/*`` and its save pattern is the containing project root's ``<root>/*`` (or the resource itself); its
    metadata holds ``filepath`` and ``parentDir``, plus ``metadata`` (e.g. bash's ``command``).

    Raises:
        BlockedError | DeclinedError | CorrectedError: the request was not allowed.
    """
    items = [resolved] if isinstance(resolved, ResolvedPath) else list(resolved)
    seen: set[str] = set()
    for item in items:
        ext = item.external
        if ext is None or ext.resource in seen:
            continue
        seen.add(ext.resource)
        await permissions.assert_(
            PermissionRequest.from_context(
                ctx,
                action="external_directory",
                resources=[ext.resource],
                save=[ext.save],
                metadata={**(metadata or {}), "filepath": str(item.path), "parentDir": ext.directory},
            )
        )


async def authorize(
    permissions: PermissionAsserter,
    ctx: ToolContext,
    resolved: ResolvedPath | Sequence[ResolvedPath],
    *,
    action: str,
    save: Sequence[str] = ("*",),
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Ask ``external_directory`` for every external target, then one ``action`` request over all resources.

    Resources are deduplicated in first-seen order.

    Raises:
        BlockedError | DeclinedError | CorrectedError: a request was not allowed.
    """
    items = [resolved] if isinstance(resolved, ResolvedPath) else list(resolved)
    await require_external(permissions, ctx, items)
    resources = list(dict.fromkeys(item.resource for item in items))
    await permissions.assert_(
        PermissionRequest.from_context(ctx, action=action, resources=resources, save=save, metadata=metadata)
    )


async def authorize_edit(
    permissions: PermissionAsserter,
    ctx: ToolContext,
    resolved: ResolvedPath | Sequence[ResolvedPath],
    *,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """The mutating tools' gate: ``external_directory`` (if needed), then ``edit`` with save ``["*"]``.

    Raises:
        BlockedError | DeclinedError | CorrectedError: a request was not allowed.
    """
    await authorize(permissions, ctx, resolved, action="edit", save=("*",), metadata=metadata)
