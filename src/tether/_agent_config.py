"""An agent's configured settings: the ``agent.<name>`` section of ``tether.json`` as a record (:class:`AgentConfig`).

``tether.config`` builds it from the checked file and ``tether.permissions`` layers it onto the built-in agents; it
lives here, below both, because ``config`` must not import ``permissions`` (it only turns files into rules) and
``permissions`` stands below ``config`` (the gates floor). ``tether.config`` re-exports both names, the ones users
see.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, Literal

from ._record import record
from .rules import Rule

__all__ = ["AgentConfig", "AgentMode"]

AgentMode = Literal["primary", "subagent", "all"]
"""Where an agent may run: as the session's own agent (``primary``), as a ``task`` subagent, or both (``all``)."""


@record
class AgentConfig:
    """The ``agent.<name>`` section. ``None`` means "not set": the built-in agent's own value stays."""

    name: str
    permission: tuple[Rule, ...] = ()
    project_permission: tuple[Rule, ...] = ()
    mode: AgentMode | None = None
    steps: int | None = None
    prompt: str | None = None
    hidden: bool | None = None
    disable: bool = False
    description: str | None = None
    model: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict[str, Any])
