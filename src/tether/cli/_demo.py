"""``tether demo``: the offline main job. A real session, through the real runtime, store and tools, on a copy of the
sample project, with a recorded model (:class:`tether.demo.ReplayModel`), then the session's timeline.

The sample project's ``.tether/tether.json`` makes edits ask, so the demo shows an approval at the point of action:
on a terminal you answer it; without one (CI, a pipe) or with ``--yes`` the demo approves it once and says so.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import anyio.to_thread
import typer
from rich.constrain import Constrain
from rich.rule import Rule
from rich.text import Text

from ._common import Output, opened, out_console, run_async, stdin_is_terminal

__all__ = ["demo_command"]

RECORDING_NOTICE = (
    "The model in this demo is a RECORDING: a replayed transcript of an agent fixing this project, not a live "
    "model. The tools, permissions, output bounding and the session store it went through are real."
)
REAL_MODEL_HINT = """\
To use a real model:
  export OPENAI_API_KEY=...     && tether run --model openai/gpt-5 "fix the failing test"
  export ANTHROPIC_API_KEY=...  && tether run --model anthropic/claude-sonnet-4-5 "fix the failing test"
  a local OpenAI-compatible server (Ollama):  tether run --model ollama/qwen3:8b "fix the failing test"
Set a default with {"model": "openai/gpt-5"} in .tether/tether.json."""


def _rule(title: str = "") -> Constrain:
    return Constrain(Rule(title), width=100)


def demo_command(*, data_dir: Path, yes: bool, keep: bool) -> None:
    """The body of ``tether demo``."""
    from ..demo import DEMO_PROMPT, ReplayModel, copy_sample_project

    console = out_console()
    workdir = Path(tempfile.mkdtemp(prefix="tether-demo-"))
    project = copy_sample_project(workdir / "pricing")
    if yes:
        mode, note = "yes", "--yes: the demo's edit is approved once without asking"
    elif stdin_is_terminal():
        mode, note = (
            "ask",
            "you will be asked to approve the edit (edits ask in this project's .tether/tether.json)",
        )
    else:
        mode, note = (
            "yes",
            "no terminal: the demo approves its edit once by itself (run in a terminal to be asked)",
        )

    console.print(_rule("tether demo"))
    console.print(Text(RECORDING_NOTICE, style="yellow"))
    console.print(Text(f"project: {project} (a copy of the sample project)", style="dim"))
    console.print(Text(f"approvals: {note}", style="dim"))
    console.print(Text("user › ", style="cyan bold") + Text(DEMO_PROMPT))
    console.print()

    async def main() -> tuple[int, str, object, object]:
        from ..config import load_instructions
        from ._preview import Preview
        from ._trust import print_refused, project_config
        from ._turn import drive_turn, print_summary

        # The demo wrote this project itself: trusted for this run (not saved in the trust store).
        config = await anyio.to_thread.run_sync(lambda: project_config(data_dir, project, trust=True))
        async with opened(data_dir, config) as rt:
            location = await rt.location(project)
            session = await rt.sessions.create(location, agent="build")
            instructions = await anyio.to_thread.run_sync(load_instructions, location.location, config)
            print_refused(instructions)
            outcome = await drive_turn(
                session=session,
                bus=rt.bus,
                permissions=rt.permissions,
                questions=rt.questions,
                prompt=DEMO_PROMPT,
                model=ReplayModel(),
                approval=mode,
                why_deny="",
                console=Output(console=console),
                system=instructions.texts,
                preview=Preview(location=location.location, sandbox=rt.sandbox),
            )
            print_summary(Output(console=console), outcome, session.id)
            info = await rt.store.get_session(session.id)
            messages = await rt.store.load_messages(session.id)
        return outcome.code, session.id, info, messages

    try:
        code, session_id, info, messages = run_async(main)
        from ._timeline import print_timeline

        console.print()
        console.print(_rule(f"timeline (tether session show {session_id})"))
        print_timeline(console, info, messages)  # pyright: ignore[reportArgumentType]
        console.print()
        console.print(_rule())
        console.print(Text(RECORDING_NOTICE, style="yellow"))
        console.print(REAL_MODEL_HINT)
        console.print(
            Text(
                f"Inspect this run again: tether session show {session_id}  (or --json, or tether session export)",
                style="dim",
            )
        )
    finally:
        if keep:
            console.print(Text(f"kept the project at {project}", style="dim"))
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    raise typer.Exit(code)
