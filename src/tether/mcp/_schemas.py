"""The codecs of a server's tool schemas: its input and output JSON Schemas made into raw JSON Schema codecs.

A server's schemas are outside input. :func:`schema_codecs` runs in a worker thread under the connect deadline
(``Connection._list_tools``), since building a codec costs CPU up to the codec's bounds (``tools._codec``), which
must never stall the event loop; :func:`~._tools.mcp_tool` then takes a tool's codecs from its connection. Kept apart
from both so that the connection (which builds them) and the tools (which use them) do not import each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..tools.internal import Codec, make_codec

if TYPE_CHECKING:
    from mcp import types

__all__ = ["schema_codecs"]


def schema_codecs(tools: Sequence[types.Tool]) -> dict[str, tuple[Codec, Codec | None] | str]:
    """Each tool's input and output codecs (``None`` without an output schema) by raw name, or why they cannot be
    built (a schema that is not valid JSON Schema, retrieves a ``$ref``, or exceeds the codec's bounds)."""
    built: dict[str, tuple[Codec, Codec | None] | str] = {}
    for raw in tools:
        try:
            output = None if raw.output_schema is None else make_codec(dict(raw.output_schema))
            built[raw.name] = (make_codec(dict(raw.input_schema)), output)
        except (TypeError, ValueError) as exc:
            built[raw.name] = str(exc)
    return built
