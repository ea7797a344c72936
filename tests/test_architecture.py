"""The house is checked: the imports of ``src/tether`` against ``ARCHITECTURE.md`` (``scripts/imports.py``).

The floors block of ``ARCHITECTURE.md`` is the allowed order; its lists of known debts (upward imports, folder and
file circles, modules over 800 lines, private reaches into another room's ``_`` modules) are a ratchet: anything new fails, and so does a listed debt that is gone, so
the lists stay true and only shrink. The checker itself is tested on small packages built in ``tmp_path``.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "imports.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tether_imports_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


imports = _load()


@pytest.fixture(scope="module")
def findings() -> object:
    return imports.check(imports.read_plan())


def test_every_room_stands_on_one_floor(findings: object) -> None:
    rooms = [item for item in findings.new + findings.gone if "floor" in item]  # type: ignore[attr-defined]
    assert rooms == []


def test_no_import_goes_up_a_floor_beyond_the_known_debts(findings: object) -> None:
    assert [i for i in findings.new if i.startswith("upward")] == []  # type: ignore[attr-defined]
    assert [i for i in findings.gone if i.startswith("upward")] == []  # type: ignore[attr-defined]


def test_no_folder_circle_beyond_the_known_debts(findings: object) -> None:
    assert [i for i in findings.new if i.startswith("folder circle")] == []  # type: ignore[attr-defined]
    assert [i for i in findings.gone if i.startswith("folder circle")] == []  # type: ignore[attr-defined]


def test_no_file_circle_beyond_the_known_debts(findings: object) -> None:
    assert [i for i in findings.new if i.startswith("file circle")] == []  # type: ignore[attr-defined]
    assert [i for i in findings.gone if i.startswith("file circle")] == []  # type: ignore[attr-defined]


def test_no_module_over_800_lines_beyond_the_known_debts(findings: object) -> None:
    assert [i for i in findings.new if i.startswith("module")] == []  # type: ignore[attr-defined]
    assert [i for i in findings.gone if i.startswith("big module")] == []  # type: ignore[attr-defined]


def test_no_room_reaches_into_another_rooms_private_module_beyond_the_known_debts(findings: object) -> None:
    assert [i for i in findings.new if i.startswith("private reach")] == []  # type: ignore[attr-defined]
    assert [i for i in findings.gone if i.startswith("private reach")] == []  # type: ignore[attr-defined]


def test_every_room_is_described_in_the_rooms_table() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    plan = imports.read_plan()
    for floor in plan.floors:
        for room in floor:
            assert f"| `{room}` |" in text, f"ARCHITECTURE.md's rooms table has no row for {room}"


def test_the_script_reports_and_exits_zero_on_the_source_as_it_is() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.rstrip().endswith("ok: the source matches ARCHITECTURE.md")
    # every list is empty since issue 39: the report counts each kind of debt (none), the verdict last
    assert "upward imports: 0" in run.stdout and "folder circles: 0" in run.stdout
    assert "private reaches (a room importing another room's private module): 0" in run.stdout


# --- the checker on packages made for it -----------------------------------------------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "tether"
    for name, text in {"__init__.py": "", **files}.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return src


def _plan(
    tmp_path: Path,
    floors: str,
    upward: str = "",
    folders: str = "",
    files: str = "",
    big: str = "",
    private: str = "",
) -> object:
    blocks = {
        "floors": floors,
        "upward-imports": upward,
        "folder-circles": folders,
        "file-circles": files,
        "big-modules": big,
        "private-reaches": private,
    }
    text = "\n".join(f"```{name}\n{body}\n```\n" for name, body in blocks.items())
    path = tmp_path / "ARCHITECTURE.md"
    path.write_text(text, encoding="utf-8")
    return imports.read_plan(path)


HOUSE = {
    "errors.py": "",
    "tools/__init__.py": "from ._tool import Tool\n",
    "tools/_tool.py": "from ..errors import *\n",
    "session/__init__.py": "from . import _runner\n",
    "session/_runner.py": (
        "from typing import TYPE_CHECKING\n"
        "from tether.tools import Tool\n"
        "if TYPE_CHECKING:\n"
        "    from ..telemetry import _spans\n"
        "def later():\n"
        "    from .. import errors\n"
    ),
    "telemetry/__init__.py": "",
    "telemetry/_spans.py": "import tether.session._runner\n",
}
FLOORS = "observers: telemetry\nrunner: session\ncontract: tools\nground: errors tether"
HOUSE_REACHES = (
    "session -> telemetry._spans\ntelemetry -> session._runner"  # the house's private reaches, listed
)


def test_imports_are_read_wherever_they_stand_and_resolved_to_modules(tmp_path: Path) -> None:
    edges = imports.graph(_package(tmp_path, HOUSE))
    found = {(e.source, e.target, e.types_only) for e in edges}
    assert ("tether.session._runner", "tether.tools", False) in found  # absolute, to the package
    assert (
        "tether.session._runner",
        "tether.telemetry._spans",
        True,
    ) in found  # relative, under TYPE_CHECKING
    assert (
        "tether.session._runner",
        "tether.errors",
        False,
    ) in found  # inside a function: still a dependency
    assert ("tether.session", "tether.session._runner", False) in found  # from . import submodule
    assert ("tether.tools._tool", "tether.errors", False) in found  # from ..errors import *
    assert ("tether.telemetry._spans", "tether.session._runner", False) in found


def test_an_upward_import_and_its_circle_fail_until_listed(tmp_path: Path) -> None:
    src = _package(tmp_path, HOUSE)
    findings = imports.check(_plan(tmp_path, FLOORS, private=HOUSE_REACHES), src)
    assert findings.new == [
        "upward import session -> telemetry: session._runner:4 -> telemetry._spans (types only)",
        "folder circle session telemetry",
    ]
    listed = _plan(
        tmp_path,
        FLOORS,
        upward="session -> telemetry  # why",
        folders="session telemetry",
        private=HOUSE_REACHES,
    )
    findings = imports.check(listed, src)
    assert findings.new == [] and findings.gone == []
    report = imports.report(listed, findings)
    assert "closes session -> telemetry -> session" in report and report.endswith(
        "ok: the source matches ARCHITECTURE.md"
    )


def test_a_listed_debt_that_is_gone_fails_until_struck(tmp_path: Path) -> None:
    src = _package(tmp_path, {**HOUSE, "session/_runner.py": "from tether.tools import Tool\n"})
    plan = _plan(
        tmp_path,
        FLOORS,
        upward="session -> telemetry",
        folders="session telemetry",
        private="telemetry -> session._runner",
    )
    findings = imports.check(plan, src)
    assert findings.new == []
    assert findings.gone == [
        "upward import session -> telemetry (listed, no longer in the source)",
        "folder circle session telemetry (listed, no longer in the source)",
    ]


def test_a_file_circle_and_a_big_module_fail_until_listed(tmp_path: Path) -> None:
    files = {
        **HOUSE,
        "telemetry/_spans.py": "",
        "tools/_a.py": "from ._b import x\n" + "\n" * 801,
        "tools/_b.py": "from . import _a\nx = 1\n",
    }
    src = _package(tmp_path, files)
    reach = "session -> telemetry._spans"
    plan = _plan(tmp_path, FLOORS, upward="session -> telemetry", private=reach)
    assert imports.check(plan, src).new == [
        "file circle tools._a tools._b",
        "module tools._a has 802 lines (over 800)",
    ]
    plan = _plan(
        tmp_path,
        FLOORS,
        upward="session -> telemetry",
        files="tools._a tools._b",
        big="tools._a",
        private=reach,
    )
    assert imports.check(plan, src).new == []


def test_a_room_without_a_floor_fails(tmp_path: Path) -> None:
    src = _package(tmp_path, {**HOUSE, "codemode/__init__.py": ""})
    assert imports.check(_plan(tmp_path, FLOORS), src).new == [
        "room codemode has no floor (give it one in the floors block)"
    ]


def test_a_missing_block_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "ARCHITECTURE.md"
    path.write_text("```floors\nground: errors\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"ARCHITECTURE\.md has no ```upward-imports block"):
        imports.read_plan(path)


REACHES = {
    **HOUSE,
    "telemetry/_spans.py": "",
    "_record.py": "",
    "session/internal.py": "from ._runner import later\n",
    "session/_parts/__init__.py": "",
    "session/_parts/text.py": "",
    "telemetry/trace.py": (
        "from .. import _record\n"  # a top-level room that is a _x.py module: a whole room
        "from ..session import internal\n"  # the room's internal surface
        "from ..session import later\n"  # the room's __init__
        "from tether.session._parts import text\n"  # a private package below the room
        "from ._spans import x\n"  # its own room's private module
    ),
    "telemetry/_hooks.py": "def f():\n    import tether.session._runner\n",
}


def test_a_reach_into_another_rooms_private_module_fails_until_listed(tmp_path: Path) -> None:
    src = _package(tmp_path, REACHES)
    plan = _plan(tmp_path, FLOORS + " _record", upward="session -> telemetry", folders="session telemetry")
    assert imports.check(plan, src).new == [
        "private reach session -> telemetry._spans: session._runner:4 -> telemetry._spans (types only)"
        " (export it through telemetry.internal and import it from there)",
        "private reach telemetry -> session._parts.text: telemetry.trace:4 -> session._parts.text"
        " (export it through session.internal and import it from there)",
        "private reach telemetry -> session._runner: telemetry._hooks:2 -> session._runner"
        " (export it through session.internal and import it from there)",
    ]
    listed = _plan(
        tmp_path,
        FLOORS + " _record",
        upward="session -> telemetry",
        folders="session telemetry",
        private=HOUSE_REACHES + "  # why\ntelemetry -> session._parts.text",
    )
    findings = imports.check(listed, src)
    assert findings.new == [] and findings.gone == []
    report = imports.report(listed, findings)
    assert "private reaches (a room importing another room's private module): 3" in report
    assert "  telemetry -> session._runner: telemetry._hooks:2 -> session._runner" in report


def test_a_listed_reach_that_is_gone_fails_until_struck(tmp_path: Path) -> None:
    src = _package(tmp_path, {**REACHES, "telemetry/_hooks.py": ""})
    plan = _plan(
        tmp_path,
        FLOORS + " _record",
        upward="session -> telemetry",
        folders="session telemetry",
        private=HOUSE_REACHES + "\ntelemetry -> session._parts.text",
    )
    findings = imports.check(plan, src)
    assert findings.new == []
    assert findings.gone == ["private reach telemetry -> session._runner (listed, no longer in the source)"]


@pytest.mark.parametrize("line", ["telemetry session._runner", "telemetry -> session.internal"])
def test_a_private_reach_line_not_naming_a_private_module_is_a_clear_error(tmp_path: Path, line: str) -> None:
    with pytest.raises(ValueError, match=r"private-reaches: .* is not 'room -> room\._module'"):
        _plan(tmp_path, FLOORS, private=line)
