"""Short session ids and ``session show`` without an id (issue 37): lists show six digits of an id's random tail,
every command takes them, and ``session show`` alone shows the project's latest session (``--last``: anywhere).
Real ``tether`` processes, a real SQLite store with chosen ids for the collisions."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether.cli._shortid import resolve_session, short_id, short_ids  # pyright: ignore[reportPrivateUsage]
from tether.errors import NotFoundError, UsageError
from tether.ids import ascending
from tether.session import SessionInfo, SessionUpdated
from tether.store import SQLiteStore

TIME = "1a24339c432000"


def test_ids_of_one_second_share_a_long_prefix_and_their_short_ids_are_six_digits() -> None:
    made = [ascending("ses") for _ in range(50)]
    common = min(i for i in range(len(made[0])) if len({sid[i] for sid in made}) > 1)
    assert common >= len("ses_") + 8  # a unique prefix of the id would need more than this
    shown = short_ids(made)
    assert len(set(shown.values())) == len(made)  # unique among them
    for sid, short in shown.items():
        assert sid[18:].startswith(short) and len(short) >= 6
        # longer than six only where another tail shares the six
        assert len(short) == 6 or sum(other[18:24] == sid[18:24] for other in made) > 1


def test_a_shared_start_lengthens_only_the_sessions_that_share_it() -> None:
    a, b, c = f"ses_{TIME}abcdef01234567", f"ses_{TIME}abcdef99999999", f"ses_{TIME}0123456789abcd"
    assert short_ids([a, b, c, "odd-id"]) == {a: "abcdef0", b: "abcdef9", c: "012345", "odd-id": "odd-id"}
    assert short_id(c) == "012345" and short_id("ses_other") == "ses_other"


def _fill(store: SQLiteStore, ids: list[str]) -> None:
    for n, sid in enumerate(ids):
        store.append(
            SessionUpdated(
                SessionInfo(id=sid, project="/p", directory="/p", title=sid, agent="build", updated=n)
            )
        )


def test_resolving_a_short_id(tmp_path: Path) -> None:
    a, b = f"ses_{TIME}abcdef01234567", f"ses_{TIME}abcdef99999999"
    c = f"ses_{TIME[:-1]}90123456789abcd"

    async def main() -> None:
        async with SQLiteStore(tmp_path / "tether.db") as store:
            _fill(store, [a, b, c])
            await store.flush()
            assert (await resolve_session(store, "abcdef0")).id == a
            assert (await resolve_session(store, "  abcdef9 ")).id == b
            with pytest.raises(
                UsageError,
                match=r"short id abcdef is ambiguous: abcdef9 \(ses_.*\), abcdef0 \(ses_.*\); give more digits",
            ):
                await resolve_session(store, "abcdef")
            # a full id copied without its ses_: no tail starts with it, the ids do
            assert (await resolve_session(store, c[4:])).id == c
            with pytest.raises(UsageError, match="ambiguous"):
                await resolve_session(store, TIME)  # the shared time digits: ambiguous as an id prefix
            with pytest.raises(NotFoundError, match="no session's short id or id starts with it"):
                await resolve_session(store, "fedcba")
            assert (await resolve_session(store, a[:-3])).id == a  # ses_...: the store's prefix lookup

    anyio.run(main)


def _run(cli: Any, project: Path, prompt: str, model: str) -> str:
    result = cli.run("run", prompt, "--model", model, "--dir", str(project))
    assert result.code == 0, result.output
    return "ses_" + result.output.rsplit("session ses_", 1)[1].split()[0]


def test_lists_show_short_ids_and_every_command_takes_them(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    first, second = _run(cli, project, "first", model), _run(cli, project, "second", model)
    listed = cli.run("sessions", "--dir", str(project)).stdout
    rows = [line.split()[0] for line in listed.splitlines()[1:3]]
    assert rows == [second[18:24], first[18:24]], listed
    assert "ses_" not in listed
    shown = cli.run("session", "show", rows[1])
    assert shown.code == 0 and f"session {first}  (short id {first[18:24]})" in shown.stdout, shown.output
    assert cli.json("session", "export", rows[1])["session"]["id"] == first
    again = cli.run("run", "again", "--model", model, "--dir", str(project), "--session", rows[1], "-q")
    assert again.code == 0, again.output
    users = [
        i["text"] for i in cli.json("session", "show", first, "--json")["timeline"] if i["type"] == "user"
    ]
    assert users == ["first", "again"]
    deleted = cli.run("session", "delete", rows[0], "--yes")
    assert deleted.code == 0 and f"deleted {second}" in deleted.stdout
    missing = cli.run("session", "show", "fedcba")
    assert missing.code == 2 and "Session not found: fedcba" in missing.stderr


def test_session_show_without_an_id_shows_the_latest_here_or_anywhere(
    cli: Any, project: Path, tmp_path: Path
) -> None:
    model = cli.script([{"text": "answer"}])
    none = cli.run("session", "show", "--dir", str(project))
    assert none.code == 2 and f"no session in {project}" in none.stderr
    assert cli.run("session", "show", "--last").code == 2
    older = _run(cli, project, "here", model)
    other = tmp_path / "other"
    other.mkdir()
    newer = _run(cli, other, "elsewhere", model)
    here = cli.json("session", "show", "--dir", str(project), "--json")
    assert here["session"]["id"] == older
    assert json.loads(cli.run("session", "show", "--json", cwd=project).stdout)["session"]["id"] == older
    anywhere = cli.run("session", "show", "--last", cwd=project)
    assert anywhere.code == 0 and re.search(rf"session {newer}\b", anywhere.stdout), anywhere.output
    both = cli.run("session", "show", older, "--last")
    assert both.code == 2 and "an ID and --last contradict each other" in both.stderr
