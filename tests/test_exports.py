"""Pin the public surface of the packages owned by the core (each package's ``__all__``)."""

import importlib

import pytest

SURFACES = {
    "tether.tools": {
        "DECLINED_ERROR", "DEFAULT_TIMEOUT", "FINAL_STEP_ERROR", "UNSET", "AfterEvent", "Asker", "tool", "AfterHook", "BeforeEvent", "BeforeHook",
        "Codec", "Completed", "Content", "Deadlines", "DecodeError", "Entry", "Failed", "FailureKind", "File", "Issue",
        "JsonSchemaCodec", "Materialization", "Outcome", "PermissionRecord", "PermissionRecorder", "PydanticCodec", "Registration", "RegistrationError",
        "Text", "Tool", "ToolCall", "ToolContext", "ToolDefinition", "ToolFailure", "ToolRegistry",
        "ToolResponse", "Verdict", "Reply", "content_from_json", "content_to_json", "effective_name", "is_hidden", "make_codec",
        "normalize_content", "normalize_name", "simplify_schema", "text_of",
    },
    "tether.rules": {"EFFECTS", "Effect", "Rule", "is_effect", "last_match"},
    "tether.output": {
        "DEFAULT_MAX_BYTES", "DEFAULT_MAX_LINES", "MAX_STRUCTURED_BYTES", "RETENTION_SECONDS", "Bounded",
        "OutputStore", "bounded_preview", "marker_for", "utf8_len",
    },
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(SURFACES))
def test_public_surface_is_pinned(module: str) -> None:
    mod = importlib.import_module(module)
    assert set(mod.__all__) == SURFACES[module]
    for name in mod.__all__:
        assert hasattr(mod, name)
