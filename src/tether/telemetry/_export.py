"""Configuring the OpenTelemetry SDK with an OTLP/HTTP exporter: ``tether run --otel``, config ``telemetry``.

The SDK and the exporter are the optional extra ``tether[otel]``; without them :func:`configure` raises a
:class:`~tether.errors.UsageError` that says what to install. The provider made here is tether's own
(:func:`~tether.telemetry.use_tracer_provider`), never the process-wide OpenTelemetry global, which an application
embedding tether owns. Spans are exported by the SDK's batch processor in its own thread, so a slow or unreachable
collector never holds up a turn: a failed export is logged (``opentelemetry.exporter...`` logger) and dropped.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import field
from typing import Any
from urllib.parse import urlsplit

from .._record import record
from ..errors import UsageError
from ._hook import _provider  # pyright: ignore[reportPrivateUsage]

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "Telemetry",
    "TelemetrySettings",
    "configure",
    "export_from_config",
    "settings_from_config",
]

DEFAULT_TIMEOUT_MS = 5_000
"""How long one export request may take, and how long shutdown waits for the last spans (milliseconds)."""

_log = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"

INSTALL_HINT = "OpenTelemetry export needs the SDK: pip install 'tether[otel]'"


@record
class TelemetrySettings:
    """Where and how spans are exported (the config's ``telemetry`` section).

    Attributes:
        endpoint: the OTLP/HTTP traces URL (``http://host:4318/v1/traces``); ``None``: the standard variables
            (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``); with neither
            set, :func:`configure` refuses (the exporter's own fallback, ``localhost:4318``, is a port any local user
            can listen on).
        headers: HTTP headers of each export request (an API key of a hosted collector).
        service_name: the ``service.name`` resource attribute.
        timeout_ms: the export timeout, and how long shutdown waits for the last spans.
    """

    endpoint: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    service_name: str = "tether"
    timeout_ms: int = DEFAULT_TIMEOUT_MS


def settings_from_config(data: Mapping[str, Any], *, force: bool = False) -> TelemetrySettings | None:
    """The export settings of a merged config (``Config.data``), or ``None`` when export is off.

    Export is on when the config sets ``telemetry.otlp_endpoint``, or when ``force`` (``--otel``) asks for it. An
    endpoint with no path (``http://collector:4318``, as ``$OTEL_EXPORTER_OTLP_ENDPOINT`` is written) gets the
    traces path ``/v1/traces``: the exporter would otherwise post to ``/``, and every export would fail.
    """
    section: Mapping[str, Any] = data.get("telemetry") or {}
    endpoint = section.get("otlp_endpoint")
    if endpoint is None and not force:
        return None
    if endpoint is None and not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
        raise UsageError(NO_ENDPOINT)
    if endpoint is not None and urlsplit(endpoint).path in ("", "/"):
        endpoint = endpoint.rstrip("/") + TRACES_PATH
    return TelemetrySettings(
        endpoint=endpoint,
        headers=dict(section.get("headers") or {}),
        service_name=section.get("service_name") or "tether",
        timeout_ms=section.get("timeout") or DEFAULT_TIMEOUT_MS,
    )


class Telemetry:
    """A configured SDK: tether's turns are traced and exported until :meth:`shutdown` (also a context manager)."""

    def __init__(self, provider: Any, previous: Any, timeout_ms: int) -> None:
        self.provider = provider
        self._previous = previous
        self._timeout_ms = timeout_ms
        self._closed = False

    def shutdown(self) -> None:
        """Stop tracing tether's turns and export what is still buffered, waiting at most the export timeout.

        The SDK's flush exports batch after batch, each allowed the whole timeout, so a collector that accepts and
        never answers would hold the caller (a process at exit) for as many timeouts as there are batches queued.
        The flush runs in a daemon thread instead; what it has not sent when the timeout is over is dropped, and
        said so in a log record.
        """
        if self._closed:
            return
        self._closed = True
        if _provider[0] is self.provider:
            _provider[0] = self._previous
        flush = threading.Thread(target=self._flush, name="tether-telemetry-shutdown", daemon=True)
        flush.start()
        flush.join(self._timeout_ms / 1000)
        if flush.is_alive():
            _log.warning(
                "OpenTelemetry export did not finish within %d ms: the spans not yet sent are dropped",
                self._timeout_ms,
            )

    def _flush(self) -> None:
        self.provider.force_flush(self._timeout_ms)
        self.provider.shutdown()

    def __enter__(self) -> Telemetry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""The standard variables that name an OTLP endpoint; without one of them or a configured endpoint nothing exports."""

NO_ENDPOINT = (
    "No OTLP endpoint to send traces to: set telemetry.otlp_endpoint in your config "
    '(e.g. "http://collector:4318/v1/traces") or $OTEL_EXPORTER_OTLP_ENDPOINT (in Python: '
    "TelemetrySettings(endpoint=...)). tether never falls back to localhost:4318, where any local user could listen "
    "and receive your traces"
)


def configure(settings: TelemetrySettings | None = None, *, exporter: Any = None) -> Telemetry:
    """Trace tether's turns with an SDK tracer provider that exports over OTLP/HTTP (batching, in its own thread).

    Args:
        settings: where to export (default: the exporter's defaults and environment variables).
        exporter: a span exporter to use instead of OTLP/HTTP (an SDK ``SpanExporter``).

    Raises:
        UsageError: the SDK or the OTLP exporter is not installed (the ``tether[otel]`` extra).
    """
    settings = settings or TelemetrySettings()
    if (
        exporter is None
        and settings.endpoint is None
        and not any(os.environ.get(n) for n in ENDPOINT_VARIABLES)
    ):
        raise UsageError(NO_ENDPOINT)
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(
                endpoint=settings.endpoint,
                headers=dict(settings.headers) or None,
                timeout=settings.timeout_ms / 1000,
            )
    except ImportError as exc:
        raise UsageError(INSTALL_HINT) from exc
    from .._version import __version__

    resource = Resource.create({"service.name": settings.service_name, "service.version": __version__})
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(exporter, export_timeout_millis=settings.timeout_ms))
    telemetry = Telemetry(provider, _provider[0], settings.timeout_ms)
    _provider[0] = provider
    return telemetry


def export_from_config(data: Mapping[str, Any], *, force: bool = False) -> Telemetry | None:
    """For a command's process: configure export from a merged config (``Config.data``) when it asks for it, or when
    ``force`` (``--otel``) does; the last spans are exported when the process exits.

    Raises:
        UsageError: export is asked for but the ``tether[otel]`` extra is not installed.
    """
    settings = settings_from_config(data, force=force)
    if settings is None:
        return None
    telemetry = configure(settings)
    atexit.register(telemetry.shutdown)
    return telemetry
