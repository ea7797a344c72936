"""The one decision the runner pays for when tracing is off: whether a turn is traced at all.

:func:`turn_trace` runs once per turn: it is the session runner's ``Observe`` hook, which the runtime installs into
the sessions service (``session`` never imports this package). With no tracer provider of tether's own
(:func:`use_tracer_provider`, :func:`~tether.telemetry.configure`) and no SDK installed as the OpenTelemetry global,
it returns ``None`` without importing OpenTelemetry (a process that never imported ``opentelemetry.trace`` cannot have configured an SDK), and
every later hook of the turn is one ``is None`` test: no span, no attribute built. Only a traced turn imports
:mod:`tether.telemetry._spans`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ..llm import Model
    from ..session import SessionInfo
    from ._spans import TurnTrace

__all__ = ["CONTENT_ENV", "content_enabled", "turn_trace", "use_tracer_provider"]

CONTENT_ENV = "TETHER_OTEL_CONTENT"
"""Set to ``1`` to record content (prompts, model text, tool inputs and outputs) in spans; off by default."""

_provider: list[Any] = [None]
"""tether's own tracer provider (``None``: the OpenTelemetry global one), in a list so it is set without ``global``."""


def content_enabled() -> bool:
    """Whether spans record content (``TETHER_OTEL_CONTENT=1``; read when a turn starts)."""
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@contextmanager
def use_tracer_provider(provider: TracerProvider | None) -> Generator[None]:
    """Trace tether's turns with ``provider`` inside the block (``None``: the OpenTelemetry global provider again).

    The OpenTelemetry global provider can be set once per process; this one is tether's alone and restorable, so an
    application (or a test) can give tether a provider of its own without touching what the rest of the process
    uses. Turns started inside the block keep it to their end.
    """
    previous = _provider[0]
    _provider[0] = provider
    try:
        yield
    finally:
        _provider[0] = previous


def _global_provider() -> Any:
    otel = sys.modules.get("opentelemetry.trace")
    if otel is None:
        return None  # nothing imported the API, so nothing configured an SDK (see the module docstring)
    provider = otel.get_tracer_provider()
    if isinstance(provider, otel.ProxyTracerProvider | otel.NoOpTracerProvider):
        return None
    return provider


def turn_trace(info: SessionInfo, model: Model) -> TurnTrace | None:
    """The trace of a turn of ``info``'s session with ``model``, or ``None`` when tracing is off."""
    provider = _provider[0] or _global_provider()
    if provider is None:
        return None
    from ._spans import TurnTrace

    return TurnTrace(provider, info, model, content=content_enabled())
