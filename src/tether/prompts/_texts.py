"""The built-in base texts: one per built-in agent, and for coding agents a note per model family.

The texts are package data (``texts/*.md``), read once. Which text an agent gets:

* ``plan`` and ``explore`` have their own text;
* every other agent (``build``, ``general``, a custom agent without a ``prompt``) gets the coding text, followed by
  the note for its model's family (:func:`model_family`).

An agent's configured ``prompt`` replaces all of this (:func:`base_prompt`); this module never sees config.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Literal

__all__ = ["ModelFamily", "base_prompt", "model_family"]

ModelFamily = Literal["anthropic", "openai", "gemini", "other"]

_OWN_TEXT = frozenset({"plan", "explore"})
_OPENAI_PREFIXES = ("gpt-", "gpt5", "o1", "o3", "o4", "codex", "chatgpt")


def model_family(model: str) -> ModelFamily:
    """The family of ``provider/model`` whose note follows the coding text.

    Decided by the model id first (a Claude model served by a gateway is still Claude), then by the provider.
    """
    provider, sep, rest = model.lower().partition("/")
    name = rest.rpartition("/")[2] if sep else provider
    if "claude" in name:
        return "anthropic"
    if "gemini" in name:
        return "gemini"
    if name.startswith(_OPENAI_PREFIXES) or "gpt-" in name:
        return "openai"
    if provider in ("anthropic", "openai", "gemini"):
        return provider
    if provider == "google":
        return "gemini"
    return "other"


@functools.cache
def _text(name: str) -> str:
    return (resources.files("tether.prompts") / "texts" / name).read_text(encoding="utf-8").strip()


def base_prompt(agent: str, model: str, *, prompt: str | None = None) -> str:
    """The first system text of a request: the agent's configured ``prompt``, else its built-in text.

    Args:
        agent: the agent's name.
        model: ``provider/model``: picks the family note of the coding text.
        prompt: the agent's configured prompt; when it is a non-empty string it replaces the built-in text whole.
    """
    if prompt:
        return prompt
    if agent in _OWN_TEXT:
        return _text(f"{agent}.md")
    return f"{_text('coding.md')}\n\n{_text(f'family/{model_family(model)}.md')}"
