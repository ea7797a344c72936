"""An MCP server's results as tether content: what the model reads of a tool result or a resource.

- text is kept as text; an embedded text resource is kept with its URI;
- an image, or an embedded blob that is an image or a PDF, becomes a file part when it is valid base64 of at most
  10 MB; anything else (audio, other blobs, a larger or undecodable one) is left out with a line that says what was
  left out and why, never dropped silently;
- a resource link becomes a line naming it (the model can read it with ``read_mcp_resource``);
- ``isError`` becomes a :class:`~tether.errors.ToolFailure` carrying the server's text (a failure the model reads);
- ``structuredContent`` is the call's machine ``output`` when the tool declares an output schema.

Bounding is not done here: settle bounds the content once (law 6). Every string here came from a server, so
nothing is trusted: a mime type is kept only when it looks like one.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..content import Content, File, Text
from ..errors import ToolFailure
from ..tools import ToolResponse
from ..tools.internal import UNSET

if TYPE_CHECKING:
    from mcp import types

__all__ = ["MAX_ATTACHMENT", "resource_parts", "tool_response"]

MAX_ATTACHMENT = 10 * 1024 * 1024
"""The largest image or PDF (decoded bytes) attached to a result; a larger one is left out with a note."""
_MIME = re.compile(r"^[A-Za-z0-9][\w.+-]*/[\w.+-]+$")


def _mime(raw: str | None) -> str:
    return (
        raw if isinstance(raw, str) and _MIME.match(raw) and len(raw) <= 127 else "application/octet-stream"
    )


def _attachable(mime: str) -> bool:
    return mime.startswith("image/") or mime == "application/pdf"


def _binary(data: str, mime: str, what: str, name: str | None = None) -> Content:
    """A file part for ``data`` (base64), or a text part saying why it was left out."""
    size = len(data) * 3 // 4
    if not _attachable(mime):
        return Text(f"[{what} ({mime}, about {size} bytes) left out: only images and PDFs are attached]")
    if size > MAX_ATTACHMENT:
        return Text(f"[{what} ({mime}, about {size} bytes) left out: larger than the 10 MB attachment limit]")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return Text(f"[{what} ({mime}) left out: the server sent data that is not valid base64]")
    return File.from_bytes(raw, mime=mime, name=name)


def resource_parts(
    contents: Sequence[types.TextResourceContents | types.BlobResourceContents],
) -> list[Content]:
    """The parts of a read resource (or an embedded one): text with its URI, blobs as :func:`_binary` decides."""
    from mcp import types

    parts: list[Content] = []
    for item in contents:
        uri = str(item.uri)
        if isinstance(item, types.TextResourceContents):
            parts.append(Text(f"[resource {uri}]\n{item.text}"))
        else:
            parts.append(_binary(item.blob, _mime(item.mime_type), f"resource {uri}", name=uri))
    return parts


def _parts(content: Sequence[Any]) -> list[Content]:
    from mcp import types

    parts: list[Content] = []
    for block in content:
        if isinstance(block, types.TextContent):
            parts.append(Text(block.text))
        elif isinstance(block, types.ImageContent):
            parts.append(_binary(block.data, _mime(block.mime_type), "image"))
        elif isinstance(block, types.AudioContent):
            parts.append(_binary(block.data, _mime(block.mime_type), "audio"))
        elif isinstance(block, types.ResourceLink):
            mime = f" ({_mime(block.mime_type)})" if block.mime_type else ""
            parts.append(
                Text(f"[resource link: {block.name} {block.uri}{mime}; read it with read_mcp_resource]")
            )
        elif isinstance(block, types.EmbeddedResource):
            parts.extend(resource_parts([block.resource]))
        else:  # a content type of a later protocol revision
            parts.append(Text(f"[a {type(block).__name__} part left out: tether cannot show it]"))
    return parts


def tool_response(
    server: str, tool: str, result: types.CallToolResult, *, has_output: bool
) -> ToolResponse[Any]:
    """The :class:`ToolResponse` of one ``tools/call`` result.

    Raises:
        ToolFailure: the server reported the call failed (``isError``); the message carries the server's text.
    """
    parts = _parts(result.content)
    if result.is_error:
        text = (
            "\n".join(p.text for p in parts if isinstance(p, Text)).strip() or "(the server gave no message)"
        )
        raise ToolFailure(f'MCP server "{server}" reported an error from its tool "{tool}": {text}')
    structured = result.structured_content
    if not parts:
        parts = [
            Text(json.dumps(structured, ensure_ascii=False) if structured is not None else "(no output)")
        ]
    if has_output:  # no structured content for a declared schema: settle fails the call (law 2)
        return ToolResponse(output=UNSET if structured is None else structured, content=parts)
    return ToolResponse(content=parts)
