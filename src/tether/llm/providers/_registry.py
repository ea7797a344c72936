"""Model selection by ``provider/model`` strings, with providers configured in ``tether.json``.

``resolve_model("openai/gpt-5")``, ``resolve_model("ollama/qwen3:8b")``. The provider part picks an entry: a
built-in one (:data:`BUILTIN_PROVIDERS`) merged with the ``provider`` mapping of ``tether.json``, or a new one
defined there. Everything after the first ``/`` is the model id (OpenRouter ids contain slashes themselves).

A ``provider`` entry (keys in ``snake_case``; OpenCode's ``options.baseURL`` / ``options.apiKey`` / ``env`` are
accepted too)::

    "provider": {
      "ollama": {"base_url": "http://gpu-box:11434/v1",
                 "models": {"qwen3:8b": {"limit": {"context": 40960, "output": 8192}}}},
      "work":   {"api": "openai-chat", "base_url": "https://llm.internal/v1", "api_key_env": "WORK_LLM_KEY",
                 "headers": {"X-Team": "agents"},
                 "retry": {"max_attempts": 4, "max_retry_after": 60},
                 "timeouts": {"connect": 10, "first_event": 300, "idle": 120}}
    }

A provider that is not built in needs ``base_url``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import field, replace
from typing import Any, Literal, cast, get_args

from ..._record import record
from ...errors import ConfigError, ProviderAuthError
from .._model import Model
from .._retry import RetryPolicy
from ._base import ClientSettings, HTTPModel, ModelLimits, Timeouts

__all__ = ["BUILTIN_PROVIDERS", "Api", "ModelLimits", "ProviderConfig", "resolve_model"]

Api = Literal["openai-chat", "openai-responses", "anthropic"]

_RETRY_KEYS = {"max_attempts": "count", "max_retry_after": "seconds0"}
_TIMEOUT_KEYS = {"connect": "seconds", "first_event": "seconds", "idle": "seconds"}


@record
class ProviderConfig:
    """One provider entry: which API it speaks, where, with which key and headers, and per-model limits.

    ``options`` are adapter knobs: ``strict_tools`` (send OpenAI ``strict``), ``include_usage`` (ask for usage in
    the last chunk), ``reasoning_field`` (send reasoning back in this field), ``max_tokens_field``.
    """

    id: str
    api: Api = "openai-chat"
    base_url: str | None = None
    api_key_env: tuple[str, ...] = ()
    api_key: str | None = None
    requires_key: bool = True
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    limits: Mapping[str, ModelLimits] = field(default_factory=dict[str, ModelLimits])
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])
    timeouts: Timeouts = field(default_factory=Timeouts)
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @classmethod
    def from_mapping(
        cls, provider_id: str, raw: Mapping[str, Any], base: ProviderConfig | None = None
    ) -> ProviderConfig:
        """Read one ``provider.<id>`` entry of ``tether.json`` over ``base`` (the built-in entry, if any).

        Raises:
            ConfigError: a key has the wrong type or an unknown ``api``.
        """
        where = f"provider.{provider_id}"
        if not isinstance(raw, Mapping):
            raise ConfigError("a provider entry must be an object", key=where)
        legacy: Mapping[str, Any] = raw.get("options") or {}
        if not isinstance(legacy, Mapping):
            raise ConfigError("must be an object", key=f"{where}.options")
        current = base or cls(id=provider_id, requires_key=False)
        changes: dict[str, Any] = {"id": provider_id}
        api = raw.get("api", current.api)
        if api not in get_args(Api):
            raise ConfigError(
                f"unknown api {api!r}; use one of {', '.join(get_args(Api))}", key=f"{where}.api"
            )
        changes["api"] = api
        base_url = raw.get("base_url", legacy.get("baseURL", current.base_url))
        if base_url is not None and not isinstance(base_url, str):
            raise ConfigError("must be a string", key=f"{where}.base_url")
        changes["base_url"] = base_url
        env = raw.get("api_key_env", raw.get("env"))
        if env is not None:
            names = (env,) if isinstance(env, str) else tuple(env) if isinstance(env, list) else None
            if names is None or not all(isinstance(n, str) for n in names):
                raise ConfigError("must be a variable name or a list of them", key=f"{where}.api_key_env")
            changes["api_key_env"] = names
            changes["requires_key"] = True
        key = raw.get("api_key", legacy.get("apiKey"))
        if key is not None:
            if not isinstance(key, str):
                raise ConfigError("must be a string", key=f"{where}.api_key")
            changes["api_key"] = key
        if "requires_key" in raw:
            changes["requires_key"] = bool(raw["requires_key"])
        headers = raw.get("headers", legacy.get("headers"))
        if headers is not None:
            if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
                raise ConfigError("must be an object of strings", key=f"{where}.headers")
            changes["headers"] = {**current.headers, **cast(Mapping[str, str], headers)}
        models = raw.get("models")
        if models is not None:
            if not isinstance(models, Mapping):
                raise ConfigError("must be an object", key=f"{where}.models")
            limits = dict(current.limits)
            for model_id, entry in cast(Mapping[str, Any], models).items():
                limit = entry.get("limit", {}) if isinstance(entry, Mapping) else None
                if not isinstance(limit, Mapping) or not all(
                    isinstance(limit.get(k), int | None) for k in ("context", "output")
                ):
                    raise ConfigError(
                        "limit must be {context?: int, output?: int}", key=f"{where}.models.{model_id}"
                    )
                limits[model_id] = ModelLimits(context=limit.get("context"), output=limit.get("output"))
            changes["limits"] = limits
        if base is None and not base_url:
            raise ConfigError(
                "a provider that is not built in needs base_url (the API root, e.g. http://127.0.0.1:8000/v1)",
                key=f"{where}.base_url",
            )
        for old, new in (("timeout", "timeouts"), ("max_retries", "retry.max_attempts")):
            if old in raw:
                raise ConfigError(
                    f"is no longer read; use {new!r} (see docs/providers.md)", key=f"{where}.{old}"
                )
        if "retry" in raw:
            found = _numbers(raw["retry"], f"{where}.retry", _RETRY_KEYS)
            changes["retry"] = replace(
                current.retry,
                attempts=int(found.get("max_attempts", current.retry.attempts)),
                max_retry_after=float(found.get("max_retry_after", current.retry.max_retry_after)),
            )
        if "timeouts" in raw:
            found = _numbers(raw["timeouts"], f"{where}.timeouts", _TIMEOUT_KEYS)
            changes["timeouts"] = replace(current.timeouts, **{k: float(v) for k, v in found.items()})
        extra = raw.get("adapter") or {}
        if not isinstance(extra, Mapping):
            raise ConfigError("must be an object", key=f"{where}.adapter")
        changes["options"] = {**current.options, **cast(Mapping[str, Any], extra)}
        return replace(current, **changes)


def _numbers(raw: Any, where: str, rules: Mapping[str, str]) -> dict[str, float]:
    """An object of numbers with known keys; ``rules`` maps each key to ``count`` (a whole number >= 1),
    ``seconds`` (a number > 0) or ``seconds0`` (a number >= 0).

    Raises:
        ConfigError: not an object, an unknown key, or a value of the wrong kind.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"must be an object with {', '.join(rules)}", key=where)
    found: dict[str, float] = {}
    for name, value in cast(Mapping[str, Any], raw).items():
        rule = rules.get(name)
        if rule is None:
            raise ConfigError(f"unknown key; use {', '.join(rules)}", key=f"{where}.{name}")
        number = not isinstance(value, bool) and isinstance(value, int | float)
        if rule == "count" and not (number and isinstance(value, int) and value >= 1):
            raise ConfigError("must be a whole number, at least 1", key=f"{where}.{name}")
        if rule == "seconds" and not (number and value > 0):
            raise ConfigError("must be a number of seconds above 0", key=f"{where}.{name}")
        if rule == "seconds0" and not (number and value >= 0):
            raise ConfigError("must be a number of seconds, 0 or more", key=f"{where}.{name}")
        found[name] = value
    return found


