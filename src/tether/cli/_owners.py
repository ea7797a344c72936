"""``tether sessions --owners``: the open stores (owners) sharing the session store, and what each holds.

Every open store registers an owner row: a ``tether run``, a ``tether worker``, a server, this command itself. A row
shows who it is (host, pid), when it last proved alive (heartbeat; on PostgreSQL its lease on the server's clock and
whether its advisory lock is held, i.e. its connection lives), the verdict recovery acts on (``live``), the sessions
it claims and its unfinished calls. A row that is not live has its calls interrupted by the next sweep of any open
store (docs/postgres.md, "Leases").
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from ._common import fail, out_console, run_async, runtime
from ._format import shown

__all__ = ["owners_command"]


def _when(ms: int | None) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%H:%M:%S") if ms else "-"


def owners_command(*, data_dir: Path, directory: Path | None, as_json: bool) -> None:
    """The body of ``tether sessions --owners``."""

    async def main() -> list[Any] | None:
        async with await runtime(data_dir, directory) as rt:
            owners = getattr(rt.store, "owners", None)
            return None if owners is None else list(await owners())

    found = run_async(main)
    if found is None:
        fail("this session store keeps no owners (only the SQLite and PostgreSQL stores do)")
    if as_json:
        print(json.dumps([_json(status) for status in found], ensure_ascii=False))
        return
    postgres = any(status.lease_until is not None for status in found)
    table = Table(box=None, pad_edge=False, header_style="bold")
    columns = ["owner", "host", "pid", "opened", "heartbeat"]
    columns += ["lease until", "lock"] if postgres else []
    columns += ["live", "claims", "unfinished"]
    for column in columns:
        table.add_column(column, no_wrap=column != "claims")
    for status in found:
        cells = [
            status.id + (" (this command)" if status.this else ""),
            status.host,
            str(status.pid),
            _when(status.opened),
            _when(status.heartbeat),
        ]
        if postgres:
            cells += [_when(status.lease_until), "held" if status.locked else "released"]
        cells += [
            "yes" if status.live else "no: recovered at the next sweep",
            " ".join(status.claims) or "-",
            str(status.unfinished),
        ]
        table.add_row(*(shown(cell) for cell in cells))
    out_console().print(table)


def _json(status: Any) -> dict[str, Any]:
    return {
        "id": status.id,
        "host": status.host,
        "pid": status.pid,
        "opened": status.opened,
        "heartbeat": status.heartbeat,
        "lease_until": status.lease_until,
        "locked": status.locked,
        "live": status.live,
        "this": status.this,
        "claims": list(status.claims),
        "unfinished": status.unfinished,
    }
