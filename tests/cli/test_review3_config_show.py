"""``tether config show`` never prints a secret (review 3), through the real command (a subprocess per run).

The secrets of a config: the store URL's password, telemetry and provider HTTP headers, provider API keys, MCP
servers' headers and environment. They are shown as ``***``; an ``{env:NAME}`` reference names where a secret is
and stays visible.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SECRETS = (
    "s3cr#t@pw",
    "hc-secret-key-1",
    "sk-live-provider-key",
    "hdr-secret-2",
    "opt-secret-3",
    "opt-hdr-secret-4",
    "ghp_secret5",
    "env-secret-6",
    "env-secret-7",
)

CONFIG = {
    "store": "postgresql://app:s3cr#t@pw@db.internal:5432/tether",
    "telemetry": {
        "otlp_endpoint": "https://collector.example/v1/traces",
        "headers": {"x-honeycomb-team": "hc-secret-key-1", "Authorization": "Bearer {env:OTEL_TOKEN}"},
    },
    "provider": {
        "work": {
            "base_url": "https://llm.example/v1",
            "api_key": "sk-live-provider-key",
            "headers": {"X-Api-Key": "hdr-secret-2"},
            "options": {"apiKey": "opt-secret-3", "headers": {"X-Other": "opt-hdr-secret-4"}},
        },
        "ref": {"base_url": "https://other.example/v1", "api_key": "{env:OTHER_KEY}"},
    },
    "mcp": {
        "gh": {"url": "https://mcp.example/x", "headers": {"Authorization": "Bearer ghp_secret5"}},
        "local": {"command": ["srv"], "environment": {"TOKEN": "env-secret-6", "HOME_REF": "{env:HOME}"}},
    },
    "mcpServers": {"claude": {"command": "srv", "env": {"API": "env-secret-7"}}},
}


def _own_config(cli: Any, config: dict[str, Any]) -> Path:
    (cli.tmp / "config").mkdir(exist_ok=True)
    (cli.tmp / "project").mkdir(exist_ok=True)
    (cli.tmp / "config" / "tether.json").write_text(json.dumps(config), encoding="utf-8")
    return cli.tmp / "project"


def _no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, secret


def test_review3_config_show_prints_no_secret(cli: Any) -> None:
    project = _own_config(cli, CONFIG)
    text = cli.run("config", "show", cwd=project)
    assert text.code == 0, text.output
    _no_secret(text.output)
    assert 'store = "postgresql://app:***@db.internal:5432/tether"' in text.stdout
    assert 'provider.work.api_key = "***"' in text.stdout
    assert 'mcp.local.environment.TOKEN = "***"' in text.stdout
    assert "secrets are shown as *** (9 values)" in text.stdout

    result = cli.run("config", "show", "--json", cwd=project)
    assert result.code == 0, result.output
    _no_secret(result.output)
    report = json.loads(result.stdout)
    assert sorted(report["redacted"]) == sorted(
        [
            "store",
            "telemetry.headers.x-honeycomb-team",
            "provider.work.api_key",
            "provider.work.headers.X-Api-Key",
            "provider.work.options.apiKey",
            "provider.work.options.headers.X-Other",
            "mcp.gh.headers.Authorization",
            "mcp.local.environment.TOKEN",
            "mcpServers.claude.env.API",
        ]
    )
    config = report["config"]
    assert config["provider"]["work"]["base_url"] == "https://llm.example/v1"  # only secrets are hidden
    assert config["mcp"]["gh"]["headers"]["Authorization"] == "***"


def test_review3_config_show_keeps_env_references_visible(cli: Any) -> None:
    project = _own_config(cli, CONFIG)
    report = json.loads(cli.run("config", "show", "--json", cwd=project).stdout)
    config = report["config"]
    assert config["telemetry"]["headers"]["Authorization"] == "Bearer {env:OTEL_TOKEN}"
    assert config["provider"]["ref"]["api_key"] == "{env:OTHER_KEY}"
    assert config["mcp"]["local"]["environment"]["HOME_REF"] == "{env:HOME}"
    rows = {row["key"]: row["value"] for row in report["keys"]}
    assert rows["mcp.local.environment.HOME_REF"] == "{env:HOME}"


def test_review3_a_literal_before_a_reference_is_still_a_secret(cli: Any) -> None:
    config = {"provider": {"work": {"base_url": "https://llm.example/v1", "api_key": "sk-live {env:X}"}}}
    result = cli.run("config", "show", "--json", cwd=_own_config(cli, config))
    assert result.code == 0, result.output
    assert "sk-live" not in result.stdout
    assert json.loads(result.stdout)["config"]["provider"]["work"]["api_key"] == "***"


def test_review3_a_config_without_secrets_says_nothing_of_them(cli: Any) -> None:
    text = cli.run("config", "show", cwd=_own_config(cli, {"store": "postgresql://app@db/tether"}))
    assert text.code == 0, text.output
    assert 'store = "postgresql://app@db/tether"' in text.stdout
    assert "secrets are shown" not in text.stdout
