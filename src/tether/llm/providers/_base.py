"""The stream skeleton every SDK-backed adapter shares.

A step is: build the wire body from the :class:`ModelRequest` (pure), open the SDK stream (errors here are raised,
mapped), then feed each SDK event to a synchronous assembler that returns tether events. Once ``StepStart`` has
been yielded, a failure is reported as a :class:`ProviderErrorEvent` carrying the mapped error and the stream ends;
tool calls whose input was still streaming are never reported complete, so they never run.
"""

from __future__ import annotations

import inspect
from abc import abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

from ...errors import ProviderConnectionError, ProviderError
from .._events import Event, ProviderErrorEvent, StepStart
from .._model import Model
from .._request import ModelRequest

__all__ = ["Assembler", "ClientSettings", "ModelLimits", "SDKModel", "call_create", "stream_ended_early"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientSettings:
    """How to reach a provider: everything the SDK client is built from."""

    base_url: str | None = None
    api_key: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    timeout: float | None = None
    max_retries: int = 2


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelLimits:
    """A model's context window and output limit in tokens (``None`` when unknown)."""

    context: int | None = None
    output: int | None = None


class Assembler(Protocol):
    def feed(self, item: Any) -> list[Event]: ...

    def finish(self) -> list[Event]: ...


_PARAMS: dict[Any, frozenset[str]] = {}


async def call_create(create: Any, body: dict[str, Any]) -> Any:
    """Call an SDK ``create`` with ``body``: keys it names as parameters directly, the rest via ``extra_body``.

    The SDKs' typed signatures lag behind the APIs (and differ between versions); the wire body is ours.
    """
    func = getattr(create, "__func__", create)
    params = _PARAMS.get(func)
    if params is None:
        params = frozenset(inspect.signature(create).parameters) - {
            "extra_body",
            "extra_headers",
            "extra_query",
        }
        _PARAMS[func] = params
    kwargs = {k: v for k, v in body.items() if k in params}
    extra = {k: v for k, v in body.items() if k not in params}
    if extra:
        kwargs["extra_body"] = extra
    return await create(**kwargs)


def stream_ended_early() -> ProviderErrorEvent:
    error = ProviderConnectionError("The provider's stream ended before the model finished its response.")
    return ProviderErrorEvent(message=error.message, error=error)


class SDKModel(Model):
    """A :class:`Model` over a provider SDK: subclasses build the body, open the stream and make the assembler."""

    _client: Any

    def __init__(self, model_id: str, *, provider: str, settings: ClientSettings, client: Any = None) -> None:
        self.model_id = model_id
        self.provider = provider
        self.settings = settings
        self._client = client
        self._owns_client = client is None
        self.limits = ModelLimits()

    @property
    def client(self) -> Any:
        """The SDK client, built on first use (the SDK is imported then, not when tether is imported)."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    @abstractmethod
    def _make_client(self) -> Any: ...

    async def aclose(self) -> None:
        """Close the SDK client's connections (only a client this model built; a given client is the caller's)."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @abstractmethod
    def build_body(self, request: ModelRequest) -> tuple[dict[str, Any], Assembler]:
        """The wire body for ``request`` and a fresh assembler for its stream."""

    @abstractmethod
    async def _open(self, body: dict[str, Any]) -> Any:
        """Send the request; return the SDK's async stream."""

    @abstractmethod
    def _errors(self) -> tuple[type[BaseException], ...]:
        """Exception classes this adapter maps (the SDK's root plus the HTTP client's)."""

    @abstractmethod
    def _map_error(self, exc: BaseException) -> ProviderError:
        """Map one of :meth:`_errors` to the ProviderError subtree."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        body, assembler = self.build_body(request)
        errors = self._errors()
        try:
            sdk_stream = await self._open(body)
        except errors as exc:
            raise self._map_error(exc) from exc
        try:
            yield StepStart()
            try:
                async for item in sdk_stream:
                    for event in assembler.feed(item):
                        yield event
            except errors as exc:
                error = self._map_error(exc)
                error.__cause__ = exc
                yield ProviderErrorEvent(message=error.message, error=error)
                return
            for event in assembler.finish():
                yield event
        finally:
            await sdk_stream.close()
