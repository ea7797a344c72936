"""The command tree: names, options, help text with examples. Nothing else.

Every command body imports its implementation on call, so ``tether --help`` loads only typer (law of the brief:
startup under 300 ms). Implementations live beside this module, one per command family.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._config import config_app

__all__ = ["app"]

app = typer.Typer(
    name="tether",
    help="tether: run coding agents, approve their tools, and inspect what happened.\n\n"
    "Start with `tether demo` (offline, no API key), then "
    '`tether run --model openai/gpt-5 "fix the failing test"` (with OPENAI_API_KEY set). '
    "`tether` alone, in a terminal, opens an interactive session (see docs/repl.md).",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
session_app = typer.Typer(
    help="Show, export or delete one session.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
tool_app = typer.Typer(
    help="Call one tool through the full path.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
permissions_app = typer.Typer(
    invoke_without_command=True,
    rich_markup_mode=None,
)
sessions_app = typer.Typer(invoke_without_command=True, rich_markup_mode=None)
mcp_app = typer.Typer(
    help="MCP: the configured servers and their tools (mcp list, mcp tools), and tether's tools served to MCP "
    "clients (mcp serve).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(sessions_app, name="sessions")
app.add_typer(mcp_app, name="mcp")
app.add_typer(session_app, name="session")
app.add_typer(tool_app, name="tool")
app.add_typer(permissions_app, name="permissions")
app.add_typer(config_app, name="config")

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        "-d",
        help="The directory to work in (default: the current one); its project is found from it.",
    ),
]
AgentOption = Annotated[
    str | None, typer.Option("--agent", "-a", help="Agent to run as (default: config, else build).")
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Allow every permission ask without prompting.")]
DenyOption = Annotated[
    bool, typer.Option("--deny-asks", help="Reject every permission ask without prompting.")
]
TlsOption = Annotated[
    bool,
    typer.Option("--tls", help="Connect to the Temporal server with TLS (with --temporal; Temporal Cloud)."),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="TETHER_TEMPORAL_API_KEY",
        show_envvar=False,
        help="A Temporal API key (with --temporal; also $TETHER_TEMPORAL_API_KEY).",
    ),
]
NamespaceOption = Annotated[
    str, typer.Option("--namespace", help="The Temporal namespace (with --temporal).")
]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"tether {version('tether')}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="Where sessions, saved approvals and tool outputs live (default: $TETHER_DATA_DIR or the "
            "platform data directory).",
            envvar="TETHER_DATA_DIR",
            show_envvar=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", help="Print tether's version and exit.", is_eager=True, callback=_version),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Interactive session: provider/model (default: config)."),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Interactive session: the agent.")
    ] = None,
    directory: Annotated[
        Path | None, typer.Option("--dir", "-d", help="Interactive session: the project directory.")
    ] = None,
    continue_: Annotated[
        bool, typer.Option("--continue", "-c", help="Interactive session: continue the latest session.")
    ] = False,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Interactive session: continue session ID.")
    ] = None,
    trust: Annotated[bool, typer.Option("--trust", help="Interactive session: trust this project.")] = False,
    log_format: Annotated[
        str | None,
        typer.Option(
            "--log-format",
            metavar="text|json",
            envvar="TETHER_LOG_FORMAT",
            help="Log records on stderr as text or JSON lines (also $TETHER_LOG_FORMAT). docs/telemetry.md",
        ),
    ] = None,
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level", envvar="TETHER_LOG_LEVEL", help="The lowest level logged (default WARNING)."
        ),
    ] = None,
) -> None:
    if log_format or log_level:
        from ..errors import UsageError
        from ..telemetry import configure_logging

        try:
            configure_logging(log_format or "text", log_level or "WARNING")
        except UsageError as exc:
            raise typer.BadParameter(str(exc)) from exc
    ctx.obj = data_dir
    repl_options = model or agent or directory or continue_ or session or trust
    if ctx.invoked_subcommand is not None:
        if repl_options:
            raise typer.BadParameter(
                "--model, --agent, --dir, --continue, --session and --trust before a command are the interactive "
                f"session's; put them after it: tether {ctx.invoked_subcommand} --model ..."
            )
        return
    from ._repl import repl_command

    repl_command(
        data_dir=_data_dir(ctx),
        model=model,
        agent=agent,
        directory=directory,
        continue_=continue_,
        session_id=session,
        trust=trust,
        help_text=ctx.get_help,
    )


def _data_dir(ctx: typer.Context) -> Path:
    root = ctx.find_root()
    if isinstance(root.obj, Path):
        return root.obj
    from ..paths import default_data_dir

    return default_data_dir()


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
        from ._worker import run_temporal_command

        if continue_ or files or show_prompt or otel or whole_text:
            raise typer.BadParameter(
                "--temporal takes a prompt, --model, --agent, --dir, --session and the approval options"
            )
        run_temporal_command(
            data_dir=_data_dir(ctx),
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
    from ._run import run_command

    run_command(
        data_dir=_data_dir(ctx),
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
    from ._worker import worker_command

    worker_command(
        data_dir=_data_dir(ctx),
        temporal=temporal,
        task_queue=task_queue,
        roots=[d.expanduser().resolve() for d in directories or [Path.cwd()]],
        trust=trust,
        allow_test_models=allow_test_models,
        connection={"tls": tls, "api_key": api_key, "namespace": namespace},
    )


@app.command()
def trust(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Argument(metavar="[DIR]", help="The project to trust (default: the current directory)."),
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the trusted projects.")] = False,
    remove: Annotated[
        Path | None, typer.Option("--remove", metavar="DIR", help="Stop trusting the project at DIR.")
    ] = None,
) -> None:
    """Trust a project: apply its .tether/tether.json in full.

    An untrusted project's config may only tighten (deny/ask rules, disabled tools, lower limits); its provider,
    shell, allow rules and instruction files outside it are ignored with a warning. Trust is kept per project root
    (the exact directory, symlinks resolved) in the data directory.

    \b
    Examples:
      tether trust                      # the current directory
      tether trust ~/src/api
      tether trust --list
      tether trust --remove ~/src/api
    """
    from ._trust import trust_command

    trust_command(data_dir=_data_dir(ctx), directory=directory, list_=list_, remove=remove)


@app.command()
def demo(
    ctx: typer.Context,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Approve the demo's edit without prompting.")
    ] = False,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary project directory.")] = False,
) -> None:
    """Offline demo: a recorded model fixes a bug.

    Copies a sample project to a temporary directory and runs a real session on it (real tools, permissions,
    store) with a recorded model, then prints the timeline.

    \b
    Examples:
      tether demo
      tether demo --yes --keep
    """
    from ._demo import demo_command

    demo_command(data_dir=_data_dir(ctx), yes=yes, keep=keep)


@sessions_app.callback()
def sessions(
    ctx: typer.Context,
    directory: DirOption = None,
    all_: Annotated[bool, typer.Option("--all", help="Sessions of every directory.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many to list.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="The list as JSON, for machines.")] = False,
    owners: Annotated[
        bool,
        typer.Option(
            "--owners",
            help="List the open stores sharing the session store instead (workers, runs, servers): their heartbeat, "
            "PostgreSQL lease and lock, whether recovery counts them live, their claims and unfinished calls.",
        ),
    ] = False,
) -> None:
    """List sessions, newest first; prune old ones.

    Shows the short id, title, directory, last update and status (a `tether tool call` session is marked
    tool-call). Anywhere a session id is taken, its short id (6 digits) or a unique prefix of the id works too.

    \b
    Examples:
      tether sessions
      tether sessions --all -n 50
      tether sessions --json | jq -r '.[0].id'
      tether sessions prune --older-than 30d --dry-run
      tether sessions --owners
    """
    if ctx.invoked_subcommand is not None:
        return
    if owners:
        from ._owners import owners_command

        owners_command(data_dir=_data_dir(ctx), directory=directory, as_json=as_json)
        return
    from ._sessions import list_command

    list_command(data_dir=_data_dir(ctx), directory=directory, all_=all_, limit=limit, as_json=as_json)


@sessions_app.command("prune")
def sessions_prune(
    ctx: typer.Context,
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Delete sessions not updated for AGE (units s, m, h, d, w: 30d).",
        ),
    ],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be deleted.")] = False,
) -> None:
    """Delete the sessions (of every project) not updated for AGE, with their child sessions and outputs.

    A session a running tether holds is kept and named.

    \b
    Examples:
      tether sessions prune --older-than 30d --dry-run
      tether sessions prune --older-than 2w
    """
    from ._sessions import prune_command

    prune_command(data_dir=_data_dir(ctx), older_than=older_than, dry_run=dry_run)


@session_app.command("show")
def session_show(
    ctx: typer.Context,
    session_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[ID]",
            help="A short id (9f3c1a, as tether sessions lists it), a session id or a unique prefix of one "
            "(default: the latest session of this project).",
        ),
    ] = None,
    last: Annotated[
        bool, typer.Option("--last", help="The latest session of any project, instead of this one's.")
    ] = False,
    directory: DirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="The timeline as JSON, for machines.")] = False,
) -> None:
    """Show the timeline of one session (default: the latest of this project).

    User input, steps, text, tool calls with their permission decisions and deciding rules, outputs or errors,
    timings and retained output paths.

    \b
    Examples:
      tether session show                      # the latest conversation here
      tether session show --last               # the latest anywhere
      tether session show 9f3c1a               # a short id from tether sessions
      tether session show ses_0123... --json | jq '.timeline[] | select(.type == "tool")'
    """
    from ._sessions import show_command

    show_command(
        data_dir=_data_dir(ctx), session_id=session_id, as_json=as_json, last=last, directory=directory
    )


@session_app.command("export")
def session_export(
    ctx: typer.Context,
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="A short id, a session id (ses_...) or a unique prefix.")
    ],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to a file instead of stdout.")
    ] = None,
) -> None:
    """Export a session as one self-contained JSON document.

    \b
    Examples:
      tether session export ses_0123... -o session.json
    """
    from ._sessions import export_command

    export_command(data_dir=_data_dir(ctx), session_id=session_id, output=output)


@session_app.command("delete")
def session_delete(
    ctx: typer.Context,
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="A short id, a session id (ses_...) or a unique prefix.")
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a session: its messages, tool calls, child sessions and retained tool outputs.

    Asks first in a terminal (elsewhere pass --yes). A session a running tether holds is refused.

    \b
    Examples:
      tether session delete ses_0123
      tether session delete ses_0123... --yes
    """
    from ._sessions import delete_command

    delete_command(data_dir=_data_dir(ctx), session_id=session_id, yes=yes)


