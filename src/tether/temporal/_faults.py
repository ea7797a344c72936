"""Fault injection: a worker that SIGKILLs itself at a named point of an activity, for crash tests and the chaos bench.

A crash test must land in one exact window (a step's message committed, its activity not yet returned) on every run,
which a kill from outside cannot promise. ``$TETHER_TEMPORAL_FAULT`` names the points at which this worker process
kills itself (``SIGKILL``: no cleanup, no ``finally``, as a power cut or the OOM killer would), comma-separated; a
point may carry a probability (``step-stored@0.1``: one time in ten, for ``bench/chaos.py``). Unset, which is how a
worker runs in production, a point costs one dictionary lookup. The points, in the order a turn meets them:

=================  ==================================================================================================
``begin-stored``   the turn's user message (and a new session) committed, ``begin_turn`` not yet returned
``step-streaming`` a model step's first event written, the stream not finished (the step is asked again)
``step-stored``    a model step's message and parts committed, ``model_step`` not yet returned
``call-started``   a call's part committed ``running``, its tool not yet run
``call-ran``       a call's tool returned, its outcome not yet written
``call-stored``    a call's outcome committed, ``tool_call`` not yet returned
=================  ==================================================================================================

Killing the process is the point: nothing here raises or is caught, so no code path is tested that a real crash
would not take.
"""

from __future__ import annotations

import os
import random
import signal
from typing import Literal

__all__ = ["FAULT_ENV", "POINTS", "Point", "check_faults", "fault"]

FAULT_ENV = "TETHER_TEMPORAL_FAULT"

Point = Literal["begin-stored", "step-streaming", "step-stored", "call-started", "call-ran", "call-stored"]
POINTS: tuple[Point, ...] = (
    "begin-stored",
    "step-streaming",
    "step-stored",
    "call-started",
    "call-ran",
    "call-stored",
)


def fault(point: Point) -> None:
    """Kill this process with ``SIGKILL`` if ``$TETHER_TEMPORAL_FAULT`` names ``point`` (and its chance comes up)."""
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    for item in wanted.split(","):
        name, _, chance = item.strip().partition("@")
        if name == point and (not chance or random.random() < float(chance)):
            os.kill(os.getpid(), signal.SIGKILL)


def check_faults() -> None:
    """Refuse a malformed ``$TETHER_TEMPORAL_FAULT`` when a worker starts, not in the middle of a turn.

    Raises:
        ValueError: a point that does not exist, or a chance that is not a number between 0 and 1.
    """
    wanted = os.environ.get(FAULT_ENV)
    if not wanted:
        return
    for item in wanted.split(","):
        name, _, chance = item.strip().partition("@")
        if name not in POINTS:
            raise ValueError(f"${FAULT_ENV}: no fault point {name!r} (the points: {', '.join(POINTS)})")
        if chance:
            try:
                value = float(chance)
            except ValueError:
                value = -1.0
            if not 0.0 <= value <= 1.0:
                raise ValueError(
                    f"${FAULT_ENV}: the chance of {name!r} is a number from 0 to 1; got {chance!r}"
                )
