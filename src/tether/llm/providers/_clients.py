"""The HTTP client of each model (keep-alive connections reused from step to step), the API's root URL and the
headers every request carries. No provider SDK is imported.

A plain ``http://`` root with no proxy variable set (a server on this machine or the local network) is served by
``_http11.LocalClient``, a small HTTP/1.1 client made for this one request shape (~0.6 ms of CPU less per step than
httpx, and httpx is never imported); ``https://``, a proxy from the environment (``HTTP_PROXY``, ``ALL_PROXY``, ...)
or a ``client=`` given by the caller go through ``httpx2`` (TLS, proxies, the caller's transport).

tether builds every request body itself and reads the event stream as JSON (``_sse``), so what the ``openai`` and
``anthropic`` SDKs added on top of httpx was a client per provider, a base URL, the auth headers, typed status
errors and an SSE decoder: a few hundred milliseconds of CPU to import (``openai`` ~0.4 s, ``anthropic`` ~0.9 s on
a busy 2-core machine) and ~0.8 ms per request of wrappers (issue 38). Here are the parts tether used, as the SDKs
have them: the root from the entry's ``base_url``, else ``$OPENAI_BASE_URL`` / ``$ANTHROPIC_BASE_URL``, else the
public API; ``Authorization: Bearer`` (OpenAI, with ``OpenAI-Organization`` / ``OpenAI-Project`` from
``$OPENAI_ORG_ID`` / ``$OPENAI_PROJECT_ID``) or ``x-api-key`` and ``anthropic-version`` (Anthropic); redirects
followed; only the connect deadline on the client (reads are bounded by ``_deadlines``); no retries (the session
runner is the one retry layer). The entry's ``headers`` come last and win. A provider with no key (a local server)
gets no auth header at all.

Building an httpx client loads the CA bundle (~40 ms of CPU): :func:`load_openai` / :func:`load_anthropic` run in a
worker thread (law 9), on the first stream.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..._record import record
from ..._version import __version__
from ._settings import ClientSettings

__all__ = ["ANTHROPIC_VERSION", "Loaded", "load_anthropic", "load_openai"]

OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
"""The Messages API version every request names (the one the anthropic SDK sends)."""
_USER_AGENT = f"tether/{__version__}"


@record
class Loaded:
    """What an adapter sends its requests with: the client, the API root and the headers of every request."""

    client: Any  # a LocalClient, or an httpx2.AsyncClient (imported in the worker thread)
    base_url: str
    headers: Mapping[str, str]
    errors: tuple[type[BaseException], ...]
    """The transport's exceptions the adapter maps (``HTTPFailure``; ``httpx2.HTTPError``, ``httpx2.StreamError``)."""
    target: str | None = None
    """With a ``LocalClient``: the root's path, which the endpoint's path is appended to."""


_PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")


def _local(base_url: str, settings: ClientSettings) -> tuple[Any, str] | None:
    """The local client and the root's path for a plain ``http://`` root when no proxy variable is set."""
    from ._http11 import LocalClient

    try:
        parts = urlsplit(base_url)
        port = parts.port or 80
    except ValueError:
        return None  # httpx reports what is wrong with the URL
    if parts.scheme != "http" or not parts.hostname or "@" in parts.netloc:
        return None
    if any(os.environ.get(name) for name in _PROXY_VARIABLES):
        return None
    client = LocalClient(parts.hostname, port, connect_timeout=settings.timeouts.connect)
    return client, parts.path.rstrip("/")


def _loaded(base_url: str, auth: Mapping[str, str], settings: ClientSettings, client: Any) -> Loaded:
    headers = _headers(auth, settings)
    if client is None and (local := _local(base_url, settings)) is not None:
        from ._http11 import HTTPFailure

        built, target = local
        return Loaded(client=built, base_url=base_url, headers=headers, errors=(HTTPFailure,), target=target)
    built, errors = _client(settings, client)
    return Loaded(client=built, base_url=base_url, headers=headers, errors=errors)


def _client(settings: ClientSettings, client: Any) -> tuple[Any, tuple[type[BaseException], ...]]:
    import httpx2

    if client is None:
        client = httpx2.AsyncClient(
            # Only the connect deadline: a read is bounded by the stream's deadlines (``_deadlines``).
            timeout=httpx2.Timeout(None, connect=settings.timeouts.connect),
            follow_redirects=True,
        )
    return client, (httpx2.HTTPError, httpx2.StreamError)


def _headers(base: Mapping[str, str], settings: ClientSettings) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": _USER_AGENT}
    headers.update(base)
    headers.update(settings.headers)  # the entry's own headers win
    return headers


def load_openai(settings: ClientSettings, *, client: Any = None) -> Loaded:
    """The client for an OpenAI API (Chat Completions, Responses, compatible servers). Blocking: run it in a worker
    thread."""
    auth: dict[str, str] = {}
    if settings.api_key:
        auth["Authorization"] = f"Bearer {settings.api_key}"
    for header, variable in (
        ("OpenAI-Organization", "OPENAI_ORG_ID"),
        ("OpenAI-Project", "OPENAI_PROJECT_ID"),
    ):
        if value := os.environ.get(variable):
            auth[header] = value
    base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
    return _loaded(base_url, auth, settings, client)


def load_anthropic(settings: ClientSettings, *, client: Any = None) -> Loaded:
    """The client for Anthropic's Messages API. Blocking: run it in a worker thread."""
    auth = {"anthropic-version": ANTHROPIC_VERSION}
    if settings.api_key:
        auth["x-api-key"] = settings.api_key
    base_url = settings.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_URL
    return _loaded(base_url, auth, settings, client)
