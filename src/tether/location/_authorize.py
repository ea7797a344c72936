"""Asking for path permissions in the fixed order: ``external_directory`` (when needed), then the action.

Leaves call these helpers *before* touching target content, so a denied request reveals nothing about the file
(not its content, not whether an edit would match). A write to a protected path (``_protected``) is asked on its own,
as ``edit`` with the request's ``protected`` anchor set, so no broad rule or saved "always" can approve it. Permission outcomes (``BlockedError``, ``DeclinedError``,
``CorrectedError``) propagate unchanged: settle turns them into the model-visible failure or the loop stop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..permissions import PermissionRequest
from ..tools import ToolContext
from ._protected import protected_anchor
from ._resolve import ResolvedPath

__all__ = ["PermissionAsserter", "authorize", "authorize_edit", "authorize_protected", "require_external"]


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
    if isinstance(resolved, ResolvedPath):  # one path (every read): nothing to deduplicate
        if resolved.external is not None:
            await require_external(permissions, ctx, resolved)
        resources: Sequence[str] = (resolved.resource,)
    else:
        items = list(resolved)
        await require_external(permissions, ctx, items)
        resources = tuple(dict.fromkeys(item.resource for item in items))
    await permissions.assert_(
        PermissionRequest.from_context(ctx, action=action, resources=resources, save=save, metadata=metadata)
    )


def _anchor(item: ResolvedPath) -> str | None:
    # Location.resolve sets ``protected`` (with the Location's extra protected files); a hand-built path still gets
    # the built-in list.
    return item.protected if item.protected is not None else protected_anchor(item.resource)


async def authorize_protected(
    permissions: PermissionAsserter,
    ctx: ToolContext,
    resolved: Sequence[ResolvedPath],
    *,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Ask ``edit`` for each protected path among ``resolved`` (one request each); do nothing when none is.

    Every writer calls this for the paths it is about to create, change, move or delete: the file tools through
    :func:`authorize_edit`, bash for its redirect targets and path-taking commands. Each request carries the path's
    ``protected`` anchor, so only a rule naming it allows (a broad ``edit`` allow or a saved "always" asks instead),
    a deny still denies, and an "always" reply saves the exact resource. The metadata holds ``filepath`` and
    ``protected`` (the anchor), plus ``metadata`` (e.g. bash's ``command``). ``external_directory`` is not asked here.

    Raises:
        BlockedError | DeclinedError | CorrectedError: a request was not allowed.
    """
    seen: set[str] = set()
    for item in resolved:
        if item.resource in seen:
            continue
        seen.add(item.resource)
        anchor = _anchor(item)
        if anchor is None:
            continue
        await permissions.assert_(
            PermissionRequest.from_context(
                ctx,
                action="edit",
                resources=[item.resource],
                # a wildcard in a file name would save a pattern wider than this file: then nothing is saved
                save=[] if any(w in item.resource for w in "*?") else [item.resource],
                metadata={**(metadata or {}), "filepath": str(item.path), "protected": anchor},
                protected=anchor,
            )
        )


async def authorize_edit(
    permissions: PermissionAsserter,
    ctx: ToolContext,
    resolved: ResolvedPath | Sequence[ResolvedPath],
    *,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """The mutating tools' gate: ``external_directory`` (if needed), ``edit`` with save ``["*"]``, protected paths.

    The ordinary resources are asked in one ``edit`` request; each protected one is then asked on its own
    (:func:`authorize_protected`), never inside the ordinary request.

    Raises:
        BlockedError | DeclinedError | CorrectedError: a request was not allowed.
    """
    items = [resolved] if isinstance(resolved, ResolvedPath) else list(resolved)
    await require_external(permissions, ctx, items)
    ordinary = [item for item in items if _anchor(item) is None]
    if ordinary:
        resources = list(dict.fromkeys(item.resource for item in ordinary))
        await permissions.assert_(
            PermissionRequest.from_context(
                ctx, action="edit", resources=resources, save=("*",), metadata=metadata
            )
        )
    if len(ordinary) < len(items):
        await authorize_protected(permissions, ctx, items, metadata=metadata)
