"""The upstream apply_patch scenario suite: every scenario's final tree must equal ``expected/`` byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

# Vendored from the shared fixtures (see fixtures/apply_patch/SOURCE.md); .gitattributes keeps CRLF bytes exact.
FIXTURES = Path(__file__).parent / "fixtures" / "apply_patch"
SCENARIOS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and directory (None) under ``root``, relative, ``/``-separated."""
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        out[rel] = None if path.is_dir() else path.read_bytes()
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.anyio
async def test_scenario_final_tree_matches_expected(scenario: str, root: Path, make_project) -> None:
    case = FIXTURES / scenario
    if (case / "input").is_dir():
        shutil.copytree(case / "input", root, dirs_exist_ok=True)
    project = make_project()
    patch = (case / "patch.txt").read_text(encoding="utf-8")
    await project.call("apply_patch", patch_text=patch)  # the outcome is ignored, as upstream's runner does
    expected = case / "expected"
    assert _tree(root) == (_tree(expected) if expected.is_dir() else {})


def test_all_scenarios_are_present() -> None:
    assert len(SCENARIOS) == 25
