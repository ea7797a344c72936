"""Tracing off costs nothing: no provider, no OpenTelemetry import (the surface is pinned in tests/test_exports.py)."""

import subprocess
import sys


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


def test_an_applications_global_sdk_provider_gets_the_spans() -> None:
    # A fresh process, since the OpenTelemetry global can be set once: the application configures the SDK the usual
    # way, after importing tether, and tether's turns join its traces without any tether call.
    code = """
import tempfile, anyio
from pathlib import Path
from tether import Runtime
from tether.testing import ScriptedModel
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

async def main():
    with tempfile.TemporaryDirectory() as tmp:
        async with Runtime(data_dir=Path(tmp) / "d") as rt:
            session = await rt.sessions.create(Path(tmp))
            with trace.get_tracer("app").start_as_current_span("request"):
                await session.prompt("go", model=ScriptedModel(["done"]))

anyio.run(main)
spans = {s.name: s for s in exporter.get_finished_spans()}
print(sorted(spans))
print(spans["invoke_agent build"].parent.span_id == spans["request"].context.span_id)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["['chat scripted', 'invoke_agent build', 'request']", "True"]