@app.command()
def tools(
    ctx: typer.Context,
    agent: AgentOption = None,
    directory: DirOption = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Apply this model's catalog rules (default: the config's model)."),
    ] = None,
    output_format: Annotated[
        str, typer.Option("--format", metavar="text|json", help="text: a table; json: one JSON object.")
    ] = "text",
) -> None:
    """Show an agent's tools for a model, where each comes from, and why any is hidden.

    \b
    Examples:
      tether tools
      tether tools --agent plan --model openai/gpt-5
      tether tools --format json | jq -r '.tools[] | select(.origin != "builtin") | .name'
    """
    from ._tools import tools_command

    tools_command(
        data_dir=_data_dir(ctx), agent=agent, directory=directory, model=model, output_format=output_format
    )


@app.command()
def models(
    ctx: typer.Context,
    directory: DirOption = None,
    remote: Annotated[
        bool,
        typer.Option(
            "--remote", help="Also ask hosted OpenAI-compatible providers (with a key set) for /models."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The list as JSON, for machines.")] = False,
) -> None:
    """List providers (built-in and configured) and their models.

    Shows each provider's API, URL and whether its key is set, the models tether knows for it, and what a local
    OpenAI-compatible server (Ollama, LM Studio, vLLM, llama.cpp, a configured 127.0.0.1 one) lists at /models.

    \b
    Examples:
      tether models
      tether models --remote --json | jq -r '.[] | select(.remote.models) | .id'
    """
    from ._models import models_command

    models_command(data_dir=_data_dir(ctx), directory=directory, remote=remote, as_json=as_json)


@app.command()
def doctor(
    ctx: typer.Context,
    directory: DirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="The report as JSON, for machines.")] = False,
) -> None:
    """Check this machine: the sandbox that holds bash's commands, rg, and the providers' keys.

    Shows the sandbox mechanism (bubblewrap, else Landlock, else none, and why), the writable roots and read-only
    paths of the project, the network mode, whether rg is installed, and each provider's key state. Exits 1 when
    sandbox.required is set and no sandbox can hold commands here (docs/sandbox.md).

    \b
    Examples:
      tether doctor
      tether doctor --json | jq .sandbox
    """
    from ._doctor import doctor_command

    doctor_command(data_dir=_data_dir(ctx), directory=directory, as_json=as_json)


