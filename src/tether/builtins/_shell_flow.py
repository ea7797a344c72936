"""What the walk (:mod:`._shell_walk`) and one simple command (:mod:`._shell_command`) share: the working directories
the shell may have (:data:`Cwds`), where a command leaves them (:class:`Flow`), and what a simple command reads and
records of the walk it is part of (:class:`Walk`, which :class:`._shell_walk.Walker` is).

Here so that the walk imports the command (it records each simple command through :func:`._shell_command.run`)
and the command never imports the walk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .._record import record

if TYPE_CHECKING:
    from ._shell_analysis import PathRole, SimpleCommand
    from ._shell_words import Word

__all__ = ["Cwds", "Flow", "Walk"]

Cwds = frozenset[str | None]
"""The working directories the shell may have at a point (``None``: one that cannot be known, e.g. ``$OLDPWD``)."""


@record(kw_only=False)
class Flow:
    """The working directories after a command: ``ok`` when it succeeded, ``fail`` when it failed."""

    ok: Cwds
    fail: Cwds

    @property
    def any(self) -> Cwds:
        return self.ok | self.fail


class Walk(Protocol):
    """What a simple command reads and records of the walk it is part of."""

    @property
    def home(self) -> str:
        """The home directory (``cd`` alone, ``~``)."""
        ...

    @property
    def commands(self) -> list[SimpleCommand]:
        """The simple commands found so far, in order."""
        ...

    @property
    def uncertain(self) -> list[str]:
        """Why something the command touches cannot be known before it runs (each asked as such)."""
        ...

    @property
    def unknown(self) -> list[str]:
        """What the analysis cannot follow at all."""
        ...

    def nested(self, code: str, cwds: Cwds, source: str) -> None:
        """Analyse ``code`` (the literal text of ``eval``, ``sh -c``, ...) as part of this command."""
        ...

    def change_directory(self, name: str, args: list[Word], cwds: Cwds, *, source: str) -> Flow:
        """Where ``cd``/``pushd``/``popd`` with ``args`` leaves the shell."""
        ...

    def add_path(
        self,
        value: str | None,
        cwds: Cwds,
        *,
        role: PathRole,
        source: str,
        write: bool = False,
        pattern: str | None = None,
    ) -> None:
        """Record ``value`` resolved from each of ``cwds``; ``pattern`` is the glob it was cut from, if any."""
        ...
