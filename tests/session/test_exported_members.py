"""Pin the public surface of ``tether.session`` and ``tether.testing``."""

import importlib

import pytest

SURFACES = {
    "tether.session": {
        "INTERRUPTED_ERROR",
        "SQLiteStore",
        "ReasoningPart",
        "StoredMessage",
        "PartDelta",
        "Sessions",
        "MAX_STEPS_MARKERS",
        "SessionInfo",
        "DOOM_LOOP_THRESHOLD",
        "PermissionAsserter",
        "Session",
        "History",
        "TextPart",
        "FilePart",
        "UserInfo",
        "AssistantInfo",
        "part_from_json",
        "StopReason",
        "DurableEvent",
        "SessionLocation",
        "StepFinishPart",
        "MessageUpdated",
        "SessionStatus",
        "TurnResult",
        "MessageInfo",
        "Part",
        "DoomLoopDetector",
        "ToolPart",
        "PartUpdated",
        "StepStartPart",
        "AgentLike",
        "INCOMPLETE_CALL_ERROR",
        "part_to_json",
        "ToolState",
        "SessionStore",
        "MAX_STEPS_PROMPT",
        "MessageError",
        "ToolProgress",
        "SessionUpdated",
        "ABORTED_ERROR",
        "CANCEL_GRACE",
        "RetryPolicy",
    },
    "tether.testing": {
        "Reasoning",
        "Step",
        "incomplete_call",
        "tool_call",
        "ScriptError",
        "StepItem",
        "FunctionModel",
        "invalid_call",
        "ScriptedModel",
        "MemoryStore",
    },
}


@pytest.mark.parametrize("module", sorted(SURFACES))
def test_public_surface_is_pinned(module: str) -> None:
    mod = importlib.import_module(module)
    assert set(mod.__all__) == SURFACES[module]
    for name in mod.__all__:
        assert hasattr(mod, name)


def test_session_uses_other_packages_only_through_their_public_names() -> None:
    import ast
    from pathlib import Path

    import tether.location
    import tether.session

    allowed: set[tuple[str, str]] = set()
    private: list[tuple[str, str, str]] = []
    for path in sorted(Path(tether.session.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2 and node.module:
                if any(part.startswith("_") for part in node.module.split(".")):
                    private += [
                        (path.name, node.module, a.name)
                        for a in node.names
                        if (node.module, a.name) not in allowed
                    ]
    assert private == []
    assert tether.session.PermissionAsserter is tether.location.PermissionAsserter
