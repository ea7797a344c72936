"""What tokens cost: a price table per provider and model, and the arithmetic that turns :class:`Usage` into dollars.

Prices are USD per million tokens: ``input`` (uncached input), ``output`` (includes reasoning), ``cache_read`` and
``cache_write``. :data:`DEFAULT_PRICES` holds the published list prices of the built-in providers' common models
(standard tier, as listed by OpenAI and Anthropic on :data:`PRICES_DATE`); ``tether.json`` overrides or adds one with
``provider.<p>.models.<m>.cost`` (OpenCode's key and field names)::

    "provider": {"openai": {"models": {"gpt-5": {"cost": {"input": 1.25, "output": 10, "cache_read": 0.125}}}}}

The arithmetic follows the one invariant of :class:`Usage`: ``input_tokens`` *includes* the cache reads and writes,
so the uncached input is ``input - cache_read - cache_write`` and every token is priced exactly once. A cost the
provider reported itself (``Usage.cost``: OpenRouter, gateways) wins over the table. An unknown model has no price:
callers show tokens only, never a guessed cost.

Deliberately not modelled: long-context tiers (Anthropic's Sonnet above 200K input tokens, billed higher per step),
OpenAI's flex/priority tiers and batch discounts, Anthropic's one-hour cache writes. A table entry is the common case;
a config entry can state what a given account really pays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from .._record import record
from .._regex import lazy
from ..errors import ConfigError
from ._events import Usage

__all__ = ["DEFAULT_PRICES", "PRICES_DATE", "Price", "dollars", "find_price", "usage_cost"]

PRICES_DATE = "2025-11-25"
"""The day :data:`DEFAULT_PRICES` was checked against the providers' published price lists."""

_FIELDS = ("input", "output", "cache_read", "cache_write")


@record
class Price:
    """USD per million tokens. A cache price of ``None`` means those tokens are billed as uncached input."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        """The dollars ``usage`` costs at this price (cached input priced apart, never counted twice)."""
        read = usage.cache_read_tokens
        write = usage.cache_write_tokens
        uncached = max(
            0, usage.input_tokens - read - write
        )  # a provider reporting more cached than input: no credit
        read_price = self.input if self.cache_read is None else self.cache_read
        write_price = self.input if self.cache_write is None else self.cache_write
        micro = (
            uncached * self.input
            + read * read_price
            + write * write_price
            + usage.output_tokens * self.output
        )
        return micro / 1_000_000


def _openai(input: float, output: float, cache_read: float | None) -> Price:
    # OpenAI bills no premium for writing its automatic prompt cache (and reports no cache writes)
    return Price(input=input, output=output, cache_read=cache_read, cache_write=input)


def _anthropic(input: float, output: float) -> Price:
    # Anthropic's rule: a cache read is 0.1x the input price, a (5-minute) cache write 1.25x
    return Price(
        input=input, output=output, cache_read=round(input * 0.1, 6), cache_write=round(input * 1.25, 6)
    )


DEFAULT_PRICES: Mapping[str, Mapping[str, Price]] = {
    "openai": {
        "gpt-5.1": _openai(1.25, 10.0, 0.125),
        "gpt-5": _openai(1.25, 10.0, 0.125),
        "gpt-5-codex": _openai(1.25, 10.0, 0.125),
        "gpt-5-mini": _openai(0.25, 2.0, 0.025),
        "gpt-5-nano": _openai(0.05, 0.40, 0.005),
        "gpt-4.1": _openai(2.0, 8.0, 0.50),
        "gpt-4.1-mini": _openai(0.40, 1.60, 0.10),
        "gpt-4.1-nano": _openai(0.10, 0.40, 0.025),
        "gpt-4o": _openai(2.50, 10.0, 1.25),
        "gpt-4o-2024-05-13": _openai(5.0, 15.0, None),  # the first gpt-4o snapshot kept its launch price
        "gpt-4o-mini": _openai(0.15, 0.60, 0.075),
        "o1": _openai(15.0, 60.0, 7.50),
        "o3": _openai(2.0, 8.0, 0.50),
        "o3-mini": _openai(1.10, 4.40, 0.55),
        "o4-mini": _openai(1.10, 4.40, 0.275),
    },
    "anthropic": {
        "claude-opus-4-5": _anthropic(5.0, 25.0),
        "claude-opus-4-1": _anthropic(15.0, 75.0),
        "claude-opus-4-0": _anthropic(15.0, 75.0),
        "claude-opus-4": _anthropic(15.0, 75.0),
        "claude-sonnet-4-5": _anthropic(3.0, 15.0),
        "claude-sonnet-4-0": _anthropic(3.0, 15.0),
        "claude-sonnet-4": _anthropic(3.0, 15.0),
        "claude-3-7-sonnet": _anthropic(3.0, 15.0),
        "claude-haiku-4-5": _anthropic(1.0, 5.0),
        "claude-3-5-haiku": _anthropic(0.80, 4.0),
    },
}
"""List prices of the built-in providers' common models (see :data:`PRICES_DATE`)."""


