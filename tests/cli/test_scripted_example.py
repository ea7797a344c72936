"""The scripted model's example (``examples/scripted_model.json``, named by docs/cli.md) plays as documented."""

from __future__ import annotations

from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scripted_model.json"


def test_the_documented_example_script_reads_a_file_then_answers(cli: Any, project: Path) -> None:
    result = cli.run("run", "what do the notes say?", "--model", f"scripted:{EXAMPLE}", "--dir", str(project))
    assert result.code == 0, result.output
    assert "✓ read notes.txt" in result.stdout
    assert "The notes say alpha and beta." in result.stdout
    assert "2 steps · 1 tool call" in result.stderr
