"""Tool name normalization and validation (registration happens before any mutation).

A legal name is what every provider accepts, ``^[A-Za-z0-9_-]{1,64}$`` (OpenCode's later rule): a leading digit,
``_`` or ``-`` is legal (MCP servers name tools ``__book_meeting_room``), so no legal name is refused here.
"""

from __future__ import annotations

import json
import re

from ..errors import RegistrationError

__all__ = ["RESERVED", "effective_name", "normalize_name"]

RESERVED = frozenset({"execute"})
_VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def normalize_name(name: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` with ``_``."""
    return _INVALID_CHARS.sub("_", name)


def effective_name(name: str, namespace: str | None = None) -> str:
    """The model-facing name for ``name`` registered under ``namespace`` (``acme.tools`` + ``echo`` →
    ``acme_tools_echo``).

    Raises:
        RegistrationError: the namespace or the resulting name is invalid, or the name is reserved.
    """
    if not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise RegistrationError(f"Invalid tool name: {name!r}", name=str(name))
    prefix = ""
    if namespace is not None:
        segments = namespace.split(".")
        if not all(_VALID.match(s) for s in segments):
            raise RegistrationError(f"Invalid tool namespace: {json.dumps(namespace)}", name=name)
        prefix = "_".join(segments) + "_"
    effective = prefix + normalize_name(name)
    if not _VALID.match(effective):
        raise RegistrationError(f"Invalid tool name: {name}", name=name)
    if effective in RESERVED:
        raise RegistrationError(f'Tool name "{effective}" is reserved for CodeMode', name=name)
    return effective
