"""Connecting to PostgreSQL for the session store: the URL, the connect timeout, errors without the password.

A store URL is a libpq connection URI (``postgresql://user:password@host:port/dbname?...``; ``postgres://`` too).
Opening never hangs on an unreachable server: a ``connect_timeout`` (default :data:`CONNECT_TIMEOUT` seconds) is
added unless the URL names one. Every error and log line made from a URL or from a driver message goes through
:func:`redact`, so the password in the URL never appears in an error, a log or a repr.

This module does not import ``psycopg`` at import time: it is an optional extra (``tether[postgres]``), and the
SQLite default must work without it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import StoreError

if TYPE_CHECKING:
    import psycopg

__all__ = ["CONNECT_TIMEOUT", "connect", "describe", "is_postgres_url", "redact"]

CONNECT_TIMEOUT = 10
"""Seconds libpq waits for a server before opening fails (unless the URL sets ``connect_timeout``)."""

_SCHEMES = ("postgresql://", "postgres://")
# The userinfo ends at the LAST "@" of the URL (libpq's rule, and passwords may hold "@", "/", "?", "#" or ":"),
# so the password runs from the first ":" after the user to that "@". In free text a URL ends at whitespace.
_USERINFO = re.compile(r"(?P<head>postgres(?:ql)?://[^:@/?#\s]*):(?P<password>\S*)@", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&]password=)[^&#\s]*")
# A conninfo string's password: "password=secret" or "password = 'se cret'"; backslash escapes in both forms, and
# an unterminated quote runs to the end (libpq would refuse it, but the text after it is the password).
_CONNINFO_PASSWORD = re.compile(
    r"(?P<head>(?<![\w?&.-])password\s*=\s*)"
    r"(?:'(?P<quoted>(?:\\[\s\S]|[^'\\])*)(?:'|\\?\Z)|(?P<bare>(?:\\[\s\S]|[^\s\\])+\\?))"
)
_ESCAPE = re.compile(r"\\([\s\S])")


def is_postgres_url(value: str) -> bool:
    """Whether ``value`` names a PostgreSQL store (``postgresql://...`` or ``postgres://...``)."""
    return value.startswith(_SCHEMES)


def _url_passwords(url: str) -> list[str]:
    """The passwords of a URL: the userinfo's (by the last-"@" rule and by ``urlsplit``'s) and ``password=``'s."""
    found: list[str] = []
    scheme = url.find("://") + 3
    if "@" in url[scheme:]:
        user, colon, password = url[scheme : url.rindex("@")].partition(":")
        if colon and not re.search(r"[@/?#]", user):
            found.append(password)
    try:
        parts = urlsplit(url)
        found.append(parts.password or "")
        found += [value for key, value in parse_qsl(parts.query, keep_blank_values=True) if key == "password"]
    except ValueError:
        pass
    return found + [unquote(value) for value in found]


def _conninfo_passwords(conninfo: str) -> list[str]:
    """The ``password=`` values of a conninfo string, as written and with their backslash escapes undone."""
    found = [match["quoted"] or match["bare"] or "" for match in _CONNINFO_PASSWORD.finditer(conninfo)]
    return found + [_ESCAPE.sub(r"\1", value) for value in found]


def _passwords(source: str) -> list[str]:
    """Every password ``source`` (a URL or a conninfo string) holds, longest first."""
    found = _url_passwords(source) if is_postgres_url(source) else _conninfo_passwords(source)
    return sorted({value for value in found if value}, key=len, reverse=True)


def redact(text: str, url: str) -> str:
    """``text`` with every password replaced by ``***``.

    The passwords ``url`` (a URL or a ``key=value`` conninfo string) holds are replaced wherever they appear, as
    written and decoded; then any password a PostgreSQL URL or a conninfo string in ``text`` spells (the userinfo up
    to its last "@", a ``password=`` query parameter, a ``password=`` keyword, quoted or not).
    """
    for password in _passwords(url):
        text = text.replace(password, "***")
    text = _USERINFO.sub(r"\g<head>:***@", text)
    text = _QUERY_PASSWORD.sub(r"\g<head>***", text)
    return _CONNINFO_PASSWORD.sub(r"\g<head>***", text)


def describe(url: str) -> str:
    """The URL (or conninfo string) without its password, for errors and logs (``postgresql://user:***@host/db``)."""
    return redact(url, url)


def connect(url: str, *, timeout: int = CONNECT_TIMEOUT, **options: Any) -> psycopg.Connection[Any]:
    """A new autocommit connection to ``url`` (blocking: call it in a worker thread).

    Raises:
        StoreError: ``psycopg`` is not installed, the URL is malformed, or the server cannot be reached or refuses
            the login within the timeout. The message never holds the password.
    """
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            "A postgresql:// store needs the psycopg package: pip install 'tether[postgres]'"
        ) from None
    if "connect_timeout" not in url:
        options.setdefault("connect_timeout", timeout)
    try:
        return psycopg.connect(url, autocommit=True, **options)
    except (psycopg.Error, ValueError) as exc:
        message = redact(str(exc).strip(), url) or type(exc).__name__
        raise StoreError(f"Cannot open session store {describe(url)}: {message}") from None