@tool_app.command("call")
def tool_call(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The tool name, as the catalog lists it.")],
    input_json: Annotated[
        str, typer.Argument(metavar="JSON", help="The tool input as a JSON object.")
    ] = "{}",
    agent: AgentOption = None,
    directory: DirOption = None,
    yes: YesOption = False,
    deny_asks: DenyOption = False,
) -> None:
    """Call one tool through the full settle path.

    Decode, permissions at the point of action, execute, bound; prints the content the model would read.

    \b
    Examples:
      tether tool call read '{"filePath": "README.md"}'
      tether tool call bash '{"command": "ls"}' --yes
    """
    from ._tools import call_command

    call_command(
        data_dir=_data_dir(ctx),
        name=name,
        input_json=input_json,
        agent=agent,
        directory=directory,
        yes=yes,
        deny_asks=deny_asks,
    )


@permissions_app.callback()
def permissions(
    ctx: typer.Context,
    explain: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--explain", metavar="ACTION RESOURCE", help="Show which rule decides ACTION on RESOURCE."
        ),
    ] = None,
    agent: AgentOption = None,
    directory: DirOption = None,
) -> None:
    """Saved approvals, and which rule decides.

    Lists a project's saved approvals ("always" replies); --explain shows the rule that decides a request.

    \b
    Examples:
      tether permissions
      tether permissions --explain bash "git push origin main"
      tether permissions add bash "git status*"
      tether permissions remove sav_0123...
    """
    if ctx.invoked_subcommand is not None:
        return
    from ._permissions import explain_command, list_command

    if explain is not None:
        explain_command(
            data_dir=_data_dir(ctx), action=explain[0], resource=explain[1], agent=agent, directory=directory
        )
    else:
        list_command(data_dir=_data_dir(ctx), directory=directory)


