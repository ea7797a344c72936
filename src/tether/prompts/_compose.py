"""The system texts of a request, in order: the base text, the environment block, then the instruction texts.

One function builds them for every path (``tether run``, ``--show-prompt``, a session prompted without ``system``),
so what ``--show-prompt`` prints is what the model receives.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime

from ._environment import GIT_TIMEOUT, Environment, measure_environment, render_environment
from ._texts import base_prompt

__all__ = ["compose", "format_system", "server_instructions", "system_prompt"]


def compose(
    *, agent: str, environment: Environment, instructions: Sequence[str] = (), prompt: str | None = None
) -> tuple[str, ...]:
    """The system texts for an agent in a measured environment (pure).

    Args:
        agent: the agent's name (picks the built-in base text).
        environment: the measured environment; its ``model`` also picks the family note.
        instructions: the instruction texts (``AGENTS.md`` and the config's ``instructions``), sent last.
        prompt: the agent's configured prompt, which replaces the built-in base text.
    """
    return (
        base_prompt(agent, environment.model, prompt=prompt),
        render_environment(environment),
        *instructions,
    )


async def system_prompt(
    *,
    agent: str,
    model: str,
    root: str | os.PathLike[str],
    directory: str | os.PathLike[str],
    instructions: Sequence[str] = (),
    prompt: str | None = None,
    now: datetime | None = None,
    git_timeout: float = GIT_TIMEOUT,
    trusted: bool = False,
) -> tuple[str, ...]:
    """Measure the environment and return the system texts: base text, environment block, instruction texts.

    Args:
        agent: the agent's name (``build``, ``plan``, ``explore``, or a custom one: the coding text).
        model: ``provider/model`` (shown in the block; picks the family note of the coding text).
        root: the project root.
        directory: the working directory.
        instructions: the instruction texts, sent after the block.
        prompt: the agent's configured ``prompt``: replaces the built-in base text.
        now: the date to show (default: today, local time).
        git_timeout: seconds ``git status`` may take.
        trusted: the user trusts the project: its filter drivers run in ``git status`` (git-lfs). Otherwise (the
            default) every program a repository's git config names is blanked too (``_environment``).
    """
    environment = await measure_environment(
        root=root, directory=directory, model=model, now=now, git_timeout=git_timeout, trusted=trusted
    )
    return compose(agent=agent, environment=environment, instructions=instructions, prompt=prompt)


def format_system(texts: Sequence[str]) -> str:
    """The texts as one document for a person: each under a ``── system text N of M ──`` rule, in order."""
    total = len(texts)
    return "\n\n".join(f"── system text {n} of {total} ──\n{text}" for n, text in enumerate(texts, 1)) + "\n"


def server_instructions(server: str, text: str) -> str:
    """An MCP server's ``instructions`` as an instruction text (sent after the project's): the server named, so the
    model knows whose advice it reads (a server is configured by the user; its text advises on its own tools)."""
    return f'Instructions from the MCP server "{server}" (about its tools, named {server}_*):\n{text.strip()}'
