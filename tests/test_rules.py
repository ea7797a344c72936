"""One rule shape: ``tether.rules`` defines Rule, Effect and "last matching rule wins"; every package uses them."""

from __future__ import annotations

import ast
import json
import sqlite3
from pathlib import Path

import anyio
import pytest

import tether
import tether.config
import tether.permissions
import tether.rules
from tether import Runtime
from tether.errors import UsageError
from tether.rules import Rule, is_effect, last_match
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call
from tether.tools.internal import is_hidden

SRC = Path(tether.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (relative imports resolved), type-only imports included."""
    package = ".".join(("tether", *path.relative_to(SRC).with_suffix("").parts))
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = node.module if node.level == 0 else ".".join(filter(None, (base, node.module)))
            assert module is not None
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _modules(package: str) -> list[Path]:
    return sorted((SRC / package).rglob("*.py"))


def test_the_import_scan_sees_relative_and_type_only_imports() -> None:
    assert {"tether.rules.Rule", "tether.tools.ToolContext"} <= _imports(SRC / "permissions" / "_types.py")
    assert "tether.permissions.PermissionService" in _imports(
        SRC / "sandbox" / "_network.py"
    )  # under TYPE_CHECKING


@pytest.mark.parametrize("package", ["tools", "config"])
def test_tools_and_config_never_import_permissions(package: str) -> None:
    offending = {
        (path.name, name)
        for path in _modules(package)
        for name in _imports(path)
        if name == "tether.permissions" or name.startswith("tether.permissions.")
    }
    assert offending == set()


def test_permissions_never_imports_config_not_even_for_types() -> None:
    # permissions stands below config: the agent record it layers (tether._agent_config) lives below both
    offending = {
        (path.name, name)
        for path in _modules("permissions")
        for name in _imports(path)
        if name == "tether.config" or name.startswith("tether.config.")
    }
    assert offending == set()


def test_no_package_reaches_into_the_private_permission_types() -> None:
    offending = {
        (str(path.relative_to(SRC)), name)
        for path in SRC.rglob("*.py")
        if path.parent.name != "permissions"
        for name in _imports(path)
        if name.startswith("tether.permissions._")
    }
    assert offending == set()


def _rule_shapes(path: Path) -> list[str]:
    """Classes with ``action``/``resource``/``effect`` members and ``Literal["allow", "ask", "deny"]`` spellings."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            members = {
                target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign)
                for target in [item.target]
                if isinstance(target, ast.Name)
            } | {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
            if {"action", "resource", "effect"} <= members:
                found.append(f"class {node.name}")
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "Literal"
            and isinstance(node.slice, ast.Tuple)
            and {c.value for c in node.slice.elts if isinstance(c, ast.Constant)} == {"allow", "ask", "deny"}
        ):
            found.append("Literal[allow, ask, deny]")
    return found


def test_no_module_but_tether_rules_defines_a_rule_shape() -> None:
    shapes = {str(path.relative_to(SRC)): _rule_shapes(path) for path in SRC.rglob("*.py")}
    assert {path: found for path, found in shapes.items() if found} == {
        "rules.py": ["class Rule", "Literal[allow, ask, deny]"]
    }


def test_the_public_rule_names_are_the_one_rule() -> None:
    assert tether.permissions.Rule is tether.rules.Rule
    assert tether.permissions.Effect is tether.rules.Effect
    (config_rule,) = tether.config.parse_permission({"bash": "deny"})
    assert type(config_rule) is Rule and config_rule == Rule("bash", "*", "deny")


def test_last_match_is_the_newest_rule_matching_the_action_and_the_resource() -> None:
    rules = [
        Rule("*", "*", "allow"),
        Rule("bash", "rm *", "deny"),
        Rule("bash", "git *", "ask"),
        Rule("read", "*", "deny"),
    ]
    assert last_match(rules, "bash", "rm -rf build") == 1
    assert last_match(rules, "bash", "git push") == 2
    assert last_match(rules, "bash", "ls") == 0
    assert last_match(rules, "edit", "a.py") == 0
    assert last_match(rules[1:], "edit", "a.py") == -1
    # Without a resource only the action counts: the last rule about bash at all.
    assert last_match(rules, "bash") == 2
    assert last_match(rules[1:], "edit") == -1


def test_catalog_visibility_is_the_last_rule_about_the_tool() -> None:
    assert is_hidden("bash", [Rule("*", "*", "allow"), Rule("bash", "*", "deny")])
    assert not is_hidden("bash", [Rule("bash", "*", "deny"), Rule("bash", "git *", "allow")])
    assert not is_hidden("bash", [Rule("bash", "*", "deny"), Rule("*", "*", "ask")])
    assert not is_hidden("bash", [])


@pytest.mark.parametrize(
    ("value", "expected"),
    [("allow", True), ("ask", True), ("deny", True), ("Deny", False), (None, False), (["allow"], False)],
)
def test_is_effect_accepts_only_the_three_effects(value: object, expected: bool) -> None:
    assert is_effect(value) is expected


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "secret.txt").write_text("top secret\n")
    return root


@pytest.mark.anyio
async def test_session_rules_are_rules_stored_as_triples_and_read_back_as_rules(
    tmp_path: Path, project: Path
) -> None:
    data = tmp_path / "data"
    async with Runtime(data_dir=data) as rt:
        session = await rt.sessions.create(
            project, rules=[("read", "*.md", "allow"), Rule("read", "secret*", "deny")]
        )
        session_id = session.id
        expected = (Rule("read", "*.md", "allow"), Rule("read", "secret*", "deny"))
        assert session.info.rules == expected
    with sqlite3.connect(data / "tether.db") as conn:
        (stored,) = conn.execute("SELECT rules FROM sessions WHERE id = ?", (session_id,)).fetchone()
    assert json.loads(stored) == [["read", "*.md", "allow"], ["read", "secret*", "deny"]]
    async with Runtime(data_dir=data) as rt:
        reopened = await rt.sessions.get(session_id)
        assert reopened.info.rules == expected and all(type(rule) is Rule for rule in reopened.info.rules)
        # The reopened session's rules still decide: the deny blocks the read.
        model = ScriptedModel([[tool_call("read", {"path": "secret.txt"})], "done"])
        with model, anyio.fail_after(10):
            await reopened.prompt("read the secret", model=model)
        (part,) = [p for m in await reopened.messages() for p in m.parts if isinstance(p, ToolPart)]
        assert part.state == "error" and part.error_kind == "blocked"


@pytest.mark.anyio
async def test_a_rule_value_with_an_unknown_effect_is_refused_like_a_triple(
    tmp_path: Path, project: Path
) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        with pytest.raises(
            UsageError, match=r"Invalid session rule Rule\(action='bash', resource='\*', effect='Deny'\)"
        ):
            await rt.sessions.create(project, rules=[Rule("bash", "*", "Deny")])  # type: ignore[arg-type]
        assert await rt.sessions.list() == []
