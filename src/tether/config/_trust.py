"""The trusted projects: exact project roots the user trusted, kept in one small file in the data directory.

A root is the real path of the project directory (every symlink resolved) and matches only itself: trusting
``~/src`` does not trust ``~/src/cloned-repo``, and a symlink to a trusted directory is that directory. The file
(``trusted-projects.json``, mode 0600) is written whole to a temporary file and renamed over the old one, so a crash
or a concurrent reader never sees half of it. It also remembers the projects whose trust question was answered "no",
so that question is asked once. Changes (read, modify, write) hold an advisory ``flock`` on a lock file beside it, so two
``tether trust`` commands at the same moment both land.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from .._record import record
from ..errors import ConfigError
from ._json import read_json

__all__ = ["TRUST_FILE", "TrustStore", "project_root"]

TRUST_FILE = "trusted-projects.json"


def project_root(directory: Path | str) -> Path:
    """The key of a project in the store: its real absolute path."""
    return Path(os.path.realpath(os.path.abspath(os.fspath(directory))))


@record
class _Entries:
    trusted: tuple[str, ...] = ()
    declined: tuple[str, ...] = ()


class TrustStore:
    """The trusted project roots in ``<data_dir>/trusted-projects.json``.

    Every method reads the file again (it is tiny), so two processes see each other's changes. This reads and writes
    files: from async code call it through ``anyio.to_thread.run_sync``.

    Args:
        data_dir: tether's data directory.
    """

    __slots__ = ("path",)

    def __init__(self, data_dir: Path | str) -> None:
        self.path = Path(data_dir) / TRUST_FILE

    def trusted(self) -> tuple[Path, ...]:
        """The trusted roots, in the order they were trusted.

        Raises:
            ConfigError: the file is not a trust file (naming it).
        """
        return tuple(Path(p) for p in self._load().trusted)

    def is_trusted(self, directory: Path | str) -> bool:
        """Whether the project at ``directory`` (exactly, after resolving symlinks) is trusted.

        Raises:
            ConfigError: the file is broken.
        """
        return str(project_root(directory)) in self._load().trusted

    def declined(self, directory: Path | str) -> bool:
        """Whether the user answered "no" when asked to trust ``directory``.

        Raises:
            ConfigError: the file is broken.
        """
        return str(project_root(directory)) in self._load().declined

    def trust(self, directory: Path | str) -> Path:
        """Trust the project at ``directory``; return its root.

        Raises:
            ConfigError: the file is broken.
            OSError: the file cannot be written.
        """
        root = str(project_root(directory))
        with self._locked():
            entries = self._load()
            trusted = entries.trusted if root in entries.trusted else (*entries.trusted, root)
            self._save(_Entries(trusted=trusted, declined=tuple(p for p in entries.declined if p != root)))
        return Path(root)

    def decline(self, directory: Path | str) -> None:
        """Remember that the user did not trust ``directory`` (the question is not asked again).

        Raises:
            ConfigError: the file is broken.
            OSError: the file cannot be written.
        """
        root = str(project_root(directory))
        with self._locked():
            entries = self._load()
            if root not in entries.declined:
                self._save(_Entries(trusted=entries.trusted, declined=(*entries.declined, root)))

    def remove(self, directory: Path | str) -> bool:
        """Forget ``directory`` (trusted or declined); return whether it was trusted.

        The directory need not exist any more: both its real path and its absolute spelling are removed.

        Raises:
            ConfigError: the file is broken.
            OSError: the file cannot be written.
        """
        keys = {str(project_root(directory)), os.path.abspath(os.fspath(directory))}
        with self._locked():
            entries = self._load()
            was = any(p in keys for p in entries.trusted)
            self._save(
                _Entries(
                    trusted=tuple(p for p in entries.trusted if p not in keys),
                    declined=tuple(p for p in entries.declined if p not in keys),
                )
            )
        return was

    @contextmanager
    def _locked(self) -> Generator[None]:
        """Hold the store's advisory lock (a ``.lock`` file beside it) for one read-modify-write."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(
            self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _load(self) -> _Entries:
        found = read_json(self.path)
        if found is None:
            return _Entries()
        value = found[0]
        if isinstance(value, dict):
            data = cast(dict[str, Any], value)
            trusted, declined = data.get("trusted", []), data.get("declined", [])
            if _strings(trusted) and _strings(declined):
                return _Entries(trusted=tuple(trusted), declined=tuple(declined))
        raise ConfigError(
            'expected {"trusted": [paths], "declined": [paths]}; fix or delete the file', file=str(self.path)
        )

    def _save(self, entries: _Entries) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"trusted": list(entries.trusted), "declined": list(entries.declined)}, indent=2)
        fd, tmp = tempfile.mkstemp(prefix=".trusted-", dir=self.path.parent)  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in cast(list[Any], value))