# A dated snapshot or alias of a listed model: claude-sonnet-4-5-20250929, gpt-4.1-2025-04-14, claude-3-5-haiku-latest
_snapshot = lazy(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def _default(provider: str, model_id: str) -> Price | None:
    table = DEFAULT_PRICES.get(provider)
    if table is None:
        return None
    found = table.get(model_id)
    if found is None:
        found = table.get(_snapshot().sub("", model_id))
    return found


def _configured(config: Mapping[str, Any] | None, provider: str, model_id: str) -> Mapping[str, Any] | None:
    """The raw ``provider.<p>.models.<m>.cost`` entry, if the config has one (other shapes are not ours to judge)."""
    node: Any = config
    for key in ("provider", provider, "models", model_id, "cost"):
        if not isinstance(node, Mapping):
            return None
        node = cast(Mapping[str, Any], node).get(key)
    if node is None:
        return None
    where = f"provider.{provider}.models.{model_id}.cost"
    if not isinstance(node, Mapping):
        raise ConfigError(
            'must be an object like {"input": 1.25, "output": 10} (USD per 1M tokens)', key=where
        )
    return cast(Mapping[str, Any], node)


def find_price(provider: str, model_id: str, config: Mapping[str, Any] | None = None) -> Price | None:
    """The price of ``provider/model_id``: the config's ``cost`` entry over the built-in default, else ``None``.

    A config entry may set only some fields over a default (``{"input": 1.0}``); for a model without a default it
    needs at least ``input`` and ``output``.

    Args:
        provider: the provider id as the model spec names it (``openai``, ``anthropic``, a configured one).
        model_id: the model id after the first ``/``.
        config: the merged ``tether.json`` (``Config.data``).

    Raises:
        ConfigError: the ``cost`` entry is not an object of non-negative numbers with known keys.
    """
    base = _default(provider, model_id)
    raw = _configured(config, provider, model_id)
    if raw is None:
        return base
    where = f"provider.{provider}.models.{model_id}.cost"
    values: dict[str, float] = {}
    for name, value in raw.items():
        if name not in _FIELDS:
            raise ConfigError(f"unknown key {name!r}; use {', '.join(_FIELDS)}", key=where)
        if value is None:  # the config schema's "not set"
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not value >= 0
            or value == float("inf")
        ):
            raise ConfigError(
                "must be a number of dollars per million tokens, 0 or more", key=f"{where}.{name}"
            )
        values[name] = float(value)
    if base is not None:
        return replace(base, **values)
    missing = [name for name in ("input", "output") if name not in values]
    if missing:
        raise ConfigError(f"needs {' and '.join(missing)} (USD per 1M tokens)", key=where)
    return Price(**values)


def usage_cost(usage: Usage, price: Price | None) -> float | None:
    """The dollars ``usage`` cost: the provider's own figure if it sent one, else ``price``'s; ``None``: unknown."""
    if usage.cost is not None:
        return usage.cost
    return None if price is None else price.cost(usage)


def dollars(cost: float) -> str:
    """``$0.0123`` below a dollar (a turn often costs cents), ``$12.35`` above, ``<$0.0001`` for a crumb."""
    if 0 < cost < 0.0001:
        return "<$0.0001"
    return f"${cost:,.2f}" if cost >= 1 else f"${cost:.4f}"
