"""Model selection by ``provider/model`` strings and provider entries from tether.json."""

from __future__ import annotations

import re

import pytest

from tether.errors import ConfigError, ProviderAuthError
from tether.llm import RetryPolicy
from tether.llm.providers import (
    BUILTIN_PROVIDERS,
    AnthropicModel,
    ModelLimits,
    OpenAIChatModel,
    OpenAIResponsesModel,
    Timeouts,
    resolve_model,
)


def test_openai_resolves_to_the_responses_api_with_the_env_key() -> None:
    model = resolve_model("openai/gpt-5", env={"OPENAI_API_KEY": "sk-1"})
    assert isinstance(model, OpenAIResponsesModel)
    assert model.name == "openai/gpt-5" and model.settings.api_key == "sk-1"


def test_anthropic_resolves_with_the_output_limit_as_max_tokens() -> None:
    config = {
        "provider": {
            "anthropic": {"models": {"claude-sonnet-4-5": {"limit": {"context": 200000, "output": 64000}}}}
        }
    }
    model = resolve_model("anthropic/claude-sonnet-4-5", config, env={"ANTHROPIC_API_KEY": "k"})
    assert isinstance(model, AnthropicModel)
    assert model.max_tokens == 64000 and model.limits == ModelLimits(context=200000, output=64000)


def test_local_servers_need_no_key_and_keep_colons_in_model_ids() -> None:
    model = resolve_model("ollama/qwen3:8b", env={})
    assert isinstance(model, OpenAIChatModel)
    assert model.model_id == "qwen3:8b" and model.settings.base_url == "http://127.0.0.1:11434/v1"
    assert not model.strict_tools and model.max_tokens_field == "max_tokens"


def test_model_ids_may_contain_slashes() -> None:
    model = resolve_model("openrouter/anthropic/claude-sonnet-4.5", env={"OPENROUTER_API_KEY": "k"})
    assert model.model_id == "anthropic/claude-sonnet-4.5"


def test_missing_key_names_the_variable_to_set() -> None:
    with pytest.raises(ProviderAuthError, match="set OPENAI_API_KEY"):
        resolve_model("openai/gpt-5", env={})
    with pytest.raises(ProviderAuthError, match="DEEPSEEK_API_KEY"):
        resolve_model("deepseek/deepseek-chat", env={})


def test_config_overrides_base_url_headers_and_adds_providers() -> None:
    config = {
        "provider": {
            "ollama": {"base_url": "http://gpu-box:11434/v1"},
            "work": {
                "base_url": "https://llm.internal/v1",
                "api_key_env": "WORK_KEY",
                "headers": {"X-Team": "a"},
            },
        }
    }
    assert resolve_model("ollama/llama3", config, env={}).settings.base_url == "http://gpu-box:11434/v1"  # type: ignore[attr-defined]
    work = resolve_model("work/m", config, env={"WORK_KEY": "w"})
    assert isinstance(work, OpenAIChatModel)
    assert work.settings.headers == {"X-Team": "a"} and work.settings.api_key == "w"
    with pytest.raises(ProviderAuthError, match="WORK_KEY"):
        resolve_model("work/m", config, env={})


def test_a_config_without_providers_uses_the_built_in_entries() -> None:
    model = resolve_model(
        "ollama/qwen3:8b", {"model": "ollama/qwen3:8b", "permission": {"edit": "ask"}}, env={}
    )
    assert model.settings.base_url == "http://127.0.0.1:11434/v1"  # type: ignore[attr-defined]


def test_opencode_style_options_are_accepted() -> None:
    config = {"provider": {"proxy": {"options": {"baseURL": "http://x/v1", "apiKey": "literal"}}}}
    model = resolve_model("proxy/m", config, env={})
    assert model.settings.base_url == "http://x/v1" and model.settings.api_key == "literal"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "config", "match"),
    [
        ("gpt-5", None, "provider/model"),
        ("nope/m", None, "unknown provider 'nope'"),
        ("x/m", {"provider": {"x": {"api": "grpc"}}}, "provider.x.api"),
        ("x/m", {"provider": {"x": {"headers": {"a": 1}}}}, "provider.x.headers"),
        ("x/m", {"provider": {"x": {"models": {"m": {"limit": {"context": "big"}}}}}}, "provider.x.models.m"),
    ],
)
def test_bad_specs_and_entries_are_config_errors(spec: str, config: dict | None, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        resolve_model(spec, config, env={})


def test_the_common_providers_are_built_in() -> None:
    expected = {
        "openai",
        "anthropic",
        "ollama",
        "lmstudio",
        "vllm",
        "llamacpp",
        "openrouter",
        "deepseek",
        "groq",
        "mistral",
    }
    assert expected <= set(BUILTIN_PROVIDERS)


def test_retry_and_timeouts_come_from_the_provider_entry_with_the_documented_defaults() -> None:
    local = resolve_model("ollama/qwen3:8b", env={})
    assert local.retry == RetryPolicy(attempts=4, max_retry_after=60)
    assert local.settings.timeouts == Timeouts(connect=10, first_event=300, idle=120)  # type: ignore[attr-defined]
    config = {
        "provider": {
            "ollama": {
                "retry": {"max_attempts": 2, "max_retry_after": 5},
                "timeouts": {"idle": 30, "first_event": 600.5},
            }
        }
    }
    model = resolve_model("ollama/qwen3:8b", config, env={})
    assert model.retry is not None and (model.retry.attempts, model.retry.max_retry_after) == (2, 5)
    assert model.settings.timeouts == Timeouts(connect=10, first_event=600.5, idle=30)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ({"retry": {"max_attempts": 0}}, "provider.ollama.retry.max_attempts: must be a whole number"),
        ({"retry": {"max_attempts": 2.5}}, "provider.ollama.retry.max_attempts"),
        ({"retry": {"max_attempts": True}}, "provider.ollama.retry.max_attempts"),
        ({"retry": {"max_retry_after": -1}}, "provider.ollama.retry.max_retry_after"),
        ({"retry": {"attempts": 3}}, "provider.ollama.retry.attempts: unknown key"),
        ({"retry": 3}, "provider.ollama.retry: must be an object"),
        ({"timeouts": {"idle": 0}}, "provider.ollama.timeouts.idle: must be a number of seconds above 0"),
        ({"timeouts": {"idle": "2m"}}, "provider.ollama.timeouts.idle"),
        ({"timeouts": {"read": 5}}, "provider.ollama.timeouts.read: unknown key"),
        ({"max_retries": 2}, "provider.ollama.max_retries: is no longer read; use 'retry.max_attempts'"),
        ({"timeout": 60}, "provider.ollama.timeout: is no longer read; use 'timeouts'"),
    ],
)
def test_bad_retry_and_timeouts_entries_are_config_errors_naming_the_key(entry: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(match)):
        resolve_model("ollama/m", {"provider": {"ollama": entry}}, env={})


def test_a_provider_that_is_not_built_in_needs_a_base_url() -> None:
    with pytest.raises(
        ConfigError, match=re.escape("provider.mine.base_url: a provider that is not built in")
    ):
        resolve_model("mine/m", {"provider": {"mine": {"api": "anthropic"}}}, env={})
    assert resolve_model("mine/m", {"provider": {"mine": {"options": {"baseURL": "http://h/v1"}}}}, env={})
