"""Pin the public surface of ``tether.testing`` (``tether.session``'s two lists: tests/test_exports.py)."""

import importlib

import pytest

SURFACES = {
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
    import tether.session.internal

    # the bottom layer's record decorator (tether/_record.py) is shared by every package, like tether.ids
    allowed: set[tuple[str, str]] = {("_record", "record")}
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
    assert tether.session.internal.PermissionAsserter is tether.location.PermissionAsserter
