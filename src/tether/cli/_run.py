"""``tether run``: open or continue a session in a project and run one turn with the built-in tools."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import typer

from ..content import Content, Text
from ..errors import ProviderAuthError, UsageError
from ..storable import printable
from ._approve import ApprovalMode
from ._common import Output, fail, freeze_startup, opened, run_async, stdin_is_terminal

if TYPE_CHECKING:
    from ._turn import OutputFormat

__all__ = ["approval_mode", "open_session", "run_command", "turn_system"]


def approval_mode(*, yes: bool, deny_asks: bool) -> tuple[ApprovalMode, str]:
    """The approval mode and, for ``deny``, why (shown when a request is rejected)."""
    if yes and deny_asks:
        fail("--yes and --deny-asks contradict each other; pass one of them")
    if yes:
        return "yes", ""
    if deny_asks:
        return "deny", "--deny-asks"
    if stdin_is_terminal():
        return "ask", ""
    return "deny", "no terminal to ask"


def project_dir(directory: Path | None) -> Path:
    path = (directory or Path.cwd()).expanduser().resolve()
    if not path.is_dir():
        fail(f"--dir {path} is not a directory")
    return path


async def open_session(rt: Any, location: Any, *, session_id: str | None, continue_: bool, agent: str) -> Any:
    """The session to prompt: ``--session ID`` (a short id, or a unique prefix of the id), the latest conversation of
    the project for ``--continue`` (never a ``tether tool call`` session, never a child session), or a new one.

    The session is claimed for this process until it exits (one session, one writer): another ``tether run`` on it
    meanwhile is refused.

    Raises:
        NotFoundError: ``--session`` names no session.
        UsageError: ``--session`` is an ambiguous prefix, ``--continue`` found no conversation in this project, or a
            live process runs the session (``session ses_… is busy (pid N)``).
    """
    if session_id is not None:
        from ._shortid import resolve_session

        found = await resolve_session(rt.store, session_id)  # before anything is claimed
        await rt.store.claim(found.id)
        return await rt.sessions.get(found.id)
    if continue_:
        from ..errors import UsageError

        latest = await rt.store.latest_session(project=str(location.root))
        if latest is None:
            raise UsageError(
                f"no session to continue in {location.root} (`tether tool call` sessions are skipped): "
                'start one with `tether run "..."`'
            )
        await rt.store.claim(latest.id)
        return await rt.sessions.get(latest.id)
    session = await rt.sessions.create(location, agent=agent)
    await rt.store.claim(session.id)
    return session


def _output(output_format: str, quiet: bool, whole: bool = False) -> OutputFormat:
    if output_format not in ("text", "json"):
        fail(f"--format {output_format!r}: use text (the default) or json")
    if quiet and output_format == "json":
        fail("--quiet and --format json contradict each other; pass one of them")
    if whole and output_format != "json":
        fail("--whole-text goes with --format json (the text view prints whole lines already)")
    return "quiet" if quiet else "json" if output_format == "json" else "text"


def _user_input(prompt: str | None, files: Sequence[Path]) -> str | list[Content]:
    """The turn's input: the prompt (argument, stdin or both) and the ``-f`` files (exit 2 on bad input)."""
    from ._attach import attach_files, compose_prompt, read_stdin, stdin_is_piped

    try:
        # no prompt argument: stdin unless it is a terminal; with one: stdin only when something is piped in
        if sys.stdin is None:  # started with fd 0 closed: there is no stdin to read
            piped = False
        else:
            piped = (not sys.stdin.isatty()) if prompt in (None, "-") else stdin_is_piped()
        text = compose_prompt(prompt, read_stdin() if piped else None)
        if not files:
            return text
        return [Text(text), *attach_files(files, Path.cwd())]
    except UsageError as exc:
        fail(exc.message)


async def turn_system(
    rt: Any, location: Any, config: Any, session: Any, model: Any
) -> tuple[Any, Sequence[str]]:
    """The instruction files (``Instructions``: print what was refused) and the system texts of a turn of
    ``session`` with ``model`` (shared by ``tether run`` and the interactive session)."""
    from ..config import load_instructions

    readable = rt.readable(session.info.agent)  # the files the project names pass the agent's read rules
    extra = tuple(location.mcp.instruction_texts()) if location.mcp else ()
    found: list[Any] = []

    def read() -> Sequence[str]:
        # run in the worker thread that measures the turn's environment: one hand-off for both, not two
        instructions = load_instructions(location.location, config, readable=readable)
        found.append(instructions)
        return (*instructions.texts, *extra)

    system = await rt.sessions.service.system_prompt(
        location,
        agent=session.info.agent,
        model=model.name,
        directory=session.info.directory,
        instructions=read,
    )
    return found[-1], system


