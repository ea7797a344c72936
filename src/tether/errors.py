"""The exception tree of tether.

Every exception tether raises on purpose derives from :class:`TetherError`. The tree is split by audience::

    TetherError
    ├── UsageError                  the embedding developer misused an API
    │   └── RegistrationError       an invalid tool name, namespace or tool value at registration
    ├── ConfigError                 a configuration file is broken (file, line, key path)
    ├── NotFoundError               an id (session, permission request, ...) does not exist
    ├── ToolFailure                 the only expected, model-visible tool failure
    ├── PathError                   a path cannot be resolved safely (reason: location_escape, ...)
    ├── PermissionOutcome           a permission request did not end in "allow"
    │   ├── BlockedError            a configured rule denies the request (carries the rules)
    │   ├── DeclinedError           the user rejected without feedback: stop the loop
    │   └── CorrectedError          the user rejected with feedback for the model
    ├── ProviderError               a model provider failed (mapped at the adapter boundary)
    │   ├── ProviderAuthError
    │   ├── ProviderRateLimitError  carries retry_after (seconds) when the server said
    │   ├── ContextOverflowError
    │   ├── ProviderBadRequestError
    │   ├── ProviderNotFoundError
    │   ├── ProviderServerError
    │   ├── ProviderMalformedError  the response is not the API's format (bytes, JSON, shape, nesting, HTML)
    │   └── ProviderConnectionError the connection failed, or the stream ended before a finish
    │       └── ProviderTimeoutError  a deadline passed (deadline: connect | first_event | idle; seconds)
    ├── StoreError                  the session store failed
    └── OutputStoreError            retaining a full tool output failed (message: "Failed to write tool output: ...")

Messages that the model reads (``ToolFailure`` and the permission outcomes) are written for the model: what was wrong
and how to call again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BlockedError",
    "ConfigError",
    "ContextOverflowError",
    "CorrectedError",
    "DeclinedError",
    "NotFoundError",
    "OutputStoreError",
    "PathError",
    "PermissionOutcome",
    "ProviderAuthError",
    "ProviderBadRequestError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderMalformedError",
    "ProviderNotFoundError",
    "ProviderRateLimitError",
    "ProviderServerError",
    "ProviderTimeoutError",
    "RegistrationError",
    "StoreError",
    "TetherError",
    "ToolFailure",
    "UsageError",
]


class TetherError(Exception):
    """Root of every error tether raises on purpose."""

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else type(self).__name__


class UsageError(TetherError):
    """An API was used in a way it does not support (a bug in the embedding code)."""


class RegistrationError(UsageError):
    """A tool registration was rejected; nothing from that registration was registered."""

    def __init__(self, message: str, *, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


class ConfigError(TetherError):
    """A configuration file is invalid. The message names the file and, where known, the line and key path."""

    def __init__(
        self, message: str, *, file: str | None = None, key: str | None = None, line: int | None = None
    ) -> None:
        where = file or ""
        if line is not None:
            where += f":{line}"
        if key:
            where += f" at {key}" if where else key
        super().__init__(f"{where}: {message}" if where else message)
        self.file = file
        self.key = key
        self.line = line


class NotFoundError(TetherError):
    """An id does not name anything that exists."""


class ToolFailure(TetherError):
    """The only expected, model-visible tool failure.

    Tools raise it for problems the model can fix (a missing file, an ambiguous edit). ``partial`` carries content
    produced before the failure (for example the hunks of a patch that were applied); ``metadata`` is optional UI data.
    """

    def __init__(
        self, message: str, *, partial: Sequence[Any] | None = None, metadata: dict[str, Any] | None = None
    ):
        super().__init__(message)
        self.partial = tuple(partial) if partial else ()
        self.metadata = metadata


class PathError(TetherError):
    """A path cannot be used: ``reason`` is one of ``location_escape``, ``non_directory_ancestor``, ``invalid``."""

    def __init__(self, message: str, *, reason: str, path: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.path = path


class PermissionOutcome(TetherError):
    """Base of the non-allow permission outcomes."""


class BlockedError(PermissionOutcome):
    """A configured rule denies the request.

    ``rules`` are the rules whose action matched the request; ``decision`` is the permission decision (with the
    deciding rule per resource) so the session can record why the call was denied.
    """

    def __init__(
        self,
        message: str,
        *,
        action: str,
        resources: Sequence[str],
        rules: Sequence[Any] = (),
        decision: Any = None,
    ) -> None:
        super().__init__(message)
        self.action = action
        self.resources = tuple(resources)
        self.rules = tuple(rules)
        self.decision = decision


class DeclinedError(PermissionOutcome):
    """The user rejected a request without feedback. The session runner stops the loop after the step."""


class CorrectedError(PermissionOutcome):
    """The user rejected a request and told the model what to do instead (``feedback``)."""

    def __init__(self, feedback: str) -> None:
        super().__init__(f"The user rejected this tool call with feedback: {feedback}")
        self.feedback = feedback


class ProviderError(TetherError):
    """A model provider failed. ``retryable`` says whether the runner may retry the step.

    ``retry_after`` is the wait in seconds the server asked for (``Retry-After`` / ``retry-after-ms``) with any
    retryable answer (a 429, a 503 during maintenance, ...), else ``None``.
    """

    retryable: bool = False

    def __init__(
        self, message: str, *, status: int | None = None, body: Any = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.retry_after = retry_after


class ProviderAuthError(ProviderError):
    """The credentials were missing or rejected (HTTP 401/403)."""


class ProviderRateLimitError(ProviderError):
    """Too many requests or an overloaded server (HTTP 429/529). ``retry_after`` is in seconds when known."""

    retryable = True


class ContextOverflowError(ProviderError):
    """The request does not fit the model's context window."""


class ProviderBadRequestError(ProviderError):
    """The provider rejected the request as malformed (HTTP 400/422)."""


class ProviderNotFoundError(ProviderError):
    """The model or endpoint does not exist (HTTP 404)."""


class ProviderServerError(ProviderError):
    """The provider failed on its side (HTTP 5xx)."""

    retryable = True


class ProviderMalformedError(ProviderError):
    """The provider answered with something that is not its API's format.

    Bytes that are not UTF-8, a ``data:`` line that is not JSON, an event missing a field it must have (``choices:
    null``), tool arguments nested deeper than a parser should follow, an HTML page with HTTP 200. Retrying the same
    request rarely helps, so it is not retryable; the message names the provider, the URL and what was wrong.
    """


class ProviderConnectionError(ProviderError):
    """The connection failed, timed out or was reset mid-stream, or the stream ended before the model finished."""

    retryable = True


class ProviderTimeoutError(ProviderConnectionError):
    """A deadline passed: ``deadline`` is ``connect``, ``first_event`` or ``idle``; ``seconds`` is how long it was."""

    def __init__(self, message: str, *, deadline: str, seconds: float) -> None:
        super().__init__(message)
        self.deadline = deadline
        self.seconds = seconds


class StoreError(TetherError):
    """The session store failed to read or write."""


class OutputStoreError(TetherError):
    """Retaining a full tool output failed. The call fails operationally; it is never a lossy success."""
