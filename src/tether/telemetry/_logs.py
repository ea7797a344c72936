"""Structured logs: tether logs through stdlib :mod:`logging` only, and :class:`JsonFormatter` makes them JSON lines.

The library never prints and never installs a handler by itself (an application embedding tether owns its
logging). The ``tether`` command calls :func:`configure_logging` when asked (``--log-format``, ``TETHER_LOG_FORMAT``,
``--log-level``, ``TETHER_LOG_LEVEL``): one handler on the root logger, on stderr, so tether's records and those of
the libraries it uses (MCP, the OpenTelemetry exporter) come out in one format.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from ..errors import UsageError
from ..storable import has_surrogates

__all__ = ["LOG_FORMATS", "JsonFormatter", "LogFormat", "configure_logging"]

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")

_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# The attributes every LogRecord has: anything else on a record came from ``extra=`` and is kept as a field.
_STANDARD = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__.keys() | {"message", "asctime", "taskName"}
)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``ts`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, the record's
    ``extra=`` fields, ``exception`` (the traceback) when there is one, and ``trace_id``/``span_id`` when the record
    was logged inside a recorded OpenTelemetry span (so a log line joins its trace)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key not in out:
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        _trace_ids(out)
        # A lone surrogate (a file name's undecodable byte) cannot be written as UTF-8: JSON's ASCII form escapes it.
        text = json.dumps(out, ensure_ascii=False, default=repr)
        return json.dumps(out, default=repr) if has_surrogates(text) else text


def _trace_ids(out: dict[str, Any]) -> None:
    otel = sys.modules.get("opentelemetry.trace")
    if otel is None:
        return  # never imported: no span can be current
    span_context = otel.get_current_span().get_span_context()
    if span_context.is_valid:
        out["trace_id"] = f"{span_context.trace_id:032x}"
        out["span_id"] = f"{span_context.span_id:016x}"


def configure_logging(
    log_format: str = "text", level: str | int = "WARNING", *, stream: TextIO | None = None
) -> logging.Handler:
    """Send log records at ``level`` and above to ``stream`` (stderr) as text or JSON lines; returns the handler.

    A handler installed by an earlier call is replaced, never doubled.

    Raises:
        UsageError: an unknown format or level.
    """
    if log_format not in LOG_FORMATS:
        raise UsageError(f"Unknown log format {log_format!r}: use text or json")
    if isinstance(level, str):
        name = level.strip().upper()
        number = logging.getLevelNamesMapping().get(name)
        if number is None:
            raise UsageError(f"Unknown log level {level!r}: use DEBUG, INFO, WARNING, ERROR or CRITICAL")
        level = number
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(_TEXT))
    handler.set_name("tether")
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "tether"]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
