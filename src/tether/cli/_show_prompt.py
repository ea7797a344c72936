"""``tether run --show-prompt``: print the exact system texts a run would send, without calling the model.

The texts come from the function the run itself uses (``Sessions.system_prompt``), with the same agent, model id,
directory, config and instruction files; no session is created or claimed and no provider is called. The model is
only named: a provider whose API key is not set still shows its prompt. Printed on stdout, each text under a
``── system text N of M ──`` rule; control characters (an escape sequence in an ``AGENTS.md``) are shown as escapes,
never sent to the terminal.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from ..errors import ProviderAuthError
from ._common import opened

__all__ = ["show_prompt"]


def _model_name(model: str | None, config: Any) -> str:
    """``provider/model`` of the run's model, checked as a run checks it (a missing key is not an error here)."""
    from ._models import choose_model

    try:
        return choose_model(model, config.data).name
    except ProviderAuthError:
        return str(
            model or config.get("model")
        )  # choose_model checked the spelling before asking for the key


async def _stored(rt: Any, location: Any, *, session_id: str | None, continue_: bool) -> Any:
    """The stored session the run would continue (``None``: a new one), read without claiming it."""
    if session_id is not None:
        return await rt.store.resolve_session(session_id)
    if continue_:
        return await rt.store.latest_session(project=str(location.root))
    return None


async def show_prompt(
    *,
    data_dir: Path,
    config: Any,
    path: Path,
    model: str | None,
    agent: str | None,
    session_id: str | None,
    continue_: bool,
) -> int:
    """Print the system texts of the run these options describe; returns the exit code (0).

    Raises:
        UsageError: no model was chosen, the agent does not exist, or ``--session`` is ambiguous.
        NotFoundError: ``--session`` names no session.
    """
    from ..config import load_instructions
    from ..prompts import format_system
    from ..storable import printable
    from ._trust import print_refused

    name = _model_name(model, config)
    async with opened(data_dir, config) as rt:
        location = await rt.location(path)
        stored = await _stored(rt, location, session_id=session_id, continue_=continue_)
        chosen = stored.agent if stored is not None else agent or config.get("default_agent") or "build"
        readable = rt.readable(chosen)  # the files the project names pass the agent's read rules
        instructions = await anyio.to_thread.run_sync(
            lambda: load_instructions(location.location, config, readable=readable)
        )
        print_refused(instructions)
        texts = await rt.sessions.service.system_prompt(
            location,
            agent=chosen,
            model=name,
            directory=stored.directory if stored is not None else None,
            instructions=(*instructions.texts, *(location.mcp.instruction_texts() if location.mcp else ())),
        )
    sys.stdout.write(printable(format_system(texts), lines=True))
    sys.stdout.flush()
    return 0