def _local(provider_id: str, url: str) -> ProviderConfig:
    return ProviderConfig(id=provider_id, base_url=url, requires_key=False, options={"strict_tools": False})


def _hosted(provider_id: str, url: str, env: str, **options: Any) -> ProviderConfig:
    return ProviderConfig(
        id=provider_id, base_url=url, api_key_env=(env,), options={"strict_tools": False, **options}
    )


BUILTIN_PROVIDERS: Mapping[str, ProviderConfig] = {
    "openai": ProviderConfig(id="openai", api="openai-responses", api_key_env=("OPENAI_API_KEY",)),
    "anthropic": ProviderConfig(id="anthropic", api="anthropic", api_key_env=("ANTHROPIC_API_KEY",)),
    "ollama": _local("ollama", "http://127.0.0.1:11434/v1"),
    "lmstudio": _local("lmstudio", "http://127.0.0.1:1234/v1"),
    "vllm": _local("vllm", "http://127.0.0.1:8000/v1"),
    "llamacpp": _local("llamacpp", "http://127.0.0.1:8080/v1"),
    "openrouter": _hosted("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "deepseek": _hosted(
        "deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", reasoning_field="reasoning_content"
    ),
    "groq": _hosted("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "mistral": _hosted("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
}


def _providers(config: Mapping[str, Any] | None) -> dict[str, ProviderConfig]:
    providers = dict(BUILTIN_PROVIDERS)
    if not config:
        return providers
    entries = config.get("provider") or {}  # config is the whole tether.json; only "provider" is read here
    if not isinstance(entries, Mapping):
        raise ConfigError("must be an object", key="provider")
    for provider_id, raw in cast(Mapping[str, Any], entries).items():
        providers[provider_id] = ProviderConfig.from_mapping(provider_id, raw, providers.get(provider_id))
    return providers


def resolve_model(
    spec: str, config: Mapping[str, Any] | None = None, *, env: Mapping[str, str] | None = None
) -> Model:
    """The model for ``provider/model`` (``openai/gpt-5``, ``anthropic/claude-sonnet-4-5``, ``ollama/qwen3:8b``).

    Args:
        spec: ``provider/model``.
        config: the merged ``tether.json``; its ``provider`` entries extend or override the built-in ones.
        env: where API keys are looked up (``os.environ`` by default).

    Raises:
        ConfigError: the spec has no ``/``, the provider is unknown or its entry is invalid.
        ProviderAuthError: the provider needs an API key and none of its variables is set (the message names them).
    """
    provider_id, sep, model_id = spec.partition("/")
    if not sep or not provider_id or not model_id:
        raise ConfigError(
            f"model {spec!r} must be written provider/model, for example openai/gpt-5", key="model"
        )
    providers = _providers(config)
    entry = providers.get(provider_id)
    if entry is None:
        known = ", ".join(sorted(providers))
        raise ConfigError(
            f"unknown provider {provider_id!r} in {spec!r}; known providers: {known}. Define it under "
            f'"provider" with "base_url" (and "api" when it is not OpenAI-compatible)',
            key="model",
        )
    environ = os.environ if env is None else env
    key = entry.api_key or next((environ[n] for n in entry.api_key_env if environ.get(n)), None)
    if key is None and entry.requires_key:
        names = " or ".join(entry.api_key_env) or f"provider.{provider_id}.api_key_env"
        raise ProviderAuthError(f"No API key for provider {provider_id!r} ({spec}): set {names}.")
    settings = ClientSettings(
        base_url=entry.base_url,
        api_key=key,
        headers=entry.headers,
        timeouts=entry.timeouts,
        retry=entry.retry,
    )
    limits = entry.limits.get(model_id, ModelLimits())
    options = entry.options
    model: HTTPModel
    if entry.api == "anthropic":
        from ._anthropic import DEFAULT_MAX_TOKENS, AnthropicModel

        model = AnthropicModel(
            model_id, provider=provider_id, settings=settings, max_tokens=limits.output or DEFAULT_MAX_TOKENS
        )
    elif entry.api == "openai-responses":
        from ._openai_responses import OpenAIResponsesModel

        model = OpenAIResponsesModel(
            model_id,
            provider=provider_id,
            settings=settings,
            strict_tools=bool(options.get("strict_tools", True)),
        )
    else:
        from ._openai_chat import OpenAIChatModel

        is_openai = provider_id == "openai"
        model = OpenAIChatModel(
            model_id,
            provider=provider_id,
            settings=settings,
            strict_tools=bool(options.get("strict_tools", is_openai)),
            include_usage=bool(options.get("include_usage", True)),
            reasoning_field=options.get("reasoning_field"),
            max_tokens_field=str(
                options.get("max_tokens_field", "max_completion_tokens" if is_openai else "max_tokens")
            ),
        )
    model.limits = limits
    return model
