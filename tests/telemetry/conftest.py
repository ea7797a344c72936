"""Tracing fixtures: an SDK tracer provider with the in-memory exporter, given to tether alone for one test.

``use_tracer_provider`` scopes it to the test, so the OpenTelemetry global provider (set once per process) is never
touched and turns of other tests stay untraced.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tether.telemetry import use_tracer_provider


class Spans:
    """The finished spans of a test, with the lookups the tree tests need."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter

    @property
    def all(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        (span,) = self.named(name)
        return span

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        return sorted(
            (s for s in self.all if s.parent is not None and s.parent.span_id == parent.context.span_id),
            key=lambda s: s.start_time or 0,
        )

    def roots(self) -> list[ReadableSpan]:
        return [s for s in self.all if s.parent is None]


@pytest.fixture
def spans() -> Iterator[Spans]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with use_tracer_provider(provider):
        yield Spans(exporter)
    provider.shutdown()