@permissions_app.command("list")
def permissions_list(ctx: typer.Context, directory: DirOption = None) -> None:
    """List the saved approvals of a project."""
    from ._permissions import list_command

    list_command(data_dir=_data_dir(ctx), directory=directory)


@permissions_app.command("add")
def permissions_add(
    ctx: typer.Context,
    action: Annotated[str, typer.Argument(help="The permission action (edit, bash, read, ...).")],
    pattern: Annotated[str, typer.Argument(help="The resource pattern to allow (wildcards: * and ?).")],
    directory: DirOption = None,
) -> None:
    """Save an approval: ACTION on resources matching PATTERN is allowed from now on."""
    from ._permissions import add_command

    add_command(data_dir=_data_dir(ctx), action=action, pattern=pattern, directory=directory)


@permissions_app.command("remove")
def permissions_remove(
    ctx: typer.Context,
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="A saved approval id (see the list).")],
    directory: DirOption = None,
) -> None:
    """Remove one saved approval."""
    from ._permissions import remove_command

    remove_command(data_dir=_data_dir(ctx), approval_id=approval_id, directory=directory)


@mcp_app.command("list")
def mcp_list(
    ctx: typer.Context,
    directory: DirOption = None,
    output_format: Annotated[
        str, typer.Option("--format", metavar="text|json", help="text: a table; json: one JSON object.")
    ] = "text",
) -> None:
    """Connect the configured MCP servers and show each one's state, transport, tool count and error.

    Exit code 1 when a server failed.

    \b
    Examples:
      tether mcp list
      tether mcp list --format json | jq '.servers[] | select(.state != "connected")'
    """
    from ._mcp import list_command

    list_command(data_dir=_data_dir(ctx), directory=directory, output_format=output_format)


