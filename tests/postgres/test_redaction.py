"""The store URL's password never reaches an error, a log or a repr: ``redact``/``describe`` (pure, no server).

The password rules are libpq's: in ``postgresql://user:password@host`` the userinfo ends at the last "@" before the
host, so a password may hold "@", "/", "?", "#" and ":" (raw or percent-encoded); a ``password=`` query parameter;
and in a ``key=value`` conninfo string ``password=secret`` or ``password='se cret'`` with backslash escapes.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tether.store._postgres_conn import describe, redact

PASSWORDS = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), min_size=4)
"""Any text libpq can hold (no NUL; no lone surrogate: no file or URL encodes one); at least 4 characters, so that it is not a trivial substring of the rest."""


def _conninfo_quoted(password: str) -> str:
    return password.replace("\\", "\\\\").replace("'", "\\'")


def _conninfo_bare(password: str) -> str:
    return "".join("\\" + c if c.isspace() or c in "\\'" else c for c in password)


def _never_shown(password: str, out: str, skeleton: str) -> None:
    assume(password not in skeleton and quote(password, safe="") not in skeleton)
    assert password not in out
    assert quote(password, safe="") not in out


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:p#ss@db:5432/t", "postgresql://app:***@db:5432/t"),
        ("postgresql://app:p?ss@db/t?sslmode=require", "postgresql://app:***@db/t?sslmode=require"),
        ("postgresql://app:p@ss@db/t", "postgresql://app:***@db/t"),
        ("postgres://app:p/ss@db/t", "postgres://app:***@db/t"),
        ("postgresql://app:a:b@c/d?e#f@db/t", "postgresql://app:***@db/t"),
        ("postgresql://app:p%23%3F%40%2Fss@db/t", "postgresql://app:***@db/t"),
        (
            "postgresql://app@db/t?password=p%23s%26s&sslmode=require",
            "postgresql://app@db/t?password=***&sslmode=require",
        ),
        ("host=db password=s3cr#t@x user=app", "host=db password=*** user=app"),
        ("host=db password = 'se cret\\'s \\\\ x' user=app", "host=db password = *** user=app"),
        ("host=db password=se\\ cret user=app", "host=db password=*** user=app"),
        ("host=db password='unterminated secret", "host=db password=***"),
    ],
)
def test_review3_password_with_url_delimiters_is_redacted(url: str, shown: str) -> None:
    assert describe(url) == shown


def test_review3_a_driver_message_quoting_the_password_is_redacted() -> None:
    url = "postgresql://app:p%40ss%2Fw0rd@db/t"
    message = 'connection to "db" failed: password "p@ss/w0rd" (p%40ss%2Fw0rd) rejected for postgresql://app:x/y@z@db'
    out = redact(message, url)
    assert "p@ss/w0rd" not in out and "p%40ss%2Fw0rd" not in out and "x/y@z" not in out
    assert out.endswith("rejected for postgresql://app:***@db")


def test_a_url_without_a_password_is_left_as_is() -> None:
    for url in (
        "postgresql://app@db:5432/t?sslmode=require",
        "postgresql:///t?host=/run/pg",
        "host=db user=app",
    ):
        assert describe(url) == url


FORMS: dict[str, tuple[Callable[[str], str], str]] = {
    "raw userinfo": (
        lambda pw: f"postgresql://app:{pw}@db.internal:5432/tether?sslmode=require",
        "postgresql://app:***@db.internal:5432/tether?sslmode=require",
    ),
    "encoded userinfo": (
        lambda pw: f"postgresql://app:{quote(pw, safe='')}@db.internal:5432/tether",
        "postgresql://app:***@db.internal:5432/tether",
    ),
    "query parameter": (
        lambda pw: f"postgresql://app@db.internal/tether?sslmode=require&password={quote(pw, safe='')}&x=1",
        "postgresql://app@db.internal/tether?sslmode=require&password=***&x=1",
    ),
    "quoted conninfo": (
        lambda pw: f"host=db.internal port=5432 password='{_conninfo_quoted(pw)}' dbname=tether",
        "host=db.internal port=5432 password=*** dbname=tether",
    ),
    "bare conninfo": (
        lambda pw: f"host=db.internal password={_conninfo_bare(pw)} dbname=tether",
        "host=db.internal password=*** dbname=tether",
    ),
}
"""How a password is embedded, and what ``describe`` must show instead."""


@pytest.mark.parametrize("form", FORMS)
@given(password=PASSWORDS)
def test_review3_a_password_never_shows_however_it_is_embedded(form: str, password: str) -> None:
    embed, skeleton = FORMS[form]
    source = embed(password)
    out = describe(source)
    _never_shown(password, out, skeleton)
    assert out == skeleton
    message = f'Cannot open {source}: password "{password}" refused'  # a driver echoing it, decoded
    _never_shown(password, redact(message, source), skeleton)
