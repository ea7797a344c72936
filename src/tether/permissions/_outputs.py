"""The reading exemption for retained tool outputs: a session reads its own full outputs without asking.

A bounded result points at the full text retained under the session's own directory of the output store
(``<data>/tool-output/<session>/``). The rules resolver appends :func:`retained_output_rules` for a session after
its agent's layers (so after the config's rules): ``external_directory`` on that directory (and on its ancestor
sessions' directories) is allowed. Nothing else under the data directory is: another session's outputs, another
project's, the session store and the trust file ask ``external_directory`` like any path outside the project.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._agents import Agent
from ._ruleset import Ruleset
from ._types import Rule

__all__ = ["retained_output_rules"]


def retained_output_rules(agent: Agent, directories: Sequence[str], *, root: str) -> Ruleset | None:
    """The ``external_directory`` allows for a session's retained outputs, or ``None`` when the config denies them.

    Args:
        agent: the session's agent; when its configured rules deny ``external_directory`` on ``<root>/*`` exactly
            (an explicit opt-out of reading retained outputs), nothing is allowed.
        directories: the session's output directory, then its ancestor sessions' (absolute, ``/`` separators).
        root: the output store's directory (``<data>/tool-output``).
    """
    opt_out = f"{root.rstrip('/')}/*"
    if any(
        r.action == "external_directory" and r.resource == opt_out and r.effect == "deny" for r in agent.rules
    ):
        return None
    rules = tuple(
        Rule("external_directory", f"{d.rstrip('/')}/*", "allow") for d in dict.fromkeys(directories)
    )
    return Ruleset(source="session", rules=rules)
