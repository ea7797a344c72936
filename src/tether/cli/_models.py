"""Choosing the model for a turn: ``--model``, else the config's ``model``; two offline names for demos and tests.

* ``replay`` (or ``replay/demo``): the demo's recorded transcript (:class:`tether.demo.ReplayModel`);
* ``scripted:<path>``: a JSON script in the OpenCode peer's format (:class:`tether.demo.ScriptModel`), the test hook;
* anything else is ``provider/model`` for :func:`tether.llm.providers.resolve_model`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError, UsageError
from ..llm import Model

__all__ = ["NO_MODEL", "choose_model", "prewarm"]

NO_MODEL = (
    "no model chosen: pass --model provider/model (e.g. --model openai/gpt-5 with OPENAI_API_KEY set, or "
    '--model anthropic/claude-sonnet-4-5 with ANTHROPIC_API_KEY) or set "model" in .tether/tether.json. '
    "To try tether offline, run `tether demo`."
)


def choose_model(name: str | None, config: Any) -> Model:
    """The model for ``name`` (or the config's ``model``).

    Raises:
        UsageError: no model was chosen, or the name is malformed.
        ConfigError: the provider configuration is broken (a script file, a provider entry).
    """
    chosen = name or (config.get("model") if config is not None else None)
    if not chosen:
        raise UsageError(NO_MODEL)
    if not isinstance(chosen, str):
        raise ConfigError('expected a "provider/model" string', key="model")
    if chosen.startswith("scripted:"):
        from ..demo import ScriptModel

        return ScriptModel(chosen.removeprefix("scripted:"))
    if chosen in ("replay", "replay/demo"):
        from ..demo import ReplayModel

        return ReplayModel()
    if "/" not in chosen:
        raise UsageError(f'model "{chosen}" is not provider/model (e.g. openai/gpt-5)')
    from ..llm import providers

    resolve = getattr(providers, "resolve_model", None)
    if resolve is None:
        raise UsageError(
            "provider adapters are not available in this build (tether.llm.providers.resolve_model)"
        )
    # Only the "provider" mapping: resolve_model reads a mapping without that key as the mapping itself.
    providers = config.get("provider") if config is not None else None
    model: Model = resolve(chosen, {"provider": providers or {}})
    prewarm("anthropic" if "anthropic" in type(model).__module__ else "openai")
    return model


_warming: set[str] = set()


def prewarm(sdk: str) -> None:
    """Import a provider SDK (``openai``, ``anthropic``) in a background thread while the runtime opens.

    The SDK is the largest import of a run (about a third of a second for ``openai``); overlapping it with config
    loading, the store and the built-ins keeps a no-tool run near one second. Idempotent.
    """
    if sdk in _warming:
        return
    _warming.add(sdk)
    import threading

    def load() -> None:
        __import__(sdk)

    threading.Thread(target=load, name=f"tether-import-{sdk}", daemon=True).start()
