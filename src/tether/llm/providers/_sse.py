"""Server-sent events: a provider stream's bytes, cut anywhere, into ``(event name, data)`` pairs.

The decoding the HTML standard gives event streams (and the provider SDKs implement): a line ends at CR, LF or CRLF
(a CR ending one chunk and the LF starting the next are one line end); a line starting with ``:`` is a comment (a
keep-alive); ``event:`` names the event; the ``data:`` lines of one event join with LF; one space after the colon is
dropped; a blank line ends the event (one with neither name nor data is nothing). ``id:`` and ``retry:`` are read
past: a request is never resumed. No line or event size limit: a line cut across many chunks is joined once.

Lines are decoded as strict UTF-8 (``UnicodeDecodeError`` for bytes that are not: the adapter's stream reports a
malformed stream). The common chunk (whole lines ending in LF) takes one ``split`` and no regular expression.
"""

from __future__ import annotations

import re

__all__ = ["SSEDecoder"]

_LINE_END = re.compile(rb"\r\n|\r|\n")


class SSEDecoder:
    """Incremental decoder of one stream: :meth:`feed` each chunk, then :meth:`finish` once."""

    __slots__ = ("_data", "_event", "_partial", "_skip_lf")

    def __init__(self) -> None:
        self._partial: list[bytes] = []  # the pieces of a line not ended yet
        self._skip_lf = False  # the previous chunk ended with CR: an LF starting this one ends nothing
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        """The events completed by ``chunk``."""
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if not chunk:
            return []
        if b"\r" in chunk:
            lines = self._split_cr(chunk)
        else:
            lines = chunk.split(b"\n")
            rest = lines.pop()
            if lines and self._partial:
                self._partial.append(lines[0])
                lines[0] = b"".join(self._partial)
                self._partial.clear()
            if rest:
                self._partial.append(rest)
        events: list[tuple[str | None, str]] = []
        for line in lines:
            self._line(line, events)
        return events

    def finish(self) -> list[tuple[str | None, str]]:
        """The event the stream's last bytes complete (a last line without its line end counts)."""
        events: list[tuple[str | None, str]] = []
        if self._partial:
            line = b"".join(self._partial)
            self._partial.clear()
            self._line(line, events)
        self._line(b"", events)
        return events

    def _split_cr(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        for match in _LINE_END.finditer(chunk):
            end = match.start()
            if self._partial:
                self._partial.append(chunk[start:end])
                lines.append(b"".join(self._partial))
                self._partial.clear()
            else:
                lines.append(chunk[start:end])
            start = match.end()
        if start < len(chunk):
            self._partial.append(chunk[start:])
        elif chunk.endswith(b"\r"):
            self._skip_lf = True
        return lines

    def _line(self, raw: bytes, events: list[tuple[str | None, str]]) -> None:
        if not raw:
            if self._event is not None or self._data:
                data = self._data
                events.append((self._event, data[0] if len(data) == 1 else "\n".join(data)))
                self._event = None
                self._data = []
            return
        if raw[:1] == b":":
            return
        line = raw.decode("utf-8")
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
