"""The only two results of a settle: :class:`Completed` and :class:`Failed`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .._record import record
from ..content import Content

__all__ = ["Completed", "Failed", "FailureKind", "Outcome"]

FailureKind = Literal[
    "unknown",  # the name was never advertised in this step
    "stale",  # the registration was replaced or closed since materialize
    "final_step",  # tools are disabled after the maximum agent steps
    "invalid_input",  # the input did not decode; execute never ran
    "invalid_output",  # the output did not encode; never a success
    "timeout",  # the tool's deadline passed
    "tool",  # the tool raised ToolFailure
    "blocked",  # a configured permission rule denied the request
    "corrected",  # the user rejected with feedback
    "declined",  # the user rejected without feedback: the runner stops the loop
    "output_store",  # retaining the full output failed
    "defect",  # any other exception: a bug in the tool
]


@record
class Completed:
    """A successful call: the encoded ``output`` (or ``None``), bounded ``content``, ``metadata``, retained paths."""

    content: tuple[Content, ...]
    output: Any = None
    metadata: Mapping[str, Any] | None = None
    output_paths: tuple[str, ...] = ()
    title: str | None = None
    status: Literal["completed"] = "completed"


@record
class Failed:
    """A failed call: the model-visible ``error``, why (``kind``), and content produced before the failure."""

    error: str
    kind: FailureKind
    partial: tuple[Content, ...] = ()
    metadata: Mapping[str, Any] | None = None
    output_paths: tuple[str, ...] = ()
    status: Literal["error"] = "error"


Outcome = Completed | Failed
