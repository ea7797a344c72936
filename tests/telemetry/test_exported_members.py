"""Pin the public surface of ``tether.telemetry`` and its ``internal`` module (the session runner's hook)."""

import importlib
import subprocess
import sys

import pytest

SURFACES = {
    "tether.telemetry": {
        "CONTENT_ENV", "DEFAULT_TIMEOUT_MS", "LOG_FORMATS", "JsonFormatter", "LogFormat", "Telemetry",
        "TelemetrySettings", "configure", "configure_logging", "content_enabled", "export_from_config",
        "settings_from_config", "use_tracer_provider",
    },
    "tether.telemetry.internal": {"TurnTrace", "turn_trace"},
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(SURFACES))
def test_public_surface_is_pinned(module: str) -> None:
    mod = importlib.import_module(module)
    assert set(mod.__all__) == SURFACES[module]
    for name in mod.__all__:
        assert hasattr(mod, name)


def test_an_untraced_turn_never_imports_opentelemetry(tmp_path: object) -> None:
    # A fresh process: a whole turn with a tool call, and OpenTelemetry is still not imported (tracing off costs one
    # dictionary lookup per turn, see tether.telemetry._hook).
    code = """
import sys, tempfile, anyio
from pathlib import Path
from tether import Runtime
from tether.testing import ScriptedModel, tool_call

async def main():
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "p"
        root.mkdir()
        (root / "a.txt").write_text("x")
        async with Runtime(data_dir=Path(tmp) / "d") as rt:
            session = await rt.sessions.create(root)
            model = ScriptedModel([[tool_call("read", {"path": "a.txt"})], "done"])
            result = await session.prompt("go", model=model)
            assert result.calls[0].ok, result

anyio.run(main)
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
