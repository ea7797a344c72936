from __future__ import annotations

import tether.builtins


def test_builtin_tools_names_and_permissions(project) -> None:
    tools = project.tools
    assert set(tools) >= {"apply_patch", "bash", "edit", "glob", "grep", "list", "read", "write"}
    assert list(tools) == sorted(tools)
    assert {name for name, tool in tools.items() if tool.permission == "edit"} == {
        "apply_patch",
        "edit",
        "write",
    }
    assert tether.builtins.__all__ == ["BuiltinDeps", "builtin_tools"]


def test_descriptions_say_paths_are_relative_to_the_working_directory(project) -> None:
    for name in ("read", "write", "edit", "apply_patch"):
        assert "relative to the working directory" in project.tools[name].description
