"""What an approval prompt shows before it asks: the change an edit would make, the sandbox a command would run in.

The change is computed from the file as it is now, the way the tool will compute it: ``edit`` runs the tool's own
matching (``builtins._replacers.replace``) on the file's text, ``write`` compares the new content with the file,
``apply_patch`` applies each hunk to its file in memory (``builtins._patch``). Paths resolve through the Location, as
the tool resolves them. Nothing is written. When the change cannot be computed (the file is not text, too large,
``old_string`` does not match once), the prompt shows the call's own strings instead and says so: the person still
sees what the model asked for, and the tool will report the mismatch.

The sandbox line names what would hold a bash command (:meth:`tether.sandbox.Sandbox.preview`, as
``tether permissions --explain bash`` shows it), or says plainly that the command would run unconfined (no
mechanism, or an ``escalate`` request).

Everything here reads the filesystem in a worker thread (law 9) and returns lines as ``_toolview`` renders them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio.to_thread

from ..errors import PathError, ToolFailure
from ..storable import printable
from ._toolview import Line, TerminalSettings, diff_lines, patch_lines

if TYPE_CHECKING:
    from ..location import Location
    from ..sandbox import Sandbox

__all__ = ["APPROVAL_DIFF_LINES", "Preview"]

APPROVAL_DIFF_LINES = 200
"""Diff lines an approval prompt shows at least (``terminal.diff_lines`` when larger): a person approves what they
see, so the prompt shows more than the stream does."""

_MAX_FILE = 4 << 20
"""Bytes of a file read to preview a change (a larger one is previewed from the call's strings)."""


class _NoPreview(Exception):
    """The change cannot be computed from the file; the message says why."""


def _text_of(path: Path) -> str | None:
    """The text of ``path`` as the file tools read it (``None``: no file). Blocking.

    Raises:
        _NoPreview: not a regular text file, or too large.
    """
    from ..location import decode_text, read_bytes_sync

    try:
        if os.stat(path).st_size > _MAX_FILE:
            raise _NoPreview(f"the file is larger than {_MAX_FILE >> 20} MiB")
        raw = read_bytes_sync(path)
    except FileNotFoundError:
        return None
    except (OSError, ToolFailure) as exc:
        raise _NoPreview(f"the file cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if raw is None:
        return None
    try:
        return decode_text(raw).text.replace("\r\n", "\n")
    except UnicodeDecodeError:
        raise _NoPreview("the file is not UTF-8 text") from None


def _edit_patch(path: Path, resource: str, args: Mapping[str, Any]) -> str:
    from ..builtins._common import unified_diff
    from ..builtins._replacers import AmbiguousMatch, IndentationUnclear, NoMatch, SpanTooLarge, replace

    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        raise _NoPreview("the call has no old_string and new_string")
    text = _text_of(path)
    if text is None:
        raise _NoPreview("the file does not exist")
    try:
        updated, _ = replace(
            text,
            old.replace("\r\n", "\n"),
            new.replace("\r\n", "\n"),
            replace_all=args.get("replace_all") is True,
        )
    except (NoMatch, AmbiguousMatch, IndentationUnclear, SpanTooLarge):
        raise _NoPreview("old_string does not match the file once") from None
    return unified_diff(text, updated, resource)


def _write_patch(path: Path, resource: str, args: Mapping[str, Any]) -> str:
    from ..builtins._common import unified_diff

    content = args.get("content")
    if not isinstance(content, str):
        raise _NoPreview("the call has no content")
    return unified_diff(_text_of(path) or "", content.removeprefix("\ufeff").replace("\r\n", "\n"), resource)


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
                try:
                    resolved = await self._location.aresolve(path)
                except PathError as exc:
                    raise _NoPreview(exc.message) from None
                compute = _edit_patch if tool == "edit" else _write_patch
                patch = await anyio.to_thread.run_sync(compute, resolved.path, resolved.resource, args)
            elif tool == "apply_patch":
                text = args.get("patch_text", args.get("patchText", args.get("patch")))
                if not isinstance(text, str):
                    return [], None
                patch = await self._patch(text)
            else:
                return [], None
        except _NoPreview as exc:
            return [], str(exc)
        lines, hidden = patch_lines(patch, with_header=True)
        return diff_lines(lines, self.limit, hidden=hidden, indent="  "), None

    async def _patch(self, text: str) -> str:
        from ..builtins._common import unified_diff
        from ..builtins._patch import PatchError, apply_chunks, parse_patch

        assert self._location is not None
        try:
            hunks = parse_patch(text)
        except PatchError as exc:
            raise _NoPreview(f"the patch does not parse: {exc}") from None
        patches: list[str] = []
        for hunk in hunks:
            try:
                resolved = await self._location.aresolve(hunk.path)
            except PathError as exc:
                raise _NoPreview(exc.message) from None
            resource = resolved.resource
            if hunk.kind == "add":
                patches.append(unified_diff("", hunk.contents, resource))
                continue
            old = await anyio.to_thread.run_sync(_text_of, resolved.path)
            if old is None:
                raise _NoPreview(f"{printable(resource)} does not exist")
            if hunk.kind == "delete":
                patches.append(unified_diff(old, "", resource))
                continue
            try:
                new = apply_chunks(old, hunk.chunks, resource)
            except PatchError as exc:
                raise _NoPreview(f"the patch does not apply to {printable(resource)}: {exc}") from None
            if hunk.move_to:
                resource = f"{resource} -> {hunk.move_to}"
            patches.append(unified_diff(old, new, resource))
        return "".join(patches)

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
