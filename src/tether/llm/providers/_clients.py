"""Build SDK clients and name the exceptions to map; the only place the SDK packages are imported (lazily).

Importing an SDK costs a few hundred milliseconds of CPU (``openai`` builds every API type at import) and building a
client loads the CA bundle, so :func:`load_openai` / :func:`load_anthropic` are meant to run in a worker thread
(law 9: the adapters call them through ``anyio.to_thread``), never on the event loop.
"""

from __future__ import annotations

from typing import Any

from ..._record import record
from ._base import ClientSettings

__all__ = ["Loaded", "load_anthropic", "load_openai"]

# The SDKs refuse to build a client without a key; local servers need none, so they get this placeholder.
NO_KEY = "tether-no-key"


@record
class Loaded:
    """What an adapter needs from its SDK: the client, the exceptions to map, and the stream class to parse with.

    The stream class is the SDK's ``AsyncStream[object]`` for every adapter: the SDK decodes the server-sent events,
    ends at ``[DONE]``, raises the errors a stream reports, and returns each event's data as parsed JSON (no model is
    built per event; the assemblers read the JSON and check what they read).
    """

    client: Any
    errors: tuple[type[BaseException], ...]
    stream_cls: Any


def _timeout(settings: ClientSettings) -> Any:
    """The HTTP client's timeout: only ``connect``; reads are bounded by the stream deadlines (``_deadlines``)."""
    import httpx2

    return httpx2.Timeout(None, connect=settings.timeouts.connect)


def load_openai(settings: ClientSettings, *, client: Any = None) -> Loaded:
    """Import ``openai`` and build a client (unless ``client`` is given). Blocking: run it in a worker thread."""
    import httpx2
    import openai
    from openai import AsyncStream

    if client is None:
        timeout = _timeout(settings)
        client = openai.AsyncOpenAI(
            api_key=settings.api_key or NO_KEY,
            base_url=settings.base_url,
            default_headers=dict(settings.headers) or None,
            max_retries=0,  # the session runner is the one retry layer
            timeout=timeout,
        )
    return Loaded(
        client=client,
        errors=(openai.OpenAIError, httpx2.HTTPError, httpx2.StreamError),
        stream_cls=AsyncStream[object],
    )


def load_anthropic(settings: ClientSettings, *, client: Any = None) -> Loaded:
    """Import ``anthropic`` and build a client (unless ``client`` is given). Blocking: run it in a worker thread."""
    import anthropic
    import httpx2
    from anthropic import AsyncStream

    if client is None:
        timeout = _timeout(settings)
        client = anthropic.AsyncAnthropic(
            api_key=settings.api_key or NO_KEY,
            base_url=settings.base_url,
            default_headers=dict(settings.headers) or None,
            max_retries=0,  # the session runner is the one retry layer
            timeout=timeout,
        )
    return Loaded(
        client=client,
        errors=(anthropic.AnthropicError, httpx2.HTTPError, httpx2.StreamError),
        stream_cls=AsyncStream[object],
    )
