"""``tether sessions`` (list, ``prune``) and ``tether session show|export|delete``: the sessions in the store.

Every command that takes a session id takes its short id (``_shortid``: six digits of its random tail) or a unique
prefix of the id (``SQLiteStore.resolve_session``: an index range); an ambiguous one is a usage error naming the
candidates. Lists show short ids; ``session show`` without an id shows the latest conversation of the project
(``--last``: of any project). Deleting removes a session with its
child sessions, every row of theirs (one transaction) and their retained tool outputs; a session a live process runs
is refused. Each command opens the store the resolved config names (``_common.runtime``), as ``tether run`` does.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from ._common import err_console, fail, out_console, run_async, runtime, stdin_is_terminal
from ._format import shown
from ._shortid import resolve_session, short_ids

__all__ = [
    "delete_command",
    "export_command",
    "list_command",
    "parse_age",
    "prune_command",
    "show_command",
]


def _json_text(value: Any) -> str:
    """``--json`` output: valid UTF-8 JSON whatever a store holds (a lone surrogate shown as a visible escape, the
    mapping ``tether.storable`` uses everywhere: a session's exact directory may hold one, and so may any text an
    older store kept)."""
    from ..storable import storable

    return json.dumps(storable(value), indent=2, ensure_ascii=False)


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S") if ms else "-"


async def _status(store: Any, session_id: str) -> str:
    from ..session import AssistantInfo, ToolPart

    messages = await store.load_messages(session_id)
    for message in reversed(messages):
        info = message.info
        if isinstance(info, AssistantInfo):
            if info.error is not None:
                return info.error.kind
            if any(isinstance(p, ToolPart) and p.interrupted for p in message.parts):
                return "interrupted"
            if info.completed is None:
                return "running"
            return "done" if info.finish == "stop" else info.finish or "done"
    return "new"


def list_command(
    *, data_dir: Path, directory: Path | None, all_: bool, limit: int, as_json: bool = False
) -> None:
    """The body of ``tether sessions``."""

    async def main() -> list[tuple[Any, str, str]]:
        async with await runtime(data_dir, directory) as rt:
            project = None
            if not all_:
                import anyio.to_thread

                from ..config import find_project

                # the project the directory belongs to (``repo`` from ``repo/pkg``), as `tether run` records it
                start = (directory or Path.cwd()).resolve()
                project = str(await anyio.to_thread.run_sync(find_project, start))
            infos = await rt.sessions.list(project=project, limit=limit)
            kinds = await rt.store.session_kinds([info.id for info in infos])
            return [
                (info, kinds.get(info.id, "conversation"), await _status(rt.store, info.id)) for info in infos
            ]

    found = run_async(main)
    if as_json:
        from ._timeline import session_json

        rows = [{**session_json(info), "kind": kind, "status": status} for info, kind, status in found]
        typer.echo(_json_text(rows))
        return
    rows = [
        (info, status if kind == "conversation" else f"{status} ({kind})") for info, kind, status in found
    ]
    console = out_console()
    if not rows:
        where = "anywhere" if all_ else "for this project (use --all for every project)"
        console.print(f'No sessions {where}. Start one with `tether run "..."` or try `tether demo`.')
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("id", "title", "directory", "updated", "status"):
        table.add_column(column, overflow="fold" if column == "id" else "ellipsis", no_wrap=column != "title")
    short = short_ids(info.id for info, _ in rows)
    for info, status in rows:
        # cells as Text: a title is the model's (or the prompt's) words, never markup, never an escape sequence
        cells = (short[info.id], info.title or "(untitled)", info.directory, _when(info.updated), status)
        table.add_row(*(shown(cell) for cell in cells))
    console.print(table)
    console.print(
        Text(
            "short ids: `tether session show ID` takes one (or a full id, or a prefix of it; --json has them)"
        ),
        style="dim",
    )


async def _export(data_dir: Path, session_id: str) -> dict[str, Any]:
    from .._export import export_document

    async with await runtime(data_dir) as rt:
        return await export_document(rt.store, await resolve_session(rt.store, session_id))


async def _chosen(rt: Any, session_id: str | None, *, last: bool, directory: Path | None) -> Any:
    """The session ``session show`` shows: ``session_id``'s, else the latest conversation of the project the directory
    belongs to, else (``last``) the latest top-level session of any project.

    Raises:
        UsageError: no session to show, or both an id and ``--last``.
        NotFoundError, UsageError: from :func:`resolve_session`.
    """
    import anyio.to_thread

    from ..config import find_project
    from ..errors import UsageError

    if session_id is not None:
        if last:
            raise UsageError("an ID and --last contradict each other; pass one of them")
        return await resolve_session(rt.store, session_id)
    if last:
        found = [info for info in await rt.store.list_sessions(limit=50) if info.parent_id is None]
        if not found:
            raise UsageError('no sessions yet: start one with `tether run "..."` or try `tether demo`')
        return found[0]
    start = (directory or Path.cwd()).resolve()
    project = await anyio.to_thread.run_sync(find_project, start)
    latest = await rt.store.latest_session(project=str(project))
    if latest is None:
        raise UsageError(f"no session in {project}: pass an ID (see `tether sessions --all`) or --last")
    return latest


async def _load_shown(
    data_dir: Path, session_id: str | None, *, last: bool = False, directory: Path | None = None
) -> tuple[Any, Any, tuple[Any, ...], Any]:
    """The session, its messages, its current todo list (one key range, never a walk of the history) and its
    child sessions (subagents' sessions, by the parent's call id)."""
    from .._export import load_subsessions

    async with await runtime(data_dir, directory) as rt:
        info = await _chosen(rt, session_id, last=last, directory=directory)
        messages = await rt.store.load_messages(info.id)
        todos = await rt.store.load_todos(info.id)
        children = await load_subsessions(rt.store, info.id)
    return info, messages, todos, children


_TODO_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}


def _print_todos(todos: tuple[Any, ...]) -> None:
    """The session's current todo list (``todowrite``), after the timeline."""
    console = out_console()
    console.print()
    console.print(shown(f"todos ({sum(t.status != 'completed' for t in todos)} open)", "bold"))
    for todo in todos:
        style = "dim" if todo.status in ("completed", "cancelled") else None
        line = f"  {_TODO_MARKS.get(todo.status, '[?]')} {todo.content}  ({todo.priority}, id {todo.id})"
        console.print(shown(line, style) if style else shown(line))


