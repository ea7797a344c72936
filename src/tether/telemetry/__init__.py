"""Observability: OpenTelemetry traces of every turn, step and tool call, and structured logs.

Traces follow the OpenTelemetry GenAI semantic conventions (``invoke_agent`` → ``chat`` → ``execute_tool``, see
docs/telemetry.md). tether depends on ``opentelemetry-api`` only: with no SDK configured a turn costs one check and
nothing is recorded. An application that configures the SDK as the OpenTelemetry global gets tether's spans in its
traces; :func:`configure` (the ``tether[otel]`` extra) sets up an OTLP/HTTP exporter for tether alone, as
``tether run --otel`` and the config's ``telemetry`` section do. Content is recorded only with
``TETHER_OTEL_CONTENT=1``.
"""

from __future__ import annotations

from ._export import (
    DEFAULT_TIMEOUT_MS,
    Telemetry,
    TelemetrySettings,
    configure,
    export_from_config,
    settings_from_config,
)
from ._hook import CONTENT_ENV, content_enabled, use_tracer_provider
from ._logs import LOG_FORMATS, JsonFormatter, LogFormat, configure_logging

__all__ = [
    "CONTENT_ENV",
    "DEFAULT_TIMEOUT_MS",
    "LOG_FORMATS",
    "JsonFormatter",
    "LogFormat",
    "Telemetry",
    "TelemetrySettings",
    "configure",
    "configure_logging",
    "content_enabled",
    "export_from_config",
    "settings_from_config",
    "use_tracer_provider",
]