@mcp_app.command("tools")
def mcp_tools(
    ctx: typer.Context,
    server: Annotated[str, typer.Argument(help="The server's name in the config.")],
    directory: DirOption = None,
    output_format: Annotated[
        str, typer.Option("--format", metavar="text|json", help="text: a table; json: one JSON object.")
    ] = "text",
) -> None:
    """Show one MCP server's tools: the name the model sees, the server's own name, the description.

    \b
    Examples:
      tether mcp tools github
    """
    from ._mcp import tools_command

    tools_command(data_dir=_data_dir(ctx), directory=directory, server=server, output_format=output_format)


@app.command()
def serve(
    ctx: typer.Context,
    directory: DirOption = None,
    host: Annotated[
        str,
        typer.Option("--host", help="The address to listen on (default loopback; another one is warned)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port (0: a free one, printed).")] = 4096,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="The default model of prompts (provider/model).")
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--cors-origin", help="An exact origin whose pages may call the API (repeatable; no *)."
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="Another Host header value to serve, name:port (repeatable)."),
    ] = None,
) -> None:
    """Serve this project's sessions over HTTP: API, live events, and a web inspector at /.

    Every API route needs the bearer token printed at start (also stored 0600 in the data directory, or set
    $TETHER_SERVER_TOKEN). See docs/server.md.

    \b
    Examples:
      tether serve --dir ~/src/project --model openai/gpt-5
      tether serve --port 0
    """
    from ._serve import serve_command

    serve_command(
        data_dir=_data_dir(ctx),
        directory=directory,
        host=host,
        port=port,
        model=model,
        cors_origins=cors_origin or (),
        allow_hosts=allow_host or (),
    )


@mcp_app.command("serve")
def mcp_serve(
    ctx: typer.Context,
    directory: DirOption = None,
    agent: AgentOption = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP (bearer token required) instead of stdio.")
    ] = False,
    host: Annotated[
        str, typer.Option("--host", help="--http: the address to listen on (non-loopback: warned).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="--http: the port (0: a free one, printed).")] = 0,
) -> None:
    """Serve this project's tools to MCP clients, each call permissioned, bounded and recorded.

    The agent's catalog over stdio (the client starts this command) or streamable HTTP at /mcp. Each call runs
    through tether's full path and is recorded in the session "mcp: CLIENT" (see `tether session show`); a
    permission ask is put to the client's user through MCP elicitation, else answered by mcp_serve.ask (deny).

    \b
    Examples:
      tether mcp serve --dir ~/src/project
      tether mcp serve --http --port 8765
    """
    from ._mcp_serve import serve_command

    serve_command(data_dir=_data_dir(ctx), directory=directory, agent=agent, http=http, host=host, port=port)
