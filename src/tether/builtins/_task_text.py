"""The ``task`` tool's description, listing the subagents (``task`` builds it; ``_deferred`` registers the tool with it
before ``task`` is imported)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..session.internal import Subagent

__all__ = ["DESCRIPTION", "describe"]

DESCRIPTION = """Launch a subagent to handle a complex, multi-step task on its own, in a separate session.

- `subagent_type` picks the subagent (the list below); `prompt` is its complete task: it sees nothing of this \
conversation, so say exactly what to do and what to report back.
- `description` is a short (3-5 words) summary of the task.
- The subagent's final message comes back as this tool's result; the user does not see it, so summarize what \
matters for them.
- Launch several tasks in one message to run them in parallel.
- To continue a finished task (a follow-up for the same subagent, with its context), pass the `task_id` the \
result named; without `task_id` a new session starts.
- Do not use it for a single file read or a search you can do yourself with one call."""

_NO_SUBAGENTS = "No subagents are available to this agent: the task tool will refuse every call."


def describe(agents: Sequence[Subagent]) -> str:
    """The tool's description listing ``agents`` (OpenCode's ``- <name>: <description>`` lines, sorted)."""
    if not agents:
        return f"{DESCRIPTION}\n\n{_NO_SUBAGENTS}"
    lines = "\n".join(f"- {a.name}: {a.description}" for a in sorted(agents, key=lambda a: a.name))
    return f"{DESCRIPTION}\n\nAvailable agent types and the tools they have access to:\n{lines}"
