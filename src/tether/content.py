"""Content parts: the model-facing value of a tool result, stored durably (re-exported by ``tether.tools``).

Content is a non-empty sequence of :class:`Text` and :class:`File` parts. File parts carry base64 ``data`` or a
``uri`` (never both) plus a mime type. This module also holds the JSON round trip used by the store and the HTTP API.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from ._record import record

__all__ = ["Content", "File", "Text", "content_from_json", "content_to_json", "text_of"]


@record(kw_only=False)
class Text:
    """A text part."""

    text: str
    type: Literal["text"] = "text"


@record
class File:
    """A file part (an image, a PDF, ...): base64 ``data`` or a ``uri``, with its ``mime`` type."""

    mime: str
    data: str | None = None
    uri: str | None = None
    name: str | None = None
    type: Literal["file"] = "file"

    def __post_init__(self) -> None:
        if (self.data is None) == (self.uri is None):
            raise ValueError("File needs exactly one of data (base64) or uri")

    @classmethod
    def from_bytes(cls, raw: bytes, *, mime: str, name: str | None = None) -> File:
        """Build a file part from raw bytes (base64-encoded here)."""
        return cls(mime=mime, data=base64.b64encode(raw).decode("ascii"), name=name)

    def data_uri(self) -> str:
        """The part as a URI: its ``uri``, or a ``data:`` URI built from ``data``."""
        if self.uri is not None:
            return self.uri
        return f"data:{self.mime};base64,{self.data}"


Content = Text | File


def text_of(parts: Iterable[Content], sep: str = "") -> str:
    """Concatenate the text parts of ``parts`` (file parts are skipped)."""
    return sep.join(p.text for p in parts if isinstance(p, Text))


def content_to_json(parts: Sequence[Content]) -> list[dict[str, Any]]:
    """Encode content parts as plain JSON objects."""
    out: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, Text):
            out.append({"type": "text", "text": p.text})
        else:
            item: dict[str, Any] = {"type": "file", "mime": p.mime}
            if p.data is not None:
                item["data"] = p.data
            if p.uri is not None:
                item["uri"] = p.uri
            if p.name is not None:
                item["name"] = p.name
            out.append(item)
    return out


def content_from_json(items: Iterable[Mapping[str, Any]]) -> tuple[Content, ...]:
    """Decode parts written by :func:`content_to_json`.

    Raises:
        ValueError: an item is not a text or file part.
    """
    parts: list[Content] = []
    for item in items:
        kind = item.get("type")
        if kind == "text":
            parts.append(Text(str(item["text"])))
        elif kind == "file":
            parts.append(
                File(mime=item["mime"], data=item.get("data"), uri=item.get("uri"), name=item.get("name"))
            )
        else:
            raise ValueError(f"not a content part: {item!r}")
    return tuple(parts)
