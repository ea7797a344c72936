"""``tether run``: one turn of an agent in a project (here, or on Temporal workers with ``--temporal``).

Its annotations are evaluated when the module loads, not strings (no ``from __future__ import annotations``): typer
reads them at every run (``cli/_app.py``).
"""

from pathlib import Path
from typing import Annotated

import typer

from . import (
    AgentOption,
    ApiKeyOption,
    DenyOption,
    DirOption,
    NamespaceOption,
    TlsOption,
    YesOption,
    data_dir,
    tree,
)

__all__ = ["app"]

app = tree()


@app.command()
def run(
    ctx: typer.Context,
    prompt: Annotated[
        str | None,
        typer.Argument(
            help="What the agent should do (omitted or -: read from stdin; with a prompt, piped stdin is appended)."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="provider/model, e.g. openai/gpt-5 (default: config).")
    ] = None,
    agent: AgentOption = None,
    directory: DirOption = None,
    continue_: Annotated[
        bool,
        typer.Option(
            "--continue",
            "-c",
            help="Continue the latest conversation of this project (not `tool call` sessions).",
        ),
    ] = False,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Continue session ID (or a unique prefix).")
    ] = None,
    output_format: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="text|json",
            help="text: the live view; json: one JSON event per line on stdout.",
        ),
    ] = "text",
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Print only the final text (no diffs, no command output)."),
    ] = False,
    whole_text: Annotated[
        bool,
        typer.Option(
            "--whole-text",
            help="With --format json: each text (and reasoning) block as one event when it ends, not as deltas.",
        ),
    ] = False,
    files: Annotated[
        list[Path] | None,
        typer.Option("--file", "-f", help="Attach a file: text, an image or a PDF (repeatable)."),
    ] = None,
    yes: YesOption = False,
    deny_asks: DenyOption = False,
    trust: Annotated[
        bool,
        typer.Option(
            "--trust",
            help="Trust this project for this run: apply its .tether/tether.json in full (also TETHER_TRUST=1). "
            "Not saved; see `tether trust`.",
        ),
    ] = False,
    show_prompt: Annotated[
        bool,
        typer.Option(
            "--show-prompt",
            help="Print the exact system texts this run would send (agent text, environment, AGENTS.md) and exit; "
            "calls no model, creates no session.",
        ),
    ] = False,
    otel: Annotated[
        bool,
        typer.Option(
            "--otel",
            help="Export OpenTelemetry traces of the turn over OTLP/HTTP (config telemetry.otlp_endpoint, else "
            "$OTEL_EXPORTER_OTLP_ENDPOINT; one is required; needs tether[otel]). docs/telemetry.md",
        ),
    ] = False,
    temporal: Annotated[
        str | None,
        typer.Option(
            "--temporal",
            metavar="HOST:PORT",
            help="Submit the turn to `tether worker`s on this Temporal server and follow it (needs "
            "tether[temporal]). docs/temporal.md",
        ),
    ] = None,
    task_queue: Annotated[
        str, typer.Option("--task-queue", help="The Temporal task queue (with --temporal).")
    ] = "tether",
    tls: TlsOption = False,
    api_key: ApiKeyOption = None,
    namespace: NamespaceOption = "default",
) -> None:
    """Run one turn of an agent in a project.

    Streams text, tool calls (live, with a bash tail) and approval prompts, then a summary.

    \b
    Examples:
      tether run "fix the failing test" --model openai/gpt-5
      tether run -c "now add a test for it"
      tether run --deny-asks --dir ../api "summarize the TODOs"   # for CI: never prompt
      tether run --show-prompt --agent plan                       # what the model is told
      git diff | tether run "review this diff" -q                 # stdin appended; final text only
      tether run --format json --yes "fix it" | jq -c 'select(.type == "tool_end")'
      tether run --format json --whole-text "summarize" | jq -r 'select(.type == "result") | .text'
      tether run -f screenshot.png -f app.py "why does the button overflow?"
    """
    if temporal is None and (tls or api_key or namespace != "default"):
        raise typer.BadParameter("--tls, --api-key and --namespace go with --temporal")
    if temporal is not None:
        from .._worker import run_temporal_command

        if continue_ or files or show_prompt or otel or whole_text:
            raise typer.BadParameter(
                "--temporal takes a prompt, --model, --agent, --dir, --session and the approval options"
            )
        run_temporal_command(
            data_dir=data_dir(ctx),
            prompt=prompt,
            model=model,
            agent=agent,
            directory=directory,
            session_id=session,
            temporal=temporal,
            task_queue=task_queue,
            connection={"tls": tls, "api_key": api_key, "namespace": namespace},
            yes=yes,
            deny_asks=deny_asks,
            output_format=output_format,
            quiet=quiet,
        )
        return
    from .._run import run_command

    run_command(
        data_dir=data_dir(ctx),
        prompt=prompt,
        model=model,
        agent=agent,
        directory=directory,
        continue_=continue_,
        session_id=session,
        yes=yes,
        deny_asks=deny_asks,
        trust=trust,
        show_prompt=show_prompt,
        output_format=output_format,
        quiet=quiet,
        files=files or (),
        otel=otel,
        whole_text=whole_text,
    )
