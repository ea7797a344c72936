"""The stream skeleton every SDK-backed adapter shares.

A step is: build the wire body from the :class:`ModelRequest` (pure), open the SDK stream (errors here are raised,
mapped), then feed each SDK event to a synchronous assembler that returns tether events. Once ``StepStart`` has
been yielded, a failure is reported as a :class:`ProviderErrorEvent` carrying the mapped error and the stream ends;
tool calls whose input was still streaming are never reported complete, so they never run.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

import anyio
import anyio.to_thread

from ...errors import ProviderConnectionError, ProviderError
from .._events import Event, ProviderErrorEvent, StepStart
from .._model import Model
from .._request import ModelRequest

if TYPE_CHECKING:
    from ._clients import Loaded

__all__ = ["Assembler", "ClientSettings", "ModelLimits", "SDKModel", "stream_ended_early"]


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
    def build_body(self, request: ModelRequest) -> tuple[bytes, Assembler]:
        """The wire body for ``request`` (JSON bytes) and a fresh assembler for its stream."""

    path: ClassVar[str]
    """The endpoint, relative to the client's base URL."""
    bearer_auth: ClassVar[bool] = False
    """Whether the endpoint takes the client's bearer auth (the OpenAI SDK asks for it per request)."""

    async def _open(self, loaded: Loaded, body: bytes) -> Any:
        """Send the request; return the SDK's async stream.

        The SDK's low-level ``post``: its retries, timeouts, typed errors and SSE parsing, without ``create``'s
        deep transform of the whole history on every step (the body is already the wire JSON).
        """
        options: dict[str, Any] = {"headers": {"Content-Type": "application/json"}}
        if self.bearer_auth:
            options["security"] = {"bearer_auth": True}
        return await loaded.client.post(
            self.path,
            cast_to=object,
            content=body,
            options=options,
            stream=True,
            stream_cls=loaded.stream_cls,
        )

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
