"""The config models: unknown keys are errors with the closest known key, every key tether reads is described, the
defaults are the readers' defaults, and each error is one line naming file, line and key path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.config import TetherConfig, parse_config
from tether.config._validate import known_keys
from tether.errors import ConfigError


def error(value: dict[str, Any]) -> ConfigError:
    text = json.dumps(value, indent=2)
    with pytest.raises(ConfigError) as caught:
        parse_config(json.loads(text), file="tether.json", text=text)
    assert "\n" not in caught.value.message
    return caught.value


@pytest.mark.parametrize(
    ("value", "key", "message"),
    [
        ({"modle": "openai/gpt-5"}, "modle", 'unknown key "modle"; did you mean "model"?'),
        (
            {"provider": {"work": {"baseurl": "http://127.0.0.1:1/v1"}}},
            "provider.work.baseurl",
            'unknown key "baseurl"; did you mean "base_url"?',
        ),
        (
            {"provider": {"work": {"baseURL": "http://127.0.0.1:1/v1"}}},
            "provider.work.baseURL",
            'did you mean "base_url"?',
        ),
        (
            {"provider": {"o": {"models": {"m": {"limits": {"context": 1}}}}}},
            "provider.o.models.m.limits",
            'did you mean "limit"?',
        ),
        (
            {"provider": {"o": {"models": {"m": {"cost": {"cache_reads": 1}}}}}},
            "provider.o.models.m.cost.cache_reads",
            'did you mean "cache_read"?',
        ),
        (
            {"tool_output": {"max_chars": 10}},
            "tool_output.max_chars",
            "expected one of: max_lines, max_bytes",
        ),
        ({"agent": {"build": {"stpes": 3}}}, "agent.build.stpes", 'did you mean "steps"?'),
        ({"zzz": 1}, "zzz", 'unknown key "zzz"; expected one of: $schema, model, default_agent'),
    ],
)
def test_an_unknown_key_names_the_closest_known_one(value: dict[str, Any], key: str, message: str) -> None:
    found = error(value)
    assert found.key == key
    assert message in found.message
    assert found.line is not None


@pytest.mark.parametrize(
    ("value", "key", "message"),
    [
        ({"shell": None}, "shell", "null is not a value here"),
        ({"provider": {"x": {"retry": {"max_attempts": 0}}}}, "provider.x.retry.max_attempts", "at least 1"),
        ({"provider": {"x": {"timeouts": {"idle": 0}}}}, "provider.x.timeouts.idle", "above 0"),
        ({"provider": {"x": {"timeout": 5}}}, "provider.x.timeout", "use 'timeouts'"),
        ({"provider": {"x": {"max_retries": 5}}}, "provider.x.max_retries", "use 'retry.max_attempts'"),
        ({"provider": {"x": {"api": "grpc"}}}, "provider.x.api", '"openai-chat", "openai-responses" or'),
        (
            {"provider": {"x": {"api_key_env": ["A", 1]}}},
            "provider.x.api_key_env",
            "a variable name or a list",
        ),
        (
            {"provider": {"x": {"headers": {"X": 1}}}},
            "provider.x.headers.X",
            "expected a string, got a number",
        ),
        (
            {"provider": {"x": {"requires_key": "no"}}},
            "provider.x.requires_key",
            "true or false, got a string",
        ),
        (
            {"provider": {"x": {"models": {"m": {"cost": {"input": -1}}}}}},
            "provider.x.models.m.cost.input",
            "0",
        ),
        (
            {"provider": {"x": {"models": {"m": {"cost": {"output": True}}}}}},
            "provider.x.models.m.cost.output",
            "boolean",
        ),
        (
            {"provider": {"x": {"models": {"m": {"limit": {"context": 1.5}}}}}},
            "provider.x.models.m.limit.context",
            "whole",
        ),
        ({"agent": {"x": {"model": "gpt-5"}}}, "agent.x.model", "provider/model"),
        ({"default_agent": "  "}, "default_agent", "non-empty string"),
        ({"instructions": ["a", 3]}, "instructions[1]", "expected a string, got a number"),
    ],
)
def test_a_malformed_value_is_one_line_at_its_key(value: dict[str, Any], key: str, message: str) -> None:
    found = error(value)
    assert found.key == key
    assert message in found.message


def test_the_first_problem_in_file_order_is_reported() -> None:
    text = '{\n  "tools": {"bash": true},\n  "shel": "/bin/sh",\n  "modle": "a/b"\n}'
    with pytest.raises(ConfigError) as caught:
        parse_config(json.loads(text), file="t.json", text=text)
    assert (caught.value.key, caught.value.line) == ("shel", 3)


def test_every_documented_key_is_accepted() -> None:
    full = {
        "$schema": "./docs/tether.schema.json",
        "model": "openai/gpt-5",
        "default_agent": "build",
        "shell": "/bin/bash",
        "permission": {"bash": {"git *": "allow"}},
        "tools": {"webfetch": False},
        "instructions": ["docs/*.md"],
        "tool_output": {"max_lines": 100, "max_bytes": 1000},
        "agent": {
            "review": {
                "mode": "subagent",
                "steps": 5,
                "maxSteps": 5,
                "prompt": "p",
                "hidden": True,
                "disable": False,
                "description": "d",
                "model": "anthropic/claude-sonnet-4-5",
                "permission": "ask",
                "tools": {"bash": False},
                "color": "#ff0000",
                "temperature": 0,
                "top_p": 0.9,
            }
        },
        "provider": {
            "work": {
                "api": "openai-chat",
                "base_url": "http://127.0.0.1:1/v1",
                "api_key_env": ["A", "B"],
                "env": "A",
                "api_key": "k",
                "requires_key": True,
                "headers": {"X-Team": "agents"},
                "models": {
                    "m": {
                        "limit": {"context": 100, "output": 10},
                        "cost": {"input": 1.25, "output": 10, "cache_read": 0.125, "cache_write": 0},
                    }
                },
                "options": {"baseURL": "http://h/v1", "apiKey": "k", "headers": {"A": "b"}},
                "retry": {"max_attempts": 2, "max_retry_after": 0},
                "timeouts": {"connect": 1, "first_event": 2.5, "idle": 3},
                "adapter": {
                    "strict_tools": False,
                    "include_usage": True,
                    "reasoning_field": "reasoning_content",
                    "max_tokens_field": "max_tokens",
                },
            }
        },
    }
    config = parse_config(full, file="tether.json")
    assert config.data == full  # Config.data stays the plain JSON the other packages read
    assert config.agents["review"].steps == 5


def test_the_models_defaults_are_the_readers_defaults() -> None:
    from tether.llm import RetryPolicy
    from tether.llm.providers import Timeouts
    from tether.output._store import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES

    defaults = TetherConfig.model_validate({"provider": {"x": {"retry": {}, "timeouts": {}, "adapter": {}}}})
    provider = defaults.provider["x"]
    assert provider.retry is not None and provider.timeouts is not None and provider.adapter is not None
    assert (provider.retry.max_attempts, provider.retry.max_retry_after) == (
        RetryPolicy().attempts,
        RetryPolicy().max_retry_after,
    )
    expected = Timeouts()
    assert (provider.timeouts.connect, provider.timeouts.first_event, provider.timeouts.idle) == (
        expected.connect,
        expected.first_event,
        expected.idle,
    )
    assert (defaults.tool_output.max_lines, defaults.tool_output.max_bytes) == (
        DEFAULT_MAX_LINES,
        DEFAULT_MAX_BYTES,
    )
    assert defaults.default_agent == "build"


def test_every_key_the_providers_read_is_in_the_model() -> None:
    from tether.llm.providers._registry import _RETRY_KEYS, _TIMEOUT_KEYS  # pyright: ignore[reportPrivateUsage]

    assert set(known_keys(("provider", "x", "retry"))) == set(_RETRY_KEYS)
    assert set(known_keys(("provider", "x", "timeouts"))) == set(_TIMEOUT_KEYS)
    assert known_keys(("provider",)) == ()  # provider ids are free
    assert known_keys(("nothing", "here")) == ()
    assert known_keys(("instructions", 0)) == ()
    assert known_keys(("model", "x")) == ()
    assert known_keys(("provider", "p", "models", "m")) == ("limit", "cost")


def test_every_agent_key_an_untrusted_project_may_set_is_in_the_model() -> None:
    from tether.config._restrict import _AGENT_KEYS, _TOP_KEYS  # pyright: ignore[reportPrivateUsage]

    assert _TOP_KEYS <= set(known_keys(()))
    assert set(_AGENT_KEYS) <= set(known_keys(("agent", "build")))


def test_a_file_of_a_hundred_thousand_unknown_keys_is_one_error_naming_the_first() -> None:
    value = {"model": "a/b", **{f"k{n}": n for n in range(100_000)}}
    with pytest.raises(ConfigError) as caught:
        parse_config(value, file="tether.json")
    assert caught.value.key == "k0"
    assert caught.value.message.startswith('tether.json at k0: unknown key "k0"')


_LOAD = (
    "import sys\n"
    "from tether.config import load_config\n"
    "load_config(sys.argv[1], user_file=sys.argv[2])\n"
    "print('tether.config._models' in sys.modules)\n"
)


def test_the_models_load_only_when_a_file_is_checked(tmp_path: Path) -> None:
    # issue 38: a run with no config file (most scripted runs) never imports the models (~15 pydantic classes)
    project, user_file = tmp_path / "project", tmp_path / "user" / "tether.json"
    (project / ".git").mkdir(parents=True)
    argv = [sys.executable, "-c", _LOAD, str(project), str(user_file)]
    without = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    assert without.stdout.split() == ["False"]
    user_file.parent.mkdir()
    user_file.write_text('{"model": "openai/gpt-5"}')
    checked = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    assert checked.stdout.split() == ["True"]


def test_the_package_names_no_attribute_it_does_not_have() -> None:
    import tether.config

    with pytest.raises(AttributeError, match="TetherConfg"):
        tether.config.TetherConfg  # noqa: B018  # pyright: ignore[reportAttributeAccessIssue]
