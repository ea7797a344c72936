"""Catalog transforms: small wrappers around what ``materialize`` advertises, never flags threaded through it.

Two transforms live here, both applied at every step's materialize (law 5), so a change shows at the next step:

- :class:`ModelCatalog`: the per-model catalog rules (config ``catalog.models``). ``for_model(name)`` gives the
  ``visible`` predicate ``materialize`` takes; it is one object per model name, so materializations stay cached.
- :func:`apply_definition_hooks`: OpenCode's ``tool.definition`` hook, run over the visible definitions.

Hiding a tool from one model is visibility only (law 4), like permission-based hiding: a leaf still asks.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .._record import record
from .._wildcard import match
from ._hooks import DefinitionEvent, DefinitionHook
from ._tool import ToolDefinition

__all__ = ["DEFAULT_MODEL_RULES", "CatalogRule", "ModelCatalog", "apply_definition_hooks"]


@record
class CatalogRule:
    """For models whose ``provider/model`` name matches ``model``: show (``True``) or hide (``False``) each tool
    whose effective name matches a key of ``tools`` (wildcards both)."""

    model: str
    tools: tuple[tuple[str, bool], ...]


DEFAULT_MODEL_RULES: tuple[CatalogRule, ...] = (
    # OpenCode's "patch models": the model id contains "gpt-" and neither "oss" nor "gpt-4" (registry.ts). They get
    # apply_patch (the format they were trained on) and not edit/write; every other model the reverse.
    CatalogRule(model="*", tools=(("apply_patch", False),)),
    CatalogRule(model="*gpt-*", tools=(("apply_patch", True), ("edit", False), ("write", False))),
    CatalogRule(model="*gpt-4*", tools=(("apply_patch", False), ("edit", True), ("write", True))),
    CatalogRule(model="*oss*", tools=(("apply_patch", False), ("edit", True), ("write", True))),
)
"""The built-in layer, before the config's rules (which win, being later)."""


class ModelCatalog:
    """The per-model catalog rules: the last rule whose model pattern and tool pattern both match decides; a tool no
    rule names is shown.

    Args:
        rules: the rules in order (usually :data:`DEFAULT_MODEL_RULES` followed by the config's).
    """

    __slots__ = ("_filters", "rules")

    def __init__(self, rules: Sequence[CatalogRule] = DEFAULT_MODEL_RULES) -> None:
        self.rules = tuple(rules)
        self._filters: dict[str, Callable[[Any], bool] | None] = {}

    @classmethod
    def from_config(cls, value: object) -> ModelCatalog:
        """The built-in rules followed by the config's ``catalog.models`` (``{model pattern: {tool pattern: bool}}``,
        already checked by the config models; anything else adds nothing)."""
        extra: list[CatalogRule] = []
        if isinstance(value, Mapping):
            models: object = value.get("models")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(models, Mapping):
                for pattern, tools in models.items():  # pyright: ignore[reportUnknownVariableType]
                    if isinstance(pattern, str) and isinstance(tools, Mapping):
                        shown = tuple(
                            (str(k), v)  # pyright: ignore[reportUnknownArgumentType]
                            for k, v in tools.items()  # pyright: ignore[reportUnknownVariableType]
                            if isinstance(v, bool)
                        )
                        if shown:
                            extra.append(CatalogRule(model=pattern, tools=shown))
        if not extra and cls is ModelCatalog:
            return (
                _DEFAULT  # no config rules: the process's one catalog, its predicates already made (issue 38)
            )
        return cls((*DEFAULT_MODEL_RULES, *extra))

    def decide(self, model: str, tool: str) -> bool | None:
        """Whether the rules show (``True``) or hide (``False``) ``tool`` for ``model``; ``None``: no rule names it."""
        found = self.deciding(model, tool)
        return None if found is None else found[2]

    def deciding(self, model: str, tool: str) -> tuple[int, str, bool] | None:
        """The rule that decides ``tool`` for ``model``: its index in :attr:`rules`, the tool pattern that matched and
        whether it shows the tool; ``None`` when no rule names it (``tether tools`` explains hiding with it)."""
        for index in range(len(self.rules) - 1, -1, -1):
            rule = self.rules[index]
            if not match(model, rule.model):
                continue
            for pattern, shown in reversed(rule.tools):
                if match(tool, pattern):
                    return index, pattern, shown
        return None

    def for_model(self, model: str) -> Callable[[Any], bool] | None:
        """The ``visible`` predicate of ``materialize`` for ``model`` (an ``Entry`` → shown), or ``None`` when no rule
        can hide anything from it. The same object for the same name, so a step's materialization is reused."""
        if model in self._filters:
            return self._filters[model]
        relevant = tuple(
            (pattern, shown)
            for rule in self.rules
            if match(model, rule.model)
            for pattern, shown in rule.tools
        )
        # entries before the last {"*": true} are overridden for every tool
        last_all = max((i for i, (p, shown) in enumerate(relevant) if p == "*" and shown), default=-1)
        found: Callable[[Any], bool] | None = None
        if any(not shown for _, shown in relevant[last_all + 1 :]):
            cache: dict[str, bool] = {}

            def visible(entry: Any) -> bool:
                name: str = entry.name
                decided = cache.get(name)
                if decided is None:
                    # :meth:`decide` over the rules whose model pattern matched already: the last naming it wins
                    decided = True
                    for pattern, shown in reversed(relevant):
                        if match(name, pattern):
                            decided = shown
                            break
                    cache[name] = decided
                return decided

            found = visible
        if len(self._filters) >= 64:  # a long-running server with many model names: stay bounded
            self._filters.clear()
        self._filters[model] = found
        return found


_DEFAULT = ModelCatalog()
"""The catalog of every runtime whose config adds no rule: its per-model predicates and their decisions are made once
per process, not at the first step of each runtime."""


def apply_definition_hooks(
    definitions: tuple[ToolDefinition, ...], hooks: tuple[DefinitionHook, ...]
) -> tuple[ToolDefinition, ...]:
    """Run every definition hook, in order, over each definition; return the definitions the model is told.

    Each hook sees a copy of the input schema, so a hook that edits it in place changes this catalog only. A value a
    hook sets that is not a string description or an object schema is not used (the tool keeps its own).

    Raises:
        Exception: whatever a hook raises (a defect of the application that registered it; plugins' hooks are
            wrapped by ``tether.plugins``, which reports and skips a failing one).
    """
    out: list[ToolDefinition] = []
    for definition in definitions:
        event = DefinitionEvent(
            tool=definition.name,
            description=definition.description,
            input_schema=copy.deepcopy(dict(definition.input_schema)),
        )
        for hook in hooks:
            hook(event)
        description: object = event.description
        schema: object = event.input_schema
        out.append(
            replace(
                definition,
                description=description if isinstance(description, str) else definition.description,
                input_schema=schema if isinstance(schema, dict) else definition.input_schema,  # pyright: ignore[reportUnknownArgumentType]
            )
        )
    return tuple(out)
