"""Output bounding (head + tail preview around a marker) and the managed retention store (law 6)."""

from ._preview import bounded_preview, utf8_len
from ._store import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    MAX_STRUCTURED_BYTES,
    RETENTION_SECONDS,
    Bounded,
    OutputStore,
    marker_for,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "MAX_STRUCTURED_BYTES",
    "RETENTION_SECONDS",
    "Bounded",
    "OutputStore",
    "bounded_preview",
    "marker_for",
    "utf8_len",
]
