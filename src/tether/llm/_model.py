"""The :class:`Model` interface every provider adapter and test double implements."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable

import anyio

from ._events import Event
from ._request import ModelRequest
from ._retry import RetryPolicy

__all__ = ["Model", "close_models"]

log = logging.getLogger("tether.llm")


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

    async def aclose(self) -> None:  # noqa: B027 (a hook with a default, not an abstract method)
        """Release what the model holds (an SDK client's connections). The default holds nothing."""

    @abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Stream the events of one step.

        Raises:
            ProviderError: the provider failed before or during the stream (mapped at the adapter boundary).
        """
        raise NotImplementedError


async def close_models(models: Iterable[Model]) -> None:
    """Close each of ``models`` (shielded from cancellation); one that fails to close is logged and the rest close."""
    with anyio.CancelScope(shield=True):
        for model in models:
            try:
                await model.aclose()
            except Exception as exc:  # closing is best effort: the caller's own outcome stands
                log.warning("closing model %s failed: %s", model.name, exc)
