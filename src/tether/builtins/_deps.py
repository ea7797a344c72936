"""The services a built-in tool captures when it is constructed (built-ins never look services up per call)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..location import Location
    from ..output import OutputStore
    from ..permissions import PermissionService

__all__ = ["BuiltinDeps"]


@dataclass(frozen=True, kw_only=True, slots=True)
class BuiltinDeps:
    """Location (path resolution), the permission service (asked at the point of action), the output store."""

    location: Location
    permissions: PermissionService
    output: OutputStore
    shell: str | None = None
