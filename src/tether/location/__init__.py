"""Location: one project directory, path resolution (escapes, symlinks, external directories), safe mutation.

A Location has a project **root** (what is inside the project, what permission resources are relative to) and a
**working directory** inside it (``Location(root, directory=...)``; default: the root) that relative paths join and
the shell starts in, as OpenCode's instance has a ``worktree`` and a ``directory``.

Public surface for tools that touch paths (the file tools, bash's workdir and path arguments):

- :class:`Location` and :meth:`Location.resolve` → :class:`ResolvedPath`;
- :func:`require_external` / :func:`authorize` / :func:`authorize_edit`: the permission order;
- :func:`authorize_protected` and :func:`protected_anchor`: writes to protected paths always ask;
- :func:`write_if_unchanged` and the text helpers: safe, atomic, BOM- and line-ending-preserving writes;
- :func:`lock_files`: a file's mutation lock (per file in the process, ``flock`` across processes), held by the
  tools around read → compare → write so parallel changes of one file are never lost.

Every read and mutation acts on the canonical path (:attr:`ResolvedPath.path`) relative to directory descriptors,
never following a symlink: a directory (or the file) replaced by a symlink after resolution fails the call with
``<path> changed while waiting for approval: <component> is now a symlink. Nothing was written.``
"""

from ._authorize import PermissionAsserter, authorize, authorize_edit, authorize_protected, require_external
from ._files import (
    BOM,
    FILE_CHANGED_MESSAGE,
    TextFile,
    adapt_line_endings,
    check_path_sync,
    decode_text,
    encode_text,
    line_ending,
    open_for_reading_sync,
    read_bytes,
    read_bytes_sync,
    remove_if_unchanged_sync,
    write_bytes_sync,
    write_if_unchanged,
    write_if_unchanged_sync,
)
from ._locks import lock_files
from ._protected import PROTECTED_NAMES, names_protected_path, protected_anchor
from ._resolve import ExternalDirectory, Location, PathKind, ResolvedPath, sanitize_path

__all__ = [
    "BOM",
    "FILE_CHANGED_MESSAGE",
    "PROTECTED_NAMES",
    "ExternalDirectory",
    "Location",
    "PathKind",
    "PermissionAsserter",
    "ResolvedPath",
    "TextFile",
    "adapt_line_endings",
    "authorize",
    "authorize_edit",
    "authorize_protected",
    "check_path_sync",
    "decode_text",
    "encode_text",
    "line_ending",
    "lock_files",
    "names_protected_path",
    "open_for_reading_sync",
    "protected_anchor",
    "read_bytes",
    "read_bytes_sync",
    "remove_if_unchanged_sync",
    "require_external",
    "sanitize_path",
    "write_bytes_sync",
    "write_if_unchanged",
    "write_if_unchanged_sync",
]
