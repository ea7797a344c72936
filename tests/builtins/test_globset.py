"""Our glob matcher against ripgrep's own globset test cases (shared fixtures, vendored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.builtins._globset import GlobError, GlobOptions, compile_glob, path_matcher

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
