"""The skeleton every adapter shares: request → body → HTTP stream → normalized events.

A step is: build the wire body from the :class:`ModelRequest` (the adapter converts messages, tools and tool
choice; the request options are applied here, once for every adapter, and an option the API does not take is a
:class:`UsageError`), send it on the model's HTTP client (``_clients``: one keep-alive connection reused from step to
step; an HTTP error status is raised as the mapped :class:`ProviderError`), decode the event stream (``_sse``) and
feed each event's JSON to a synchronous assembler that returns tether events. Once ``StepStart`` has been yielded, a
failure is reported as a :class:`ProviderErrorEvent` carrying the mapped error and the stream ends; tool calls whose
input was still streaming are never reported complete, so they never run.

Every error names the provider and the URL. What cannot be decoded (bytes that are not UTF-8, a ``data:`` line that
is not JSON or is nested too deeply), an event the assembler cannot read (``choices: null``, a missing field) and an
HTML page with HTTP 200 become :class:`ProviderMalformedError`; an error the stream reports (an OpenAI ``error``
member, an Anthropic ``error`` event) is mapped by its code; the deadlines of :class:`Timeouts` become
:class:`ProviderTimeoutError` (``_deadlines``). Nothing here retries: the session runner is the one retry layer.
"""

from __future__ import annotations

import json
import os
from abc import abstractmethod
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, Self

import anyio
import anyio.to_thread

from ..._record import record
from ...errors import (
    ProviderBadRequestError,
    ProviderConnectionError,
    ProviderError,
    ProviderMalformedError,
    ProviderTimeoutError,
    UsageError,
)
from .._events import Event, ProviderErrorEvent, StepStart
from .._model import Model
from .._request import ModelRequest, RequestOptions
from ._common import CallIds, MalformedEvent, ToolNames, dumps
from ._errors import StatusAnswer, error_from_status, stream_error
from ._settings import ClientSettings, Timeouts
from ._sse import SSEDecoder

if TYPE_CHECKING:
    from ._clients import Loaded

__all__ = [
    "Assembler",
    "ClientSettings",
    "HTTPModel",
    "MalformedEvent",
    "ModelLimits",
    "Timeouts",
    "stream_ended_early",
]


@record
class ModelLimits:
    """A model's context window and output limit in tokens (``None`` when unknown)."""

    context: int | None = None
    output: int | None = None


class Assembler(Protocol):
    def feed(self, item: Any) -> list[Event]: ...

    def finish(self) -> list[Event]: ...


_EARLY_END = "the stream ended before the model finished its response (no finish event)"


def stream_ended_early() -> ProviderErrorEvent:
    error = ProviderConnectionError(_EARLY_END)
    return ProviderErrorEvent(message=error.message, error=error)


def _malformed(exc: BaseException) -> str:
    """What was wrong, for an exception raised while the stream was decoded."""
    if isinstance(exc, UnicodeDecodeError):
        bad = exc.object[exc.start : exc.start + 4]
        return f"the stream is not UTF-8 text ({exc.reason}: {bytes(bad)!r})"
    if isinstance(exc, RecursionError):
        return "a data line is nested too deeply to parse"
    doc = getattr(exc, "doc", None)
    if isinstance(doc, str):  # json.JSONDecodeError
        return f"a data line is not JSON ({getattr(exc, 'msg', exc)}): {doc[:120]!r}"
    return f"the stream could not be decoded ({type(exc).__name__}: {exc})"


def _unreadable(exc: BaseException) -> str:
    if isinstance(exc, MalformedEvent):
        return str(exc)
    return f"an event does not have the API's shape ({type(exc).__name__}: {exc})"


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc`` and the exceptions under it (cause, else context), at most 8."""
    for _ in range(8):
        if exc is None:
            return
        yield exc
        exc = exc.__cause__ or exc.__context__


def _root_cause(exc: BaseException) -> str:
    """What the innermost cause says: an ``OSError``'s errno text (``Connection refused``), else the last message."""
    text = ""
    for current in _chain(exc.__cause__):
        if isinstance(current, OSError) and current.errno:
            return os.strerror(current.errno)
        text = str(current) or text
    return text


