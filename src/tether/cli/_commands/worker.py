"""``tether worker``: serve turns submitted with ``tether run --temporal``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import ApiKeyOption, NamespaceOption, TlsOption, data_dir, tree

__all__ = ["app"]

app = tree()


@app.command()
def worker(
    ctx: typer.Context,
    temporal: Annotated[
        str,
        typer.Option("--temporal", metavar="HOST:PORT", help="The Temporal server (e.g. 127.0.0.1:7233)."),
    ],
    task_queue: Annotated[str, typer.Option("--task-queue", help="The task queue to serve.")] = "tether",
    directories: Annotated[
        list[Path] | None,
        typer.Option(
            "--dir",
            "-d",
            help="A directory turns may work in, and below (repeatable; default: the current one). The first is "
            "the project whose config the worker reads.",
        ),
    ] = None,
    trust: Annotated[
        bool, typer.Option("--trust", help="Trust this project for this worker (its config and tool files).")
    ] = False,
    allow_test_models: Annotated[
        bool,
        typer.Option(
            "--allow-test-models",
            help="Serve turns whose model is a test model (scripted:PATH, replay); refused by default.",
        ),
    ] = False,
    tls: TlsOption = False,
    api_key: ApiKeyOption = None,
    namespace: NamespaceOption = "default",
) -> None:
    """Run turns submitted with `tether run --temporal` (needs tether[temporal]; docs/temporal.md).

    Serves the task queue until Ctrl-C: each model request and each tool call of a turn is an activity here, written
    to this data directory's store. Start several (on hosts that share the store and the project) to share the load;
    a turn whose worker dies goes on on another. Only turns signed with this data directory's key
    (or $TETHER_TEMPORAL_KEY) run.
    """
    from .._worker import worker_command

    worker_command(
        data_dir=data_dir(ctx),
        temporal=temporal,
        task_queue=task_queue,
        roots=[d.expanduser().resolve() for d in directories or [Path.cwd()]],
        trust=trust,
        allow_test_models=allow_test_models,
        connection={"tls": tls, "api_key": api_key, "namespace": namespace},
    )
