"""Every fenced ``python`` block of README.md and docs/*.md runs as written (issue 15 §6).

Each block runs on its own, as a child process in an empty temporary directory (its working directory), with
``TETHER_DATA_DIR`` and ``TETHER_CONFIG_DIR`` pointing into it and no provider API key in the environment: a block
that needs a model uses ``tether.testing.ScriptedModel``, and one that needs files creates them. Shell snippets are
fenced ``bash`` or ``text`` and are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """The ``python`` blocks of a Markdown file with the line each starts on."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in FENCE.finditer(text)]


def _all_blocks() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line, code in python_blocks(page):
            found.append((f"{page.relative_to(ROOT)}:{line}", code))
    return found


BLOCKS = _all_blocks()


def test_the_extraction_finds_the_blocks_it_must_run() -> None:
    names = [name for name, _ in BLOCKS]
    assert sum(name.startswith("README.md:") for name in names) >= 2
    assert any(name.startswith("docs/tools.md:") for name in names)
    fence = "```"
    sample = f"text\n{fence}python\nprint(1)\n{fence}\n{fence}bash\nls\n{fence}\n"
    assert FENCE.findall(sample) == ["print(1)\n"]


@pytest.mark.parametrize(("name", "code"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_python_block_runs_as_written(name: str, code: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["TETHER_DATA_DIR"] = str(tmp_path / "data")
    env["TETHER_CONFIG_DIR"] = str(tmp_path / "config")
    work = tmp_path / "work"
    work.mkdir()
    script = work / "block.py"
    script.write_text(code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"{name} failed:\n{result.stderr[-4000:]}"
