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
from typing import TYPE_CHECKING, Any, Protocol, Self

import anyio
import anyio.to_thread

from ...errors import ProviderConnectionError, ProviderError
from .._events import Event, ProviderErrorEvent, StepStart
from .._model import Model
from .._request import ModelRequest

if TYPE_CHECKING:
    from ._clients import Loaded

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
    """A :class:`Model` over a provider SDK: subclasses load the SDK, build the body, open the stream.

    The SDK is imported and the client built in a worker thread on the first stream (law 9: importing ``openai``
    takes a few hundred milliseconds of CPU), never when tether is imported and never on the event loop.
    """

    def __init__(self, model_id: str, *, provider: str, settings: ClientSettings, client: Any = None) -> None:
        self.model_id = model_id
        self.provider = provider
        self.settings = settings
        self._given_client = client
        self._loaded: Loaded | None = None
        self._loading = anyio.Lock()
        self.limits = ModelLimits()

    @property
    def client(self) -> Any:
        """The SDK client (built on first use; this blocks while the SDK is imported, so prefer streaming)."""
        if self._loaded is None:
            self._loaded = self._load()
        return self._loaded.client

    @abstractmethod
    def _load(self) -> Loaded:
        """Import the SDK and build the client (or adopt the given one). Blocking: runs in a worker thread."""

    async def _ready(self) -> Loaded:
        loaded = self._loaded
        if loaded is None:
            async with self._loading:
                loaded = self._loaded
                if loaded is None:
                    loaded = self._loaded = await anyio.to_thread.run_sync(self._load)
        return loaded

    async def aclose(self) -> None:
        """Close the SDK client's connections (only a client this model built; a given client is the caller's)."""
        loaded, self._loaded = self._loaded, None
        if loaded is not None and self._given_client is None:
            await loaded.client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @abstractmethod
    def build_body(self, request: ModelRequest) -> tuple[Any, Assembler]:
        """The wire body for ``request`` and a fresh assembler for its stream."""

    @abstractmethod
    async def _open(self, loaded: Loaded, body: Any) -> Any:
        """Send the request; return the SDK's async stream."""

    @abstractmethod
    def _map_error(self, exc: BaseException) -> ProviderError:
        """Map one of the SDK's exceptions (:attr:`Loaded.errors`) to the ProviderError subtree."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        loaded = await self._ready()
        body, assembler = self.build_body(request)
        errors = loaded.errors
        try:
            sdk_stream = await self._open(loaded, body)
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
