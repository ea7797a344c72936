"""The built-in tools' schemas, committed: a run shows them to the model without generating them (issue 38).

Every step tells the model each tool's JSON Schema, so a built-in tool's codec needs its schema when it is built,
once per Location. Generating it from the pydantic model (``TypeAdapter.json_schema``, then ``simplify_schema``) cost
about 5 ms of a no-tool ``tether run`` for a dozen tools, and building each model's validator as many again: here
the schemas are the committed output of that same generation (``_schema_data.py``, written by
``scripts/builtin_schemas.py``), the models are declared with ``defer_build``, and a model's validator is built at
the tool's first call. ``tests/builtins/test_schemas.py`` regenerates every schema and fails, naming the script,
when a model and its committed schema differ; a model with no committed schema gets a generated one, as any tool.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter

from ..tools.internal import Codec, PydanticCodec
from ._schema_data import SCHEMAS

__all__ = ["MODELS", "CommittedCodec", "committed_codec", "generate", "model_key"]

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


def model_key(model: type[BaseModel]) -> str:
    """A model's key in the committed schemas: ``module:qualname``."""
    return f"{model.__module__}:{model.__qualname__}"


class CommittedCodec(PydanticCodec):
    """A pydantic codec whose schema is given: its ``TypeAdapter`` (the model's validator) is built at first use."""

    __slots__ = ("_model",)

    def __init__(self, model: type[BaseModel], schema: dict[str, Any]) -> None:
        self._model = model
        self._adapter = None  # pyright: ignore[reportAttributeAccessIssue] (built at the first decode or encode)
        self.schema = schema

    def _adapted(self) -> None:
        if self._adapter is None:  # two threads may both build it: the same adapter, set twice
            self._adapter = TypeAdapter(self._model)

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
    import importlib

    found: dict[str, dict[str, Any]] = {}
    for key in MODELS:
        module, _, name = key.partition(":")
        model = getattr(importlib.import_module(module), name)
        found[key] = PydanticCodec(TypeAdapter(model)).schema
    return found