def _is_connect_timeout(exc: BaseException) -> bool:
    return any(type(e).__name__ == "ConnectTimeout" for e in _chain(exc))


def _own_error(exc: BaseException) -> ProviderError | None:
    """A ProviderError of the watched stream (a deadline), raised as is or under a transport error."""
    return next((e for e in _chain(exc) if isinstance(e, ProviderError)), None)


_SKIP: Any = object()
_DONE: Any = object()


def _status_error(response: Any) -> ProviderError:
    """The mapped error of an HTTP error answer (its body read)."""
    status = response.status_code
    text = response.text.strip()
    body: Any = text or None
    try:
        body = json.loads(text)
        message = f"Error code: {status} - {body}"
    except ValueError:
        message = text or f"Error code: {status}"
    error = error_from_status(status, message, body=body, headers=response.headers)
    error.__cause__ = StatusAnswer(status, message)
    return error


class HTTPModel(Model):
    """A :class:`Model` over a provider's HTTP API: subclasses build the body and read the stream's events.

    The HTTP client is built in a worker thread on the first stream (law 9: it loads the CA bundle), never when
    tether is imported and never on the event loop; it lives as long as the model, so its keep-alive connection
    serves every step.
    """

    def __init__(self, model_id: str, *, provider: str, settings: ClientSettings, client: Any = None) -> None:
        self.model_id = model_id
        self.provider = provider
        self.settings = settings
        self.retry = settings.retry
        self._given_client = client
        self._loaded: Loaded | None = None
        self._loading = anyio.Lock()
        self.limits = ModelLimits()

    @property
    def client(self) -> Any:
        """The ``httpx2.AsyncClient`` (built on first use; this blocks while it loads the CA bundle, so prefer
        streaming)."""
        if self._loaded is None:
            self._loaded = self._load()
        return self._loaded.client

    @abstractmethod
    def _load(self) -> Loaded:
        """Build the HTTP client (or adopt the given one). Blocking: runs in a worker thread."""

    async def _ready(self) -> Loaded:
        loaded = self._loaded
        if loaded is None:
            async with self._loading:
                loaded = self._loaded
                if loaded is None:
                    loaded = self._loaded = await anyio.to_thread.run_sync(self._load)
        return loaded

    async def aclose(self) -> None:
        """Close the HTTP client's connections (only a client this model built; a given client is the caller's)."""
        loaded, self._loaded = self._loaded, None
        if loaded is not None and self._given_client is None:
            await loaded.client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    api: ClassVar[str]
    """The API's name, as errors show it (``Chat Completions``)."""
    takes_options: ClassVar[Mapping[str, str]]
    """The request options this API takes, each with the body field it is sent as (``_wire_option`` shapes others)."""

    def build_body(self, request: ModelRequest) -> tuple[bytes, Assembler]:
        """The wire body for ``request`` (JSON bytes) and a fresh assembler for its stream.

        Raises:
            UsageError: a request option this API does not take.
        """
        names = ToolNames(request.tools)
        body = self._body(request, names)
        self._apply_options(body, request.options)
        return dumps(body), self._assembler(CallIds.from_history(request.messages), names)

    @abstractmethod
    def _body(self, request: ModelRequest, names: ToolNames) -> dict[str, Any]:
        """The wire body for ``request`` without its options (system, messages, tools, tool choice)."""

    @abstractmethod
    def _assembler(self, ids: CallIds, names: ToolNames) -> Assembler:
        """A fresh assembler for one stream (``ids``: the call ids the history already uses)."""

    def _wire_option(self, key: str, value: Any) -> Mapping[str, Any]:
        """The body members for one request option this API takes (as is, under its field name by default)."""
        return {self.takes_options[key]: value}

    def _apply_options(self, body: dict[str, Any], options: RequestOptions) -> None:
        for key, value in options.items():
            if key == "extra_body":
                continue
            if key not in self.takes_options:
                taken = ", ".join(sorted({*self.takes_options, "extra_body"}))
                raise UsageError(
                    f"{self.name} ({self.api}) does not take the request option {key!r}; it takes: {taken}"
                )
            body.update(self._wire_option(key, value))
        body.update(options.get("extra_body") or {})  # the escape hatch: members as given, last

    path: ClassVar[str]
    """The endpoint, relative to the API's root URL."""
    dialect: ClassVar[Literal["openai", "anthropic"]] = "openai"
    """How the stream ends and reports an error: OpenAI's ``[DONE]`` and ``error`` member, or Anthropic's ``error``
    and ``ping`` events."""

    async def _open(self, loaded: Loaded, body: bytes) -> Any:
        """Send the request (the body is already the wire JSON); return the streaming response.

        Raises:
            ProviderError: the server answered an HTTP error status (its body read and mapped).
        """
        client = loaded.client
        if loaded.target is not None:  # the local HTTP/1.1 client
            response = await client.post(loaded.target + self.path, loaded.headers, body)
        else:
            request = client.build_request("POST", self.url(loaded), content=body, headers=loaded.headers)
            response = await client.send(request, stream=True)
        if 300 <= response.status_code < 400 and loaded.target is not None:
            location = response.headers.get("location", "")
            await response.aclose()
            raise ProviderBadRequestError(
                f"the server redirected the request (HTTP {response.status_code}) to {location!r}: set base_url "
                "to the API root it names",
                status=response.status_code,
            )
        if response.status_code >= 400:
            try:
                await response.aread()
            finally:
                await response.aclose()
            raise _status_error(response)
        return response

    def _item(self, event: str | None, data: str, response: Any) -> Any:
        """One event's JSON, or ``_SKIP`` (a ping, an unnamed Anthropic event) or ``_DONE`` (OpenAI's last).

        Raises:
            ProviderError: the event reports an error.
            ValueError: the data is not JSON (``RecursionError``: nested too deeply).
        """
        if self.dialect == "openai":
            if data.startswith("[DONE]"):
                return _DONE
            value = json.loads(data)
            if isinstance(value, dict) and value.get("error"):  # pyright: ignore[reportUnknownMemberType]
                raise stream_error(value["error"])
            return value
        if event == "ping" or event is None:
            return _SKIP
        if event == "error":
            body: Any = data
            try:
                body = json.loads(data)
                message = f"{body}"
            except ValueError:
                message = data or f"Error code: {response.status_code}"
            raise error_from_status(response.status_code, message, body=body, headers=response.headers)
        if not data:
            return _SKIP
        return json.loads(data)

    @abstractmethod
    def _map_error(self, exc: BaseException) -> ProviderError:
        """Map one of the transport's exceptions (:attr:`Loaded.errors`) to the ProviderError subtree."""

    def url(self, loaded: Loaded) -> str:
        """The endpoint's full URL (named in every error)."""
        return loaded.base_url.rstrip("/") + self.path

    def _located(self, error: ProviderError, url: str) -> ProviderError:
        """``error`` with its message prefixed by the provider and the URL."""
        error.args = (f"{self.provider} ({url}): {error.message}", *error.args[1:])
        return error

    def _mapped(self, exc: BaseException) -> ProviderError:
        """The ProviderError for an SDK (or transport) exception, before it is located."""
        own = _own_error(exc)
        if own is not None:  # a deadline of the watched stream
            return own
        error = self._map_error(exc)
        if isinstance(error, ProviderConnectionError) and error.status is None:
            if _is_connect_timeout(exc):
                seconds = self.settings.timeouts.connect
                error = ProviderTimeoutError(
                    f"could not connect within {seconds:g} s (timeouts.connect)",
                    deadline="connect",
                    seconds=seconds,
                )
            elif (cause := _root_cause(exc)) and cause not in error.message:
                error = type(error)(f"{error.message} ({cause})", body=error.body)
        error.__cause__ = exc
        return error

    async def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        from ._deadlines import StreamClock, watch

        loaded = await self._ready()
        body, assembler = self.build_body(request)
        errors = loaded.errors
        url = self.url(loaded)
        timeouts = self.settings.timeouts
        clock = StreamClock(
            first_deadline=anyio.current_time() + timeouts.first_event,
            first_event=timeouts.first_event,
            idle=timeouts.idle,
        )
        response: Any = None
        with anyio.CancelScope(deadline=clock.first_deadline) as scope:
            try:
                response = await self._open(loaded, body)
            except errors as exc:
                raise self._located(self._mapped(exc), url) from exc
            except ProviderError as exc:  # an HTTP error status
                raise self._located(exc, url) from exc.__cause__
        if response is None or scope.cancelled_caught:
            if response is not None:  # it opened just as the deadline passed
                await response.aclose()
            raise self._located(
                ProviderTimeoutError(
                    f"no response within {timeouts.first_event:g} s of the request (timeouts.first_event)",
                    deadline="first_event",
                    seconds=timeouts.first_event,
                ),
                url,
            )
        try:
            kind = str(response.headers.get("content-type", "")).lower()
            if kind.startswith("text/html"):
                raise self._located(
                    ProviderMalformedError(
                        f"the server answered HTTP {response.status_code} with an HTML page "
                        f"(Content-Type: {kind}), not an event stream; is base_url the API's root?"
                    ),
                    url,
                )
            watch(response, clock)
            yield StepStart()
            failure: ProviderError | None = None
            decoder = SSEDecoder()
            done = False
            try:
                chunks = response.aiter_bytes()
                while not done:
                    chunk = await anext(chunks, None)
                    pairs = decoder.feed(chunk) if chunk is not None else decoder.finish()
                    for name, data in pairs:
                        item = self._item(name, data, response)
                        if item is _SKIP:
                            continue
                        if item is _DONE:
                            done = True  # the rest of the body is drained below: the connection is kept alive
                            break
                        try:
                            events = assembler.feed(item)
                        except (
                            MalformedEvent,
                            AttributeError,
                            TypeError,
                            KeyError,
                            IndexError,
                            ValueError,
                        ) as exc:
                            failure = ProviderMalformedError(_unreadable(exc))
                            failure.__cause__ = exc
                            break
                        if events or not clock.events:
                            # The stream's first event, then only events that carry something, reset the idle
                            # deadline: a server that drips empty chunks ({"choices": []}, an empty delta, pings)
                            # is as stuck as one that sends keep-alive comments.
                            clock.events += 1
                        for event in events:
                            yield event
                    if failure is not None or chunk is None:
                        break
                if done:
                    async for _ in chunks:
                        pass
            except ProviderError as exc:  # an error the stream reported, or a deadline
                failure = exc
            except errors as exc:
                failure = self._mapped(exc)
            except (ValueError, RecursionError) as exc:  # decoding: UTF-8, JSON, nesting
                failure = ProviderMalformedError(_malformed(exc))
                failure.__cause__ = exc
            ending: list[Event] = []
            if failure is None:
                try:
                    ending = assembler.finish()
                except MalformedEvent as exc:
                    failure = ProviderMalformedError(str(exc))
                    failure.__cause__ = exc
            if failure is not None:
                failure = self._located(failure, url)
                yield ProviderErrorEvent(message=failure.message, error=failure)
                return
            for event in ending:
                if isinstance(event, ProviderErrorEvent) and isinstance(event.error, ProviderError):
                    if event.message == _EARLY_END:
                        error = self._located(event.error, url)
                        event = ProviderErrorEvent(message=error.message, error=error)
                yield event
        finally:
            await response.aclose()
