"""What an approval prompt shows before it asks: the change an edit would make, the sandbox a command would run in.

The change is computed from the file as it is now, the way the tool will compute it (``tether._preview``, which the
inspector's ask bar uses too); paths resolve through the Location as the tool resolves them, a file outside the
project included (the person at the terminal is asked about it). Nothing is written. When the change cannot be
computed (the file is not text, too large, ``old_string`` does not match once), the prompt shows the call's own
strings instead and says so: the person still sees what the model asked for, and the tool will report the mismatch.

The sandbox line names what would hold a bash command (:meth:`tether.sandbox.Sandbox.preview`, as
``tether permissions --explain bash`` shows it), or says plainly that the command would run unconfined (no
mechanism, or an ``escalate`` request).

Everything here reads the filesystem in a worker thread (law 9) and returns lines as ``_toolview`` renders them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import anyio.to_thread

from .._preview import NoPreview, patch_diff, write_diff
from ._toolview import Line, TerminalSettings, diff_lines, patch_lines

if TYPE_CHECKING:
    from ..location import Location
    from ..sandbox import Sandbox

__all__ = ["APPROVAL_DIFF_LINES", "Preview"]

APPROVAL_DIFF_LINES = 200
"""Diff lines an approval prompt shows at least (``terminal.diff_lines`` when larger): a person approves what they
see, so the prompt shows more than the stream does."""


class Preview:
    """Computes what an approval prompt shows for a call (see the module docstring).

    Args:
        location: resolves the paths of a call as its tool does (``None``: the diff comes from the call's strings).
        sandbox: the runtime's sandbox (``None``: the sandbox line is left out).
        settings: the terminal settings (``diff_lines``).
    """

    def __init__(
        self,
        *,
        location: Location | None = None,
        sandbox: Sandbox | None = None,
        settings: TerminalSettings | None = None,
    ) -> None:
        self._location = location
        self._sandbox = sandbox
        self.settings = settings or TerminalSettings()
        self._held: list[str] = []

    @property
    def limit(self) -> int:
        return max(APPROVAL_DIFF_LINES, self.settings.diff_lines)

    async def diff(self, tool: str | None, tool_input: Any) -> tuple[list[Line], str | None]:
        """The diff lines of what ``tool`` would write with ``tool_input``, and why it is not computed from the file
        (``None``: it is). Empty lines: not a file-changing call, or no preview at all."""
        if self._location is None or not isinstance(tool_input, Mapping):
            return [], None
        args = cast(Mapping[str, Any], tool_input)
        try:
            if tool in ("edit", "write"):
                path = args.get("path", args.get("filePath"))
                if not isinstance(path, str):
                    return [], None
                patch = await write_diff(
                    self._location, "edit" if tool == "edit" else "write", path, args, inside=False
                )
            elif tool == "apply_patch":
                text = args.get("patch_text", args.get("patchText", args.get("patch")))
                if not isinstance(text, str):
                    return [], None
                patch = await patch_diff(self._location, text, inside=False)
            else:
                return [], None
        except NoPreview as exc:
            return [], str(exc)
        lines, hidden = patch_lines(patch, with_header=True)
        return diff_lines(lines, self.limit, hidden=hidden, indent="  "), None

    async def sandbox(self, action: str) -> str | None:
        """The sandbox line of a ``bash`` or ``escalate`` request (``None``: another action, or no sandbox known)."""
        if action == "escalate":
            return "none: escalate runs this command outside the sandbox, with everything you can do"
        if action != "bash" or self._sandbox is None or self._location is None:
            return None
        if not self._held:
            sandbox, location = self._sandbox, self._location
            policy = await anyio.to_thread.run_sync(
                lambda: sandbox.preview(str(location.root), extra_protected=location.protected)
            )
            if policy is None:
                self._held.append("none: the command runs unconfined, as you (see tether doctor)")
            else:
                described = policy.describe()
                mechanism = "bubblewrap" if described["mechanism"] == "bwrap" else str(described["mechanism"])
                writable = ", ".join(str(w) for w in described["writable"])
                self._held.append(
                    f"{mechanism}: writes only to {writable}; network {described['network']}; protected paths "
                    "read-only"
                )
        return self._held[0]
