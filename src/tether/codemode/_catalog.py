"""The catalog transform: an agent with Code Mode on sees ``execute`` (and its pinned tools) instead of the catalog.

:class:`CodeMode` is what a turn calls after each step's materialize (``TurnContext.codemode``): for an agent
without Code Mode it returns the step's materialization unchanged (one dictionary lookup per step); for one with it,
a :class:`CodeModeStep` over it, made once per materialization (the registry caches those, so the same step state
gives the same object). Nothing of Code Mode runs for a turn whose runtime has no agent with ``codemode`` set: the
runtime then installs no transform at all.

``execute`` is not a registration (the name is reserved in the registries): the step's own registry is a private
placement over the turn's registry holding only ``execute``, so settle's stale check, hooks and output store work
for it as for any tool, and the pinned tools settle as direct calls of the step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..tools import ToolRegistry
from ..tools.internal import Entry, Materialization
from ._execute import build_execute
from ._settings import CodeModeSettings

if TYPE_CHECKING:
    from ..session import Sessions

__all__ = ["CodeMode", "CodeModeStep"]

_CACHE = 16


class _StepRegistry(ToolRegistry):
    """The turn's registry plus this step's ``execute`` (never registered anywhere: the name is reserved)."""

    def __init__(self, parent: ToolRegistry, execute: Entry) -> None:
        super().__init__(parent=parent)
        self._execute = execute

    def current(self, name: str) -> Entry | None:
        return self._execute if name == "execute" else super().current(name)


class CodeModeStep(Materialization):
    """A step's catalog reduced to ``execute`` and the pinned tools; ``full`` is what the code's calls settle on."""

    __slots__ = ("full",)

    def __init__(
        self, full: Materialization, registry: ToolRegistry, settings: CodeModeSettings, sessions: Any
    ) -> None:
        execute = Entry("execute", build_execute(full, settings, sessions), 0, "builtin")
        step_registry = _StepRegistry(registry, execute)
        captured: dict[str, Entry] = {"execute": execute}
        for name in settings.pinned:
            entry = registry.current(name)
            if entry is not None and full.tool(name) is entry.tool:
                captured[name] = entry
        super().__init__(
            registry=step_registry, captured=captured, final_step=full.final_step, rules=full.rules
        )
        # the pinned tools as the full step tells them (definition hooks applied); execute as it is built
        shown = tuple(d for d in full.definitions if d.name in captured)
        self.definitions = (execute.tool.definition("execute"), *shown)
        self.full = full


class CodeMode:
    """The per-agent Code Mode settings, as the transform a turn applies to each step's materialization.

    Args:
        agents: agent name → its settings (agents not named keep the plain catalog).
        sessions: where inner calls are recorded (``rt.sessions.service``); ``None``: not recorded.
    """

    __slots__ = ("_made", "_sessions", "agents")

    def __init__(self, agents: Mapping[str, CodeModeSettings], sessions: Sessions | None = None) -> None:
        self.agents = dict(agents)
        self._sessions = sessions
        self._made: dict[tuple[int, str], tuple[Materialization, CodeModeStep]] = {}

    @classmethod
    def from_config(cls, sections: object, sessions: Sessions | None = None) -> CodeMode | None:
        """From the config's ``agent`` section (``{name: {"codemode": true | {...}}}``); ``None`` when no agent
        has Code Mode on."""
        agents: dict[str, CodeModeSettings] = {}
        if isinstance(sections, Mapping):
            for name, section in sections.items():  # pyright: ignore[reportUnknownVariableType]
                if not isinstance(section, Mapping):
                    continue
                value: Any = section.get("codemode", False)  # pyright: ignore[reportUnknownMemberType]
                if isinstance(value, bool | Mapping):
                    settings = CodeModeSettings.from_config(value)  # pyright: ignore[reportUnknownArgumentType]
                    if settings is not None:
                        agents[str(name)] = settings  # pyright: ignore[reportUnknownArgumentType]
        return cls(agents, sessions) if agents else None

    def __call__(self, agent: str, full: Materialization, registry: ToolRegistry) -> Materialization:
        """The materialization the step runs with: ``full`` itself, or its Code Mode catalog for ``agent``."""
        settings = self.agents.get(agent)
        if settings is None:
            return full
        key = (id(full), agent)
        made = self._made.get(key)
        if made is not None and made[0] is full:
            return made[1]
        step = CodeModeStep(full, registry, settings, self._sessions)
        if len(self._made) >= _CACHE:
            self._made.clear()
        self._made[key] = (full, step)
        return step
