"""Durable turns on Temporal (``pip install 'tether[temporal]'``; docs/temporal.md).

A turn runs as the ``tether.turn`` workflow; each model request and each tool call is an activity on a worker that
has an open :class:`~tether.Runtime`, and the activities write the session store as the in-process runner does.
"""

from ._client import DEFAULT_TASK_QUEUE, TemporalRunner, TurnHandle, TurnUnreadable, connect, submit_turn
from ._types import AskInfo, TurnEvent
from ._worker import run_worker, worker
from ._workflow import TurnWorkflow

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "AskInfo",
    "TemporalRunner",
    "TurnEvent",
    "TurnHandle",
    "TurnUnreadable",
    "TurnWorkflow",
    "connect",
    "run_worker",
    "submit_turn",
    "worker",
]
