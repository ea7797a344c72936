"""Structured logs: the JSON formatter, ``configure_logging``, and no ``print`` in the library."""

from __future__ import annotations

import ast
import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

import tether
from tether.errors import UsageError
from tether.telemetry import JsonFormatter, configure_logging


@pytest.fixture
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@contextmanager
def json_logger(name: str) -> Iterator[tuple[logging.Logger, list[dict[str, object]]]]:
    """A logger whose records are formatted by ``JsonFormatter``; the list gets them, parsed, when the block ends."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    logger.propagate = False
    records: list[dict[str, object]] = []
    try:
        yield logger, records
    finally:
        logger.removeHandler(handler)
        records.extend(json.loads(line) for line in stream.getvalue().splitlines())


def test_a_record_is_one_json_line_with_extras_and_the_traceback() -> None:
    with json_logger("tether.test.json") as (logger, records):
        try:
            raise ValueError("bad\nvalue")
        except ValueError:
            logger.error("call %s failed", "c1", exc_info=True, extra={"session_id": "ses_1", "n": 3})
    (out,) = records
    assert (
        out["level"] == "ERROR" and out["logger"] == "tether.test.json" and out["message"] == "call c1 failed"
    )
    assert out["session_id"] == "ses_1" and out["n"] == 3
    assert "ValueError: bad\nvalue" in str(out["exception"])
    assert str(out["ts"]).endswith("+00:00")
    assert "trace_id" not in out  # no span is current


def test_a_record_inside_a_span_carries_its_trace_and_span_ids() -> None:
    tracer = TracerProvider().get_tracer("test")
    with json_logger("tether.test.span") as (logger, records), tracer.start_as_current_span("work") as span:
        logger.warning("inside", stack_info=True)
    (out,) = records
    context = span.get_span_context()
    assert out["trace_id"] == f"{context.trace_id:032x}" and out["span_id"] == f"{context.span_id:016x}"
    assert "stack" in out


def test_configure_logging_installs_one_handler_and_refuses_unknown_values(restore_root: None) -> None:
    first = io.StringIO()
    configure_logging("json", "info", stream=first)
    second = io.StringIO()
    handler = configure_logging("text", logging.DEBUG, stream=second)  # replaces the first, never doubles
    assert [h for h in logging.getLogger().handlers if h.get_name() == "tether"] == [handler]
    logging.getLogger("tether.test.text").debug("plain %d", 7)
    assert first.getvalue() == "" and "DEBUG tether.test.text: plain 7" in second.getvalue()
    with pytest.raises(UsageError, match="Unknown log format 'xml'"):
        configure_logging("xml")
    with pytest.raises(UsageError, match="Unknown log level 'LOUD'"):
        configure_logging("json", "LOUD")


# Where printing is the job: the tether command's user output, `python -m tether.server.openapi` (it prints the
# OpenAPI document), and the demo's sample project (a program the demo's agent runs, not the library).
PRINTING = ("cli/", "server/openapi.py", "demo/project/")


def test_the_library_never_prints() -> None:
    root = Path(tether.__file__).parent
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(PRINTING):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                found.append(f"{relative}:{node.lineno}")
    assert found == [], "log through logging (tether.telemetry docs), never print: " + ", ".join(found)


def test_a_lone_surrogate_in_a_record_still_makes_a_json_line() -> None:
    with json_logger("tether.test.surrogate") as (logger, records):
        logger.warning("cannot read %s", "bad\udcff.txt")
    (out,) = records
    assert out["message"] == "cannot read bad\udcff.txt"  # escaped on the line, the same text once parsed
