"""Our glob matcher against ripgrep's own globset test cases (shared fixtures, vendored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.builtins._globset import GlobError, GlobOptions, compile_glob, path_matcher, required_literal

CASES = json.loads(
    (Path(__file__).parent / "fixtures" / "glob_grep" / "globset_match_cases.json").read_text()
)["cases"]
UNIX = [c for c in CASES if c["cfg"] in (None, "unix")]


@pytest.mark.parametrize("case", UNIX, ids=[f"{c['name']}:{c['glob']}" for c in UNIX])
def test_globset_case(case: dict) -> None:
    options = GlobOptions(**case["options"])
    assert bool(compile_glob(case["glob"], options).match(case["path"])) is case["expect_match"]


@pytest.mark.parametrize("bad", ["[abc", "{a,b", "{a,{b}", "abc\\", "[z-a]"])
def test_malformed_globs(bad: str) -> None:
    with pytest.raises(GlobError):
        compile_glob(bad)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "deep/dir/a.py", True),
        ("src/*.ts", "src/a.ts", True),
        ("src/*.ts", "src/x/a.ts", False),
        ("src/**/*.ts", "src/x/y/a.ts", True),
        ("/top.txt", "top.txt", True),
        ("/top.txt", "d/top.txt", False),
        ("**/test_*.py", "tests/test_a.py", True),
        ("*.{ts,tsx}", "ui/a.tsx", True),
    ],
)
def test_ripgrep_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert bool(path_matcher(pattern).match(path)) is expected
    assert bool(path_matcher(pattern).match("./" + path)) is expected


def test_path_matcher_scans_a_block_of_lines() -> None:
    block = "./a.py\n./b.txt\n./src/c.py\n./d.pyc"
    assert [m.group(1) for m in path_matcher("*.py").finditer(block)] == ["a.py", "src/c.py"]


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        ("**/*.py", ".py"),
        ("src/**/test_*.ts", "test_"),
        ("**/test_*.py", "test_"),
        ("*.{ts,tsx}", "."),
        ("[abc]def*", "def"),
        ("*", ""),
        ("/top.txt", "top.txt"),
    ],
)
def test_required_literal(pattern: str, literal: str) -> None:
    assert required_literal(pattern) == literal
