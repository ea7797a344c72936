"""The :class:`Model` interface every provider adapter and test double implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator

from ._events import Event
from ._request import ModelRequest
from ._retry import RetryPolicy

__all__ = ["Model"]


class Model(ABC):
    """A model that streams one step's events for a request.

    Implementations normalize their wire format into tether's events (law 8): a ``StepStart`` first, a
    ``StepFinish`` last (or a ``ProviderErrorEvent`` / a raised :class:`~tether.errors.ProviderError`).
    """

    provider: str = "unknown"
    model_id: str = "unknown"
    retry: RetryPolicy | None = None
    """How the runner retries this model's failed steps (its provider's ``retry`` config); ``None``: the session's."""

    @property
    def name(self) -> str:
        """``provider/model`` as users write it."""
        return f"{self.provider}/{self.model_id}"

    @abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream the events of one step.

        Raises:
            ProviderError: the provider failed before or during the stream (mapped at the adapter boundary).
        """
        raise NotImplementedError
