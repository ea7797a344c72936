"""OTLP/HTTP export to a real receiver on 127.0.0.1 (``conftest.Collector``), and an endpoint that is not there."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from tether import Runtime
from tether.errors import UsageError
from tether.telemetry import (
    DEFAULT_TIMEOUT_MS,
    TelemetrySettings,
    configure,
    settings_from_config,
)
from tether.telemetry._hook import _provider  # pyright: ignore[reportPrivateUsage]
from tether.testing import ScriptedModel, tool_call

from .conftest import Collector

pytestmark = pytest.mark.anyio


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("hello\n")
    return root


async def one_turn(tmp_path: Path, project: Path) -> str:
    model = ScriptedModel([[tool_call("read", {"path": "notes.txt"}, id="r1")], "done"])
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(20):
            result = await session.prompt("hi", model=model)
        assert result.text == "done" and result.calls[0].ok
        return session.id


async def test_spans_reach_a_real_otlp_http_receiver(
    tmp_path: Path, project: Path, collector: Collector
) -> None:
    settings = TelemetrySettings(
        endpoint=collector.endpoint, headers={"x-api-key": "k1"}, service_name="agents", timeout_ms=5_000
    )
    with configure(settings):
        session_id = await one_turn(tmp_path, project)
    assert _provider[0] is None  # shutdown gave tracing back to the global provider
    spans = collector.spans()
    assert collector.paths and set(collector.paths) == {"/v1/traces"}
    assert collector.headers[0]["x-api-key"] == "k1"
    assert collector.headers[0]["content-type"] == "application/x-protobuf"
    names = sorted(str(s["name"]) for s in spans)
    assert names == ["chat scripted", "chat scripted", "execute_tool read", "invoke_agent build"]
    (root,) = [s for s in spans if s["name"] == "invoke_agent build"]
    assert root["parent_span_id"] == "" and root["service"] == "agents"
    assert root["attributes"]["gen_ai.conversation.id"] == session_id  # type: ignore[index]
    (call,) = [s for s in spans if s["name"] == "execute_tool read"]
    assert call["attributes"]["gen_ai.tool.call.id"] == "r1"  # type: ignore[index]
    assert call["attributes"]["tether.permission.decision"] == "allow"  # type: ignore[index]
    assert {s["trace_id"] for s in spans} == {root["trace_id"]}


async def test_an_unreachable_endpoint_never_breaks_a_turn(
    tmp_path: Path, project: Path, closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    settings = TelemetrySettings(endpoint=f"http://127.0.0.1:{closed_port}/v1/traces", timeout_ms=300)
    telemetry = configure(settings)
    try:
        await one_turn(tmp_path, project)
        await one_turn(tmp_path / "again", project)
    finally:
        telemetry.shutdown()  # waits at most the timeout for the export that cannot succeed
    telemetry.shutdown()  # twice is harmless
    assert _provider[0] is None


def test_settings_come_from_the_config_or_from_otel(monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings_from_config({}) is None
    assert settings_from_config({"telemetry": {}}) is None
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    with pytest.raises(UsageError, match=r"telemetry\.otlp_endpoint"):
        settings_from_config({}, force=True)
    with pytest.raises(UsageError, match="never falls back"):
        configure()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    forced = settings_from_config({}, force=True)
    assert forced == TelemetrySettings()
    assert forced.endpoint is None and forced.timeout_ms == DEFAULT_TIMEOUT_MS
    section = {
        "otlp_endpoint": "http://c:4318/v1/traces",
        "headers": {"a": "b"},
        "service_name": "s",
        "timeout": 9,
    }
    assert settings_from_config({"telemetry": section}) == TelemetrySettings(
        endpoint="http://c:4318/v1/traces", headers={"a": "b"}, service_name="s", timeout_ms=9
    )
    for base in (
        "http://c:4318",
        "http://c:4318/",
    ):  # written as $OTEL_EXPORTER_OTLP_ENDPOINT is: the path is added
        settings = settings_from_config({"telemetry": {"otlp_endpoint": base}})
        assert settings is not None and settings.endpoint == "http://c:4318/v1/traces"
    proxied = settings_from_config({"telemetry": {"otlp_endpoint": "https://c/otlp/traces"}})
    assert proxied is not None and proxied.endpoint == "https://c/otlp/traces"  # a path is kept as written


def test_without_the_sdk_configure_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # The extra is not installed: the import of the SDK fails (a None entry in sys.modules makes it raise).
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(UsageError, match=r"pip install 'tether\[otel\]'"):
        configure(TelemetrySettings(endpoint="http://127.0.0.1:9/v1/traces"))
    assert _provider[0] is None


async def test_shutdown_waits_at_most_the_timeout_for_an_export_that_hangs(
    tmp_path: Path, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A collector that takes the request and never answers: the SDK's flush would wait the export timeout for each
    # queued batch in turn (an exiting `tether run` held for many timeouts). shutdown returns after one timeout.
    import threading
    from collections.abc import Sequence

    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    exporting, release = threading.Event(), threading.Event()

    class Hanging(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            exporting.set()
            release.wait()
            return SpanExportResult.SUCCESS

    telemetry = configure(TelemetrySettings(timeout_ms=200), exporter=Hanging())
    try:
        await one_turn(tmp_path, project)
        closing = threading.Thread(target=telemetry.shutdown, daemon=True)
        closing.start()
        closing.join(20)  # only a guard: without the bound, shutdown never returns while the export hangs
        assert not closing.is_alive()
        assert exporting.wait(5) and _provider[0] is None
        assert any("did not finish within 200 ms" in r.getMessage() for r in caplog.records)
    finally:
        release.set()
