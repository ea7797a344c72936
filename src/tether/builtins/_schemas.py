"""The built-in tools' schemas, committed: a run shows them to the model without generating them (issue 38).

Every step tells the model each tool's JSON Schema, so a built-in tool's codec needs its schema when it is built,
once per Location. Generating it from the pydantic model (``TypeAdapter.json_schema``, then ``simplify_schema``) cost
about 5 ms of a no-tool ``tether run`` for a dozen tools, and building each model's validator as many again: here
the schemas are the committed output of that same generation (``_schema_data.py``, written by
``scripts/builtin_schemas.py``), the models are declared with ``defer_build``, and a model's validator is built at
the tool's first call. ``tests/builtins/test_schemas.py`` regenerates every schema and fails, naming the script,
when a model and its committed schema differ; a model with no committed schema gets a generated one, as any tool.

The same script commits what a Location registers for each tool of :data:`DEFERRED` before its module is loaded
(``_deferred``): the description, the timeout and the permission action its ``make`` gives it, and its models' keys.
"""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import BaseModel, TypeAdapter

from ..tools.internal import Codec, PydanticCodec
from ._schema_data import SCHEMAS

__all__ = [
    "DEFERRED",
    "MODELS",
    "CommittedCodec",
    "committed_codec",
    "generate",
    "generate_definitions",
    "model_key",
]

MODELS = (
    "tether.builtins.apply_patch:ApplyPatchInput",
    "tether.builtins.bash:BashInput",
    "tether.builtins.edit:EditInput",
    "tether.builtins.glob:GlobInput",
    "tether.builtins.grep:GrepInput",
    "tether.builtins.list:ListInput",
    "tether.builtins.question:QuestionsInput",
    "tether.builtins.question:QuestionOutput",
    "tether.builtins.read:ReadInput",
    "tether.builtins.skill:SkillInput",
    "tether.builtins.task:TaskInput",
    "tether.builtins.task:TaskOutput",
    "tether.builtins.todoread:TodoReadInput",
    "tether.builtins.todowrite:TodoWriteInput",
    "tether.builtins.webfetch:WebFetchInput",
    "tether.builtins.write:WriteInput",
)
"""The models whose schemas are committed (``module:qualname``); the other built-ins generate theirs."""

DEFERRED = (
    "apply_patch",
    "edit",
    "glob",
    "grep",
    "list",
    "question",
    "read",
    "todoread",
    "todowrite",
    "webfetch",
    "write",
)
"""The built-ins whose module loads at their first call (``_deferred``) from a committed definition: those whose
description does not depend on the Location (``bash`` names the shell and the sandbox, ``task`` the subagents: both
are deferred too, their descriptions written by ``_bash_text`` and ``_task_text``; ``skill`` lists the skills found
and loads when one is)."""


def model_key(model: type[BaseModel]) -> str:
    """A model's key in the committed schemas: ``module:qualname``."""
    return f"{model.__module__}:{model.__qualname__}"


class CommittedCodec(PydanticCodec):
    """A pydantic codec whose schema is given: its ``TypeAdapter`` (the model's validator) is built at first use.

    ``model`` is the class, or its key (``module:qualname``): then its module is imported at the first use too.
    """

    __slots__ = ("_model",)

    def __init__(self, model: type[BaseModel] | str, schema: dict[str, Any]) -> None:
        self._model = model
        self._adapter = None  # pyright: ignore[reportAttributeAccessIssue] (built at the first decode or encode)
        self.schema = schema

    @property
    def key(self) -> str:
        """The model's key in the committed schemas (``module:qualname``)."""
        return self._model if isinstance(self._model, str) else model_key(self._model)

    def _adapted(self) -> None:
        if self._adapter is None:  # two threads may both build it: the same adapter, set twice
            model = self._model
            if isinstance(model, str):
                module, _, name = model.partition(":")
                model = getattr(importlib.import_module(module), name)
            self._adapter = TypeAdapter(model)

    def decode(self, raw: Any) -> Any:
        self._adapted()
        return super().decode(raw)

    def encode(self, value: Any) -> Any:
        self._adapted()
        return super().encode(value)


def committed_codec(model: type[BaseModel]) -> Codec:
    """The codec of a built-in tool's input or output model: its committed schema, else (a model added since) a
    generated one."""
    schema = SCHEMAS.get(model_key(model))
    if schema is None:
        return PydanticCodec(TypeAdapter(model))
    return CommittedCodec(model, schema)


def generate() -> dict[str, dict[str, Any]]:
    """Each of :data:`MODELS`' schemas as a tool built from the model shows it (what ``_schema_data.py`` holds)."""
    found: dict[str, dict[str, Any]] = {}
    for key in MODELS:
        module, _, name = key.partition(":")
        model = getattr(importlib.import_module(module), name)
        found[key] = PydanticCodec(TypeAdapter(model)).schema
    return found


def generate_definitions() -> dict[str, dict[str, Any]]:
    """What each of :data:`DEFERRED`'s tools shows before its first call, as its module's ``make`` builds it (what
    ``_schema_data.TOOLS`` holds). Building a tool only captures its services: none is given, none is used."""
    from ._deps import BuiltinDeps

    service: Any = object()  # a stand-in for each service: the tools capture them and call none while built
    deps = BuiltinDeps(
        location=service, permissions=service, output=service, todos=service, questions=service
    )
    found: dict[str, dict[str, Any]] = {}
    for name in DEFERRED:
        tool = importlib.import_module(f"{__package__}.{name}").make(deps)
        found[name] = {
            "description": tool.description,
            "input": _key(tool.input_codec),
            "output": None if tool.output_codec is None else _key(tool.output_codec),
            "timeout": tool.timeout,
            "permission": tool.permission,
            "idempotent": tool.idempotent,
        }
    return found


def _key(codec: Codec) -> str:
    if not isinstance(codec, CommittedCodec):
        raise TypeError("a deferred built-in's models have committed schemas (add the model to MODELS)")
    return codec.key
