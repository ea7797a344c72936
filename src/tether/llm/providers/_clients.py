"""Build SDK clients and name the exceptions to map; the only place the SDK packages are imported (lazily)."""

from __future__ import annotations

from functools import cache
from typing import Any

from ._base import ClientSettings

__all__ = ["anthropic_client", "anthropic_errors", "openai_client", "openai_errors"]

# The SDKs refuse to build a client without a key; local servers need none, so they get this placeholder.
NO_KEY = "tether-no-key"


def openai_client(settings: ClientSettings) -> Any:
    import openai

    return openai.AsyncOpenAI(
        api_key=settings.api_key or NO_KEY,
        base_url=settings.base_url,
        default_headers=dict(settings.headers) or None,
        max_retries=settings.max_retries,
        timeout=settings.timeout if settings.timeout is not None else openai.DEFAULT_TIMEOUT,
    )


def anthropic_client(settings: ClientSettings) -> Any:
    import anthropic

    return anthropic.AsyncAnthropic(
        api_key=settings.api_key or NO_KEY,
        base_url=settings.base_url,
        default_headers=dict(settings.headers) or None,
        max_retries=settings.max_retries,
        timeout=settings.timeout if settings.timeout is not None else anthropic.DEFAULT_TIMEOUT,
    )


@cache
def openai_errors() -> tuple[type[BaseException], ...]:
    import httpx2
    import openai

    return (openai.OpenAIError, httpx2.HTTPError, httpx2.StreamError)


@cache
def anthropic_errors() -> tuple[type[BaseException], ...]:
    import anthropic
    import httpx2

    return (anthropic.AnthropicError, httpx2.HTTPError, httpx2.StreamError)
