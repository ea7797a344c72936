"""What tether's own packages use of telemetry: ``turn_trace``, the turn observer the runtime installs into the
sessions service (``Sessions(observe=turn_trace)``: the session runner's hook interface, ``tether.session.internal``'s
``Observe``), and the trace it returns.

``TurnTrace`` is imported on first use only (``__getattr__``): it needs ``opentelemetry``, which an untraced process
never imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._hook import turn_trace

if TYPE_CHECKING:
    from ._spans import TurnTrace

__all__ = ["TurnTrace", "turn_trace"]


def __getattr__(name: str) -> Any:
    if name == "TurnTrace":
        from ._spans import TurnTrace

        return TurnTrace
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
