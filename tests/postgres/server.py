"""A real PostgreSQL server for tests and benchmarks: ``initdb`` into a temp directory, ``pg_ctl start`` on a free port.

The Debian ``postgresql`` package keeps its binaries in ``/usr/lib/postgresql/<version>/bin`` (not on ``PATH``);
``scripts/bootstrap`` installs it when missing. PostgreSQL refuses to run as root, so as root the server runs as
``nobody`` in a directory it owns. It listens on 127.0.0.1 (password login, scram) and on a unix socket in its own
directory. :meth:`PostgresServer.database` makes a fresh database from a migrated template (``CREATE DATABASE ...
TEMPLATE``): each test gets its own in a few milliseconds.

Used by the session-scoped ``postgres`` fixture (``tests/session/conftest.py``, ``tests/postgres/conftest.py``) and by
``bench/scale.py``.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PASSWORD", "PostgresServer", "find_bin", "start_server"]

PASSWORD = "s3cret-Pa55:word"
"""The superuser's password (tests check it never appears in an error or a log)."""


def find_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (newest version first), or ``None``."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    """A running server (stop it with :meth:`stop`)."""

    bin: Path
    root: Path
    port: int
    user: str = "tether"
    _counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def url(self, database: str = "postgres", *, password: str = PASSWORD) -> str:
        return f"postgresql://{self.user}:{password}@127.0.0.1:{self.port}/{database}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)  # pyright: ignore[reportArgumentType, reportCallIssue]

    def database(self, template: str | None = "tether_template") -> str:
        """A new empty database (from the migrated template unless ``template=None``); its URL."""
        name = f"t{os.getpid()}_{next(self._counter)}"
        self._admin(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
        return self.url(name)

    def stop(self) -> None:
        _as_owner([str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(self.root, ignore_errors=True)

    def restart(self) -> None:
        """Stop the server at once (``immediate``: connections are cut) and start it again on the same port."""
        _as_owner([str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop"])
        self._start()

    def _start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root / 'sock'} -c listen_addresses=127.0.0.1 -c max_connections=200 "
            "-c fsync=off -c full_page_writes=off"
        )
        _as_owner(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.root / "data"),
                "-l",
                str(self.root / "server.log"),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            ]
        )


def _as_owner(argv: list[str]) -> None:
    kwargs: dict[str, str] = {}
    if os.geteuid() == 0:  # postgres refuses to run as root
        kwargs = {"user": "nobody", "group": "nogroup"}
    subprocess.run(argv, check=True, capture_output=True, cwd="/", **kwargs)  # type: ignore[call-overload]


def start_server() -> PostgresServer:
    """Initialise a cluster in a new temp directory and start it; the template database is migrated.

    Raises:
        RuntimeError: no PostgreSQL binaries here.
    """
    bin_dir = find_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="tether-pg-"))
    (root / "sock").mkdir()
    pwfile = root / "pw"
    pwfile.write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        for path in (root, root / "sock", pwfile):
            os.chown(path, 65534, 65534)
    _as_owner(
        [
            str(bin_dir / "initdb"),
            "-D",
            str(root / "data"),
            "-U",
            "tether",
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
        ]
    )
    server = PostgresServer(bin=bin_dir, root=root, port=_free_port())
    server._start()
    server._admin("CREATE DATABASE tether_template")
    _migrate(server.url("tether_template"))
    return server


def _migrate(url: str) -> None:
    import psycopg

    from tether.store._postgres_schema import migrate

    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