def show_command(
    *,
    data_dir: Path,
    session_id: str | None,
    as_json: bool,
    last: bool = False,
    directory: Path | None = None,
) -> None:
    """The body of ``tether session show`` (the timeline, then the current todo list when there is one); without
    ``session_id``, the latest conversation of the project (``last``: of any project)."""
    from .._export import timeline_json, todos_json
    from ._timeline import print_timeline

    info, messages, todos, children = run_async(
        lambda: _load_shown(data_dir, session_id, last=last, directory=directory)
    )
    if as_json:
        document = timeline_json(info, messages, children)
        document["todos"] = todos_json(todos)
        typer.echo(_json_text(document))
        return
    print_timeline(out_console(), info, messages, children)
    if todos:
        _print_todos(todos)


def export_command(*, data_dir: Path, session_id: str, output: Path | None) -> None:
    """The body of ``tether session export``."""
    document = run_async(lambda: _export(data_dir, session_id))
    info = document["session"]
    text = _json_text(document)
    if output is None:
        typer.echo(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")
        out_console().print(shown(f"exported {info['id']} to {output}"))


_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_age(text: str) -> int:
    """``30d`` as seconds; units ``s``, ``m``, ``h``, ``d``, ``w``.

    Raises:
        UsageError: not a positive whole number followed by one of those units.
    """
    from ..errors import UsageError

    value = text.strip().lower()
    unit = _AGE_UNITS.get(value[-1:])
    number = value[:-1]
    if unit is None or not number.isascii() or not number.isdigit() or int(number) <= 0:
        raise UsageError(f"--older-than {text!r} is not an age: write a number and a unit, e.g. 30d, 12h, 2w")
    return int(number) * unit


def _remove_outputs(directories: list[Path]) -> list[str]:
    """Delete the retained tool outputs of deleted sessions; the failures, as lines (never a traceback)."""
    import shutil

    failures: list[str] = []
    for directory in directories:
        try:
            if directory.is_symlink():  # never follow one out of the data directory
                directory.unlink()
            elif directory.exists():
                shutil.rmtree(directory)
        except OSError as exc:
            failures.append(f"could not remove {directory}: {exc.strerror or exc}")
    return failures


async def _delete_outputs(rt: Any, deleted: Any) -> list[str]:
    import anyio.to_thread

    directories = [rt.output.session_directory(info.id) for info in deleted.sessions]
    return await anyio.to_thread.run_sync(_remove_outputs, directories)


def _described(info: Any) -> str:
    return f"{info.id}  {info.title or '(untitled)'}  ({info.directory}, updated {_when(info.updated)})"


def delete_command(*, data_dir: Path, session_id: str, yes: bool) -> None:
    """The body of ``tether session delete``."""
    if not yes and not stdin_is_terminal():
        fail("deleting a session needs a confirmation and there is no terminal to ask: pass --yes")

    async def main() -> tuple[Any, list[str]] | None:
        from ._choice import ask_choice, yes_no

        async with await runtime(data_dir) as rt:
            info = await resolve_session(rt.store, session_id)
            if not yes:
                console = out_console()
                console.print(shown(f"delete {_described(info)}"))
                # a whole answer (``_choice``): "yes please" is asked again, an empty line or Ctrl-D keeps it
                question = "with its messages, tool calls, child sessions and retained outputs? \\[y/N] "
                if not await ask_choice(console, question, yes_no(), again="delete it? \\[y/N] "):
                    return None
            deleted = await rt.store.delete_session(info.id)
            if deleted.live:
                fail(deleted.live[0].message)
            return deleted, await _delete_outputs(rt, deleted)

    done = run_async(main)
    if done is None:
        err_console().print("nothing deleted")
        return
    deleted, failures = done
    console = out_console()
    for info in deleted.sessions:
        console.print(shown(f"deleted {_described(info)}"))
    for line in failures:
        err_console().print(shown(f"warning: {line}", "yellow"))


def prune_command(*, data_dir: Path, older_than: str, dry_run: bool) -> None:
    """The body of ``tether sessions prune``."""
    import time

    from ..errors import UsageError

    try:
        age = parse_age(older_than)
    except UsageError as exc:
        fail(exc.message)
    before = int((time.time() - age) * 1000)

    async def main() -> tuple[Any, list[str]]:
        async with await runtime(data_dir) as rt:
            result = await rt.store.prune_sessions(before=before, dry_run=dry_run)
            failures = [] if dry_run else await _delete_outputs(rt, result)
            return result, failures

    result, failures = run_async(main)
    console = out_console()
    verb = "would delete" if dry_run else "deleted"
    for info in result.sessions:
        console.print(shown(f"{verb} {_described(info)}"))
    errors = err_console()
    for live in result.live:
        errors.print(shown(f"kept {live.message}", "yellow"))
    for line in failures:
        errors.print(shown(f"warning: {line}", "yellow"))
    count = len(result.sessions)
    errors.print(f"{verb} {count} session{'s' if count != 1 else ''} not updated in {older_than.strip()}")
