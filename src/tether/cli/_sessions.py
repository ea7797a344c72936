"""``tether sessions``, ``tether session show`` and ``tether session export``: reading what happened from the store."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from ._common import out_console, run_async
from ._format import shown

__all__ = ["export_command", "list_command", "show_command"]


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


def list_command(*, data_dir: Path, directory: Path | None, all_: bool, limit: int) -> None:
    """The body of ``tether sessions``."""

    async def main() -> None:
        from .. import Runtime

        async with Runtime(data_dir=data_dir) as rt:
            project = None
            if not all_:
                location = await rt.location((directory or Path.cwd()).resolve())
                project = str(location.root)
            infos = await rt.sessions.list(project=project, limit=limit)
            rows = [(info, await _status(rt.store, info.id)) for info in infos]
        console = out_console()
        if not rows:
            where = "anywhere" if all_ else "for this project (use --all for every project)"
            console.print(f'No sessions {where}. Start one with `tether run "..."` or try `tether demo`.')
            return
        table = Table(box=None, pad_edge=False, header_style="bold")
        for column in ("id", "title", "directory", "updated", "status"):
            table.add_column(
                column, overflow="fold" if column == "id" else "ellipsis", no_wrap=column != "title"
            )
        for info, status in rows:
            # cells as Text: a title is the model's (or the prompt's) words, never markup, never an escape sequence
            cells = (info.id, info.title or "(untitled)", info.directory, _when(info.updated), status)
            table.add_row(*(shown(cell) for cell in cells))
        console.print(table)

    run_async(main)


async def _load(data_dir: Path, session_id: str) -> tuple[Any, Any]:
    from .. import Runtime

    async with Runtime(data_dir=data_dir) as rt:
        info = await rt.store.get_session(session_id)
        messages = await rt.store.load_messages(session_id)
    return info, messages


def show_command(*, data_dir: Path, session_id: str, as_json: bool) -> None:
    """The body of ``tether session show``."""
    from ._timeline import print_timeline, timeline_json

    info, messages = run_async(lambda: _load(data_dir, session_id))
    if as_json:
        typer.echo(json.dumps(timeline_json(info, messages), indent=2, ensure_ascii=False))
        return
    print_timeline(out_console(), info, messages)


def export_command(*, data_dir: Path, session_id: str, output: Path | None) -> None:
    """The body of ``tether session export``."""
    from ._timeline import export_document

    info, messages = run_async(lambda: _load(data_dir, session_id))
    text = json.dumps(export_document(info, messages), indent=2, ensure_ascii=False)
    if output is None:
        typer.echo(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")
        out_console().print(shown(f"exported {session_id} to {output}"))
