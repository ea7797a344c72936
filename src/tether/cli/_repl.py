"""``tether`` with no command in a terminal: an interactive session, many turns in one process.

One Runtime and one Location serve the whole process; one session is claimed at a time (created at the first
message, or ``--continue`` / ``--session`` / ``/resume``). Each turn is ``tether run``'s turn (``_turn.drive_turn``:
the live view, approvals asked inline by ``_approve``, ^C cancels the turn) with :class:`~._repl_view.ReplView`
for a spinner and markdown; prompt-toolkit reads the next input only between turns (``_repl_input``), so the two
never read the terminal at the same time. The session's state and its turns are
:class:`~._repl_session.Repl`; the slash commands that change it live in ``_repl_commands``; this module reads
the input and sends each line to one or the other.

After each turn a line gives the turn's steps, tool calls, tokens, its cost in dollars where the model's price is
known (``llm._pricing``), the session's cost so far and the time. Ctrl-C at an empty prompt asks for a second one,
which exits with code 0, as Ctrl-D and ``/exit`` do; a second ^C *during* a turn exits at once with 130 (as in
``tether run``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import typer

from ..errors import ConfigError, NotFoundError, ProviderAuthError, TetherError, UsageError
from ._common import CANCELLED, OK, fail, freeze_startup, opened, out_console, run_async, stdin_is_terminal
from ._repl_session import Repl

__all__ = ["repl_command"]


def _shown_error(exc: BaseException) -> TetherError | None:
    """The user-fixable error inside ``exc`` (a task group wraps what a turn raises), else ``None``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, UsageError | NotFoundError | ConfigError | ProviderAuthError) else None


async def _loop(repl: Repl, read: Callable[[str], Any]) -> int:
    from ._repl_commands import slash

    interrupted = False
    while True:
        prompt = f"{repl.agent} › "
        try:
            line: str = await read(prompt)
        except KeyboardInterrupt:
            if interrupted:
                return OK
            interrupted = True
            repl.note("(Ctrl-C again or Ctrl-D to exit)")
            continue
        except EOFError:
            return OK
        interrupted = False
        text = line.strip()
        if not text:
            continue
        try:
            if text.startswith("/") and not text.startswith("//"):
                if not await slash(repl, text):
                    return OK
            else:
                await repl.turn(text.removeprefix("/") if text.startswith("//") else text)
        except Exception as exc:
            # only the user-fixable ones are shown; a StoreError or a defect ends the session
            error = _shown_error(exc)
            if error is None:
                raise
            repl.note(f"error: {error.message}", "red")


def repl_command(
    *,
    data_dir: Path,
    model: str | None,
    agent: str | None,
    directory: Path | None,
    continue_: bool,
    session_id: str | None,
    trust: bool,
    help_text: Callable[[], str],
) -> None:
    """The body of a bare ``tether``: the interactive session in a terminal, else the help (exit code 2)."""
    if not stdin_is_terminal():
        typer.echo(help_text(), err=True)
        raise typer.Exit(2)
    if continue_ and session_id:
        fail("--continue and --session contradict each other; pass one of them")
    from ._run import project_dir

    path = project_dir(directory)

    async def main() -> int:
        from ._console import print_notices
        from ._repl_commands import COMMANDS, banner
        from ._repl_input import HISTORY_FILE, HistoryFile, prompt_session
        from ._run import open_session
        from ._trust import project_config

        kept: list[str] = []  # what was typed before or at the trust question: the first prompt's text
        config = await anyio.to_thread.run_sync(
            lambda: project_config(data_dir, path, trust=trust, ask=True, kept=kept)
        )
        console = out_console()
        async with opened(data_dir, config) as rt:
            location = await rt.location(path)
            freeze_startup()
            print_notices(location.notices)  # skipped plugins and project tool files, said once
            name = agent or config.get("default_agent") or "build"
            if name not in rt.agents:
                raise UsageError(f"no agent {name!r}: use one of {', '.join(sorted(rt.agents))}")
            repl = Repl(rt=rt, location=location, config=config, console=console, agent=name)
            try:
                repl.choose_model(model)
            except (UsageError, ProviderAuthError) as exc:  # the session opens; /model fixes it
                repl.note(exc.message, "yellow")
            resumed: Sequence[Any] = ()
            if continue_ or session_id:
                resumed = await repl.use_session(
                    await open_session(rt, location, session_id=session_id, continue_=continue_, agent=name)
                )
            history = HistoryFile(data_dir / HISTORY_FILE)
            reader = prompt_session(history, sorted(COMMANDS))
            banner(repl)
            repl.show_history(resumed)

            warned: list[str] = []

            repl.draft = "\n".join(kept)
            if repl.draft:
                repl.note("your message is at the prompt: Enter sends it")

            async def read(prompt: str) -> str:
                draft, repl.draft = repl.draft, ""
                line = await reader.prompt_async(prompt, default=draft)
                if history.broken is not None and not warned:
                    warned.append(history.broken)  # said once
                    repl.note(f"history off: {history.broken}", "yellow")
                return line

            try:
                return await _loop(repl, read)
            finally:
                await repl.models.aclose()

    try:
        code = run_async(main)
    except KeyboardInterrupt:  # ^C between a turn and the next prompt (no handler of ours was listening)
        code = CANCELLED
    raise typer.Exit(code)