def run_command(
    *,
    data_dir: Path,
    prompt: str | None,
    model: str | None,
    agent: str | None,
    directory: Path | None,
    continue_: bool,
    session_id: str | None,
    yes: bool,
    deny_asks: bool,
    trust: bool = False,
    show_prompt: bool = False,
    output_format: str = "text",
    quiet: bool = False,
    files: Sequence[Path] = (),
    otel: bool = False,
    whole_text: bool = False,
) -> None:
    """The body of ``tether run`` (exits with the turn's code; ``show_prompt``: prints the system texts, exits 0)."""
    if continue_ and session_id:
        fail("--continue and --session contradict each other; pass one of them")
    mode, why = approval_mode(yes=yes, deny_asks=deny_asks)
    path = project_dir(directory)
    output = _output(output_format, quiet, whole_text)
    content = _user_input(prompt, files) if not show_prompt else ""

    async def main() -> int:
        from ..llm.internal import find_price
        from ..telemetry import export_from_config
        from ._console import print_notices
        from ._models import choose_model
        from ._preview import Preview
        from ._toolview import TerminalSettings
        from ._trust import print_refused, project_config
        from ._turn import drive_turn, print_summary, write_done

        # The trust question (a terminal, an untrusted project whose file sets what it may not) is asked only when
        # permission asks are too: --deny-asks and a pipe never prompt.
        config = await anyio.to_thread.run_sync(
            lambda: project_config(data_dir, path, trust=trust, ask=mode == "ask" and not show_prompt)
        )
        if show_prompt:
            from ._show_prompt import show_prompt as show

            return await show(
                data_dir=data_dir,
                config=config,
                path=path,
                model=model,
                agent=agent,
                session_id=session_id,
                continue_=continue_,
            )
        try:
            chosen = choose_model(model, config.data)
        except ProviderAuthError as exc:
            fail(exc.message)
        console = Output()  # rich draws on a terminal; a pipe gets the lines' text and never loads rich
        export_from_config(config.data, force=otel)  # telemetry: --otel or config telemetry.otlp_endpoint
        # the model's SDK client is closed after the runtime (its connections: a caller's loop may go on)
        async with aclosing(chosen), opened(data_dir, config) as rt:
            location = await rt.location(path)
            print_notices(location.notices)  # skipped plugins and project tool files, said once
            name = agent or config.get("default_agent") or "build"
            session = await open_session(rt, location, session_id=session_id, continue_=continue_, agent=name)
            instructions, system = await turn_system(rt, location, config, session, chosen)
            print_refused(instructions)
            freeze_startup()
            settings = TerminalSettings.from_config(config.data)  # --quiet has no live view: no diff, no tail
            outcome = await drive_turn(
                session=session,
                bus=rt.bus,
                permissions=rt.permissions,
                questions=rt.questions,
                prompt=content,
                output=output,
                continued=session_id is not None or continue_,
                model=chosen,
                approval=mode,
                why_deny=why,
                console=console,
                system=system,  # the same texts `--show-prompt` prints
                price=find_price(chosen.provider, chosen.model_id, config.data),
                preview=Preview(location=location.location, sandbox=rt.sandbox, settings=settings),
                whole=whole_text,
            )
            # The turn is done only once the store has it: a refused write fails the run (one line, exit 1).
            await rt.store.flush()
            if output == "quiet":
                from ._jsonevents import final_text

                text = final_text(await session.messages())
                if text and sys.stdout.isatty():
                    # a terminal obeys the escapes the model wrote (title, clear screen): shown as text mode shows
                    # them; a pipe gets the exact text, which scripts need
                    text = printable(text, lines=True)
                if text:
                    sys.stdout.write(text if text.endswith("\n") else text + "\n")
        if output == "json":
            write_done(outcome, session.id)
        elif output == "quiet":
            if outcome.error is not None:
                Output(stderr=True).line(
                    (printable(f"✗ the turn failed: {outcome.error}", lines=True), "red")
                )
        else:
            print_summary(console if console.is_terminal else Output(stderr=True), outcome, session.id)
        return outcome.code

    raise typer.Exit(run_async(main))
