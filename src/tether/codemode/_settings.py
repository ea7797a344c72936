"""Code Mode's settings for one agent: which tools stay in the catalog beside ``execute``, and the limits.

Built from the agent's ``codemode`` config key (``true`` or an object, see ``docs/codemode.md``); the config models
have already checked the values, so anything else here is a programming error of the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._record import record

__all__ = ["CodeModeSettings"]


@record
class CodeModeSettings:
    """What one ``execute`` call may do.

    Attributes:
        pinned: tools advertised beside ``execute`` (called directly as well as from code).
        timeout: wall seconds for the whole call, inner calls included.
        max_calls: the most inner tool calls of one ``execute`` call.
        max_memory: the sandbox heap, in bytes.
        cpu_seconds: the interpreter's own running time (time waiting on tools excluded): monty counts no
            instructions, so this is the bound on interpreter steps.
        max_recursion: the deepest Python call stack.
        max_print_bytes: the most ``print`` output kept; the rest is dropped and the loss reported.
        summary_chars: the inline budget of the catalog summary in ``execute``'s description (about 4 characters
            a token); pinned tools are always listed, the rest by namespace with counts past the budget.
    """

    pinned: tuple[str, ...] = ()
    timeout: float = 300.0
    max_calls: int = 100
    max_memory: int = 256 * 1024 * 1024
    cpu_seconds: float = 60.0
    max_recursion: int = 400
    max_print_bytes: int = 1024 * 1024
    summary_chars: int = 6000

    @classmethod
    def from_config(cls, value: bool | Mapping[str, Any]) -> CodeModeSettings | None:
        """``None`` for ``false``; the defaults for ``true``; the given keys over the defaults for an object."""
        if value is False:
            return None
        if value is True:
            return cls()
        fields: dict[str, Any] = {}
        if "pinned" in value:
            fields["pinned"] = tuple(value["pinned"])
        if "timeout" in value:
            fields["timeout"] = float(value["timeout"])
        if "max_calls" in value:
            fields["max_calls"] = int(value["max_calls"])
        if "max_memory_mb" in value:
            fields["max_memory"] = int(value["max_memory_mb"]) * 1024 * 1024
        if "cpu_seconds" in value:
            fields["cpu_seconds"] = float(value["cpu_seconds"])
        return cls(**fields)
