"""The :class:`Model` interface every provider adapter and test double implements."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import Self

import anyio

from ._events import Event
from ._request import ModelRequest
from ._retry import RetryPolicy

__all__ = ["MAX_KEPT", "Model", "ModelCache"]

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


class ModelCache:
    """Models built once per name and closed together: the runtime's (``provider/model`` specs) and a CLI command's.

    A provider model holds an SDK client: its connection pool, and a CA bundle loaded when it is built (~45 ms of
    CPU), so the turns naming one model share it. At most :data:`MAX_KEPT` are kept: a name past them (a server's
    client cycling model names) is built for its turn and left to the collector, as every model was before, so what a
    caller sends cannot grow the cache. ``keep`` says which models to keep at all (a script plays from its first step
    for each turn, so the CLI's offline models are built anew each time).
    """

    def __init__(
        self, build: Callable[[str | None], Model], *, keep: Callable[[Model], bool] | None = None
    ) -> None:
        self._build = build
        self._keep = keep
        self._kept: dict[str | None, Model] = {}

    def get(self, name: str | None) -> Model:
        """The model for ``name``: the one kept, else built (raises what ``build`` raises; nothing is kept then)."""
        found = self._kept.get(name)
        if found is None:
            found = self._build(name)
            if len(self._kept) < MAX_KEPT and (self._keep is None or self._keep(found)):
                self._kept[name] = found
        return found

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every model kept (shielded from cancellation); one that fails to close is logged, the rest close."""
        kept, self._kept = self._kept, {}
        with anyio.CancelScope(shield=True):
            for model in kept.values():
                try:
                    await model.aclose()
                except Exception as exc:  # closing is best effort: the caller's own outcome stands
                    log.warning("closing model %s failed: %s", model.name, exc)


MAX_KEPT = 64
"""How many models one :class:`ModelCache` keeps (distinct names; a deployment uses a handful)."""
