import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_settle_tools_example_runs() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "settle_tools.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "'to' appears 2 time(s)" in result.stdout
    assert "Unknown tool: count_words" in result.stdout
    assert "- text: Field required" in result.stdout


def test_runtime_session_example_runs() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "runtime_session.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "stop=done steps=2 tool_calls=2" in result.stdout
    assert "read  completed permissions=['allow']" in result.stdout
