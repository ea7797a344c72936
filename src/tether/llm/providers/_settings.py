"""How to reach a provider (:class:`ClientSettings`) and the deadlines of one request (:class:`Timeouts`).

The records the adapters' skeleton (``_base``) and the HTTP clients (``_clients``) both read; here, below both, so
that neither imports the other for them (``_base`` names ``_clients.Loaded``, ``_clients`` never imports ``_base``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from ..._record import record
from .._retry import RetryPolicy

__all__ = ["ClientSettings", "Timeouts"]


@record
class Timeouts:
    """Deadlines of one request, in seconds (a provider's ``timeouts`` config).

    ``connect``: to open the connection. ``first_event``: from sending the request to its first stream event (long
    enough for reasoning models). ``idle``: between two stream events; keep-alive comments do not reset it.
    """

    connect: float = 10.0
    first_event: float = 300.0
    idle: float = 120.0


@record
class ClientSettings:
    """How to reach a provider: everything the SDK client is built from, its deadlines and its retry policy."""

    base_url: str | None = None
    api_key: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    timeouts: Timeouts = field(default_factory=Timeouts)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
