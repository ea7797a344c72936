"""What a pending permission request would do, for the inspector's ask bar: the call, and the change it would write.

The change is computed from the file as it is now, as the tool computes it (``tether._preview``, which the terminal's
approval prompt uses too), with the paths resolved through the session's Location as the tool resolves them; a file
outside the project is never read. Nothing is written. When it cannot be computed (no such file, not UTF-8 text,
larger than 4 MiB, ``old_string`` not matching once, a patch that does not apply, a path outside the project) ``patch``
is ``None`` and ``reason`` says why: the person still sees the call's own input, and the tool reports the mismatch
when it runs. The tool recomputes everything when it runs, so a preview is never what is acted on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from .._preview import NoPreview, patch_diff, write_diff
from .._record import record

if TYPE_CHECKING:
    from ..location import Location

__all__ = ["EDIT_TOOLS", "Change", "change_of"]

EDIT_TOOLS = frozenset({"edit", "write", "apply_patch"})


@record
class Change:
    """The unified diff a call would write (``patch``), or why it is not shown (``reason``)."""

    patch: str | None = None
    reason: str | None = None


async def change_of(location: Location, tool: str, tool_input: Any) -> Change:
    """The change ``tool`` would write with ``tool_input`` in ``location`` (an empty :class:`Change` for a tool that
    writes no file, or an input that is not an object)."""
    if tool not in EDIT_TOOLS or not isinstance(tool_input, Mapping):
        return Change()
    args = cast(Mapping[str, Any], tool_input)
    try:
        if tool == "apply_patch":
            text = args.get("patch_text")
            if not isinstance(text, str):
                raise NoPreview("the call has no patch")
            return Change(patch=await patch_diff(location, text, inside=True))
        path = args.get("path")
        if not isinstance(path, str):
            raise NoPreview("the call has no path")
        return Change(
            patch=await write_diff(location, "edit" if tool == "edit" else "write", path, args, inside=True)
        )
    except NoPreview as exc:
        return Change(reason=str(exc))
