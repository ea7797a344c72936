"""Which session store a resolved config names: the one answer every opener of the store uses.

``$TETHER_STORE_URL`` wins, then the config's ``store`` (whichever file of the merged config set it), else the SQLite
file ``tether.db`` of the data directory. ``Runtime`` opens the store this names, and every command builds its
runtime from the same resolved config (``tether.cli._common.runtime``), so ``tether run``, ``tether sessions``,
``session show|export|delete``, ``sessions prune``, ``serve``, ``mcp serve`` and ``worker`` all see one store, and a
config that names PostgreSQL never gets a SQLite file created beside it.

This module reads the environment and the config only; it never connects (``tether.session`` does).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .._record import record
from ..errors import UsageError
from ._load import Config

__all__ = ["STORE_ENV", "StoreChoice", "store_choice"]

STORE_ENV = "TETHER_STORE_URL"
_SCHEMES = ("postgresql://", "postgres://")


@record
class StoreChoice:
    """The store a config names.

    Attributes:
        url: the ``postgresql://`` URL; ``None``: the SQLite file in the data directory.
        origin: where the choice comes from, for messages (``$TETHER_STORE_URL``, ``"store" in <file>``, or the
            default); never the URL itself, which may hold a password.
    """

    url: str | None
    origin: str


def store_choice(config: Config, environ: Mapping[str, str] | None = None) -> StoreChoice:
    """The store ``config`` names, ``$TETHER_STORE_URL`` first (``environ`` defaults to ``os.environ``).

    Raises:
        UsageError: ``$TETHER_STORE_URL`` is set but is not a ``postgresql://`` URL (the value is not echoed: it
            may hold a password). The config's own ``store`` was checked when the file was loaded.
    """
    env = (os.environ if environ is None else environ).get(STORE_ENV, "").strip()
    if env:
        if not env.startswith(_SCHEMES):
            raise UsageError(
                f"{STORE_ENV} must be a postgresql:// URL (unset it for the default SQLite file)"
            )
        return StoreChoice(url=env, origin=f"${STORE_ENV}")
    value = config.get("store")
    if isinstance(value, str):
        # no file: a Config made in code, not read from one
        file = config.origins.get(("store",), "the config")
        return StoreChoice(url=value, origin=f'"store" in {file}')
    return StoreChoice(url=None, origin="the default SQLite file")
