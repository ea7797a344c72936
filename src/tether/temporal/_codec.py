"""Signing what tether's clients and workers exchange through Temporal: an HMAC-SHA256 payload codec and its key.

A Temporal server does not authenticate who starts a workflow, sends an update, signal or query, or reads a history (a
dev server on localhost answers every local user). Every payload a tether client or worker writes (a turn's input,
each update's and query's input, an activity's request and result) is signed with a key only they hold, and every
payload they read must carry a valid signature: a turn started, an update sent or a query asked by someone without the
key never reaches tether's code. The codec signs, it does not encrypt: the server (and whoever can read its database)
still reads the payloads.

A payload without a valid signature is not an error of the codec (an error there would fail the whole workflow task,
and Temporal would retry it with the stranger's update in it): it decodes into a *refused* payload, which
:class:`PayloadConverter` never turns into a value. So an update carrying one is rejected before its validator, a
query raises, a signal is dropped, a turn's input or an activity's request fails to convert (its task is retried,
nothing runs), each with one ``WARNING`` line on the ``tether.temporal`` logger. The workflow's handlers also refuse
an update or query that carries no payload at all (``_workflow.py``).

The key is ``$TETHER_TEMPORAL_KEY`` if set, else the file ``<data dir>/temporal/key`` (created 0600 in a 0700
directory on first use). Client and worker on one machine share the data directory and so the key; another host
gets a copy of the file, or the variable (docs/temporal.md, "Trust boundary").
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    EncodingPayloadConverter,
    PayloadCodec,
)

from ..errors import TetherError, UsageError
from ..paths import default_data_dir

__all__ = [
    "ENCODING",
    "KEY_ENV",
    "REFUSED_ENCODING",
    "PayloadConverter",
    "SigningCodec",
    "data_converter",
    "key_path",
    "load_key",
]

ENCODING = b"binary/tether-hmac-sha256"
REFUSED_ENCODING = b"binary/tether-refused"
"""What :class:`SigningCodec` decodes a payload without a valid signature into (``data``: why it was refused)."""
KEY_ENV = "TETHER_TEMPORAL_KEY"
_MIN_KEY = 32
_MAC = hashlib.sha256().digest_size
REFUSED = (
    "A Temporal payload without a valid tether signature was refused ({why}): whoever sent it does not hold this "
    "worker's key (docs/temporal.md, Trust boundary)"
)
"""Raised as a plain ``TetherError``: a workflow task that fails to convert its input is retried and the workflow
lives on (a non-retryable ``ApplicationError`` would end the workflow: anyone could then end a turn by sending it
junk)."""
UNSIGNED = "unsigned"
WRONG_KEY = "signed with another key"
_log = logging.getLogger("tether.temporal")


class SigningCodec(PayloadCodec):
    """Signs every payload on the way out; on the way in, any payload it did not sign (same key) becomes a refused
    payload, which :class:`PayloadConverter` never turns into a value."""

    def __init__(self, key: bytes) -> None:
        if len(key) < _MIN_KEY:
            raise UsageError(f"A Temporal signing key needs at least {_MIN_KEY} bytes; got {len(key)}")
        self._key = key

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._sign(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._verify(p) for p in payloads]

    def _sign(self, payload: Payload) -> Payload:
        inner = payload.SerializeToString(deterministic=True)
        mac = hmac.new(self._key, inner, hashlib.sha256).digest()
        return Payload(metadata={"encoding": ENCODING}, data=mac + inner)

    def _verify(self, payload: Payload) -> Payload:
        data = payload.data
        if payload.metadata.get("encoding") != ENCODING or len(data) < _MAC:
            return _refused(UNSIGNED)
        mac, inner = data[:_MAC], data[_MAC:]
        if not hmac.compare_digest(mac, hmac.new(self._key, inner, hashlib.sha256).digest()):
            return _refused(WRONG_KEY)
        found = Payload()
        found.ParseFromString(inner)
        return found


def _refused(why: str) -> Payload:
    return Payload(metadata={"encoding": REFUSED_ENCODING}, data=why.encode())


class _RefusedConverter(EncodingPayloadConverter):
    """Turns no value into a refused payload, and a refused payload into no value: it logs and raises."""

    @property
    def encoding(self) -> str:
        return REFUSED_ENCODING.decode()

    def to_payload(self, value: Any) -> Payload | None:
        return None

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        why = payload.data.decode(errors="replace")
        where = ""
        if workflow.in_workflow():  # an update's, query's or signal's input, or the turn's own
            update = workflow.current_update_info()
            where = f" sent to the turn {workflow.info().workflow_id}"
            where += f" (its {update.name!r} update)" if update is not None else ""
        _log.warning(
            "Refused a Temporal payload%s (%s): only a holder of this worker's key can send one (docs/temporal.md, "
            "Trust boundary)",
            where,
            why,
        )
        raise TetherError(REFUSED.format(why=why))


class PayloadConverter(CompositePayloadConverter):
    """Temporal's default converters, and one that refuses what :class:`SigningCodec` could not verify.

    A class with a nullary constructor, as Temporal builds one inside the workflow sandbox.
    """

    def __init__(self) -> None:
        super().__init__(_RefusedConverter(), *DefaultPayloadConverter.default_encoding_payload_converters)


def data_converter(key: bytes) -> DataConverter:
    """The data converter of tether's clients and workers: payloads signed with ``key`` and checked on the way in.

    Raises:
        UsageError: ``key`` is shorter than 32 bytes.
    """
    return dataclasses.replace(
        DataConverter.default, payload_converter_class=PayloadConverter, payload_codec=SigningCodec(key)
    )


def key_path(data_dir: Path | None = None) -> Path:
    """Where the key of ``data_dir`` (default: the user data directory) lives."""
    return (data_dir or default_data_dir()) / "temporal" / "key"


def load_key(data_dir: Path | None = None) -> bytes:
    """``$TETHER_TEMPORAL_KEY``, else the key file of ``data_dir`` (made on first use: 256 random bits). Blocking.

    Raises:
        UsageError: the variable is too short, or the key file or its directory is open to other users (or is not
            a regular file).
    """
    given = os.environ.get(KEY_ENV)
    if given:
        key = given.strip().encode()
        if len(key) < _MIN_KEY:
            raise UsageError(
                f"${KEY_ENV} needs at least {_MIN_KEY} characters (for example the content of "
                f"{key_path(data_dir)}, or `python -c 'import secrets; print(secrets.token_hex(32))'`)"
            )
        return key
    path = key_path(data_dir)
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    _private(directory, 0o700)
    if not path.exists():
        _create(path)
    _private(path, 0o600)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        key = os.read(fd, 4096).strip()
    finally:
        os.close(fd)
    if len(key) < _MIN_KEY:
        raise UsageError(
            f"The Temporal key file {path} holds fewer than {_MIN_KEY} characters: delete it to make one"
        )
    return key


def _create(path: Path) -> None:
    """Write a new key beside ``path`` and link it into place: a concurrent first use reads one whole key."""
    temp = path.with_name(f".key.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, secrets.token_hex(32).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temp, path)
    except FileExistsError:
        pass  # another process made it first: theirs is the key
    finally:
        os.unlink(temp)


def _private(path: Path, mode: int) -> None:
    info = os.lstat(path)
    kind = stat.S_ISDIR if mode == 0o700 else stat.S_ISREG
    if not kind(info.st_mode) or info.st_uid != os.getuid():
        raise UsageError(f"{path} must be a {'directory' if mode == 0o700 else 'file'} owned by this user")
    if info.st_mode & 0o077:
        raise UsageError(
            f"{path} is open to other users: chmod {mode:o} {path} (and make a new key if it leaked)"
        )
