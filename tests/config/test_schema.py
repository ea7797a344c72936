"""The JSON Schema and the key table of docs/config.md come from the models, and the committed copies are current."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tether.config import TetherConfig, config_schema
from tether.config._schema import REFERENCE_BEGIN, REFERENCE_END, config_reference

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_committed_schema_is_the_generated_one() -> None:
    committed = (DOCS / "tether.schema.json").read_text(encoding="utf-8")
    assert committed == json.dumps(config_schema(), indent=2, ensure_ascii=False) + "\n", (
        "regenerate: tether config schema > docs/tether.schema.json"
    )


def test_the_key_table_of_docs_config_md_is_the_generated_one() -> None:
    page = (DOCS / "config.md").read_text(encoding="utf-8")
    start, end = page.index(REFERENCE_BEGIN) + len(REFERENCE_BEGIN), page.index(REFERENCE_END)
    assert page[start:end].strip() == config_reference(), (
        "regenerate the table between the markers: tether config schema --reference"
    )


def _models(model: type[Any], seen: set[type[Any]]) -> None:
    from pydantic import BaseModel

    from tether.config._validate import _bare  # pyright: ignore[reportPrivateUsage]

    seen.add(model)
    for field in model.model_fields.values():
        stack = [_bare(field.annotation)]
        while stack:
            kind = stack.pop()
            if isinstance(kind, type) and issubclass(kind, BaseModel) and kind not in seen:
                _models(kind, seen)
            stack.extend(_bare(arg) for arg in getattr(kind, "__args__", ()))


def test_every_key_and_section_is_described() -> None:
    seen: set[type[Any]] = set()
    _models(TetherConfig, seen)
    assert (
        len(seen) == 18
    )  # + CodeModeSection (agent.<name>.codemode), TelemetrySection (telemetry), SandboxSection, TerminalSection
    for model in seen:
        assert model.__doc__, model
        for name, field in model.model_fields.items():
            assert field.description and field.description.endswith("."), f"{model.__name__}.{name}"


def test_the_schema_describes_a_strict_file() -> None:
    schema = config_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    assert "$schema" in schema["properties"]
    text = json.dumps(schema)
    assert '"null"' not in text  # null is never a value a file may hold
    assert '"title": "Maxsteps"' not in text
    defs = schema["$defs"]
    assert all(d.get("additionalProperties") is False for d in defs.values())
    cost = defs["ModelCost"]["properties"]
    assert set(cost) == {"input", "output", "cache_read", "cache_write"}
    assert cost["input"] == {"description": "USD per million input tokens.", "minimum": 0, "type": "number"}


def test_the_reference_lists_every_nested_key() -> None:
    table = config_reference()
    for key in (
        "`model`",
        "`agent.<name>.steps`",
        "`provider.<id>.models.<model>.cost.cache_write`",
        "`provider.<id>.timeouts.first_event`",
        "`tool_output.max_lines` | integer ≥ 1 | `2000`",
    ):
        assert key in table
