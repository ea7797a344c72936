"""The price table and the dollar arithmetic: cached input priced apart and never twice, config over defaults."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.errors import ConfigError
from tether.llm import Usage
from tether.llm._pricing import DEFAULT_PRICES, PRICES_DATE, Price, dollars, find_price, usage_cost


def test_uncached_input_output_and_cache_tokens_are_each_priced_once() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    # input_tokens includes the cache: 1M in total, of which 600K read from the cache and 100K written to it
    usage = Usage(
        input_tokens=1_000_000, output_tokens=200_000, cache_read_tokens=600_000, cache_write_tokens=100_000
    )
    expected = 300_000 * 3.0 / 1e6 + 600_000 * 0.3 / 1e6 + 100_000 * 3.75 / 1e6 + 200_000 * 15.0 / 1e6
    assert price.cost(usage) == pytest.approx(expected)
    assert price.cost(usage) == pytest.approx(0.9 + 0.18 + 0.375 + 3.0)


def test_a_missing_cache_price_bills_those_tokens_as_input() -> None:
    price = Price(input=2.0, output=8.0)
    usage = Usage(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=400_000)
    assert price.cost(usage) == pytest.approx(2.0)


def test_more_cached_than_input_never_gives_a_credit() -> None:
    price = Price(input=1.0, output=1.0, cache_read=0.1)
    usage = Usage(input_tokens=10, output_tokens=0, cache_read_tokens=1_000_000)
    assert price.cost(usage) == pytest.approx(0.1)


@given(
    uncached=st.integers(0, 10**8),
    read=st.integers(0, 10**8),
    write=st.integers(0, 10**8),
    output=st.integers(0, 10**8),
)
def test_cost_is_the_sum_of_its_parts(uncached: int, read: int, write: int, output: int) -> None:
    price = Price(input=5.0, output=25.0, cache_read=0.5, cache_write=6.25)
    usage = Usage(
        input_tokens=uncached + read + write,
        output_tokens=output,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )
    parts = [
        Usage(input_tokens=uncached),
        Usage(input_tokens=read, cache_read_tokens=read),
        Usage(input_tokens=write, cache_write_tokens=write),
        Usage(output_tokens=output),
    ]
    assert price.cost(usage) == pytest.approx(sum(price.cost(p) for p in parts))
    assert math.isclose(price.cost(usage + usage), 2 * price.cost(usage), rel_tol=1e-9, abs_tol=1e-12)


def test_published_defaults_for_the_common_models() -> None:
    gpt5 = find_price("openai", "gpt-5")
    assert gpt5 == Price(input=1.25, output=10.0, cache_read=0.125, cache_write=1.25)
    sonnet = find_price("anthropic", "claude-sonnet-4-5")
    assert sonnet == Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    assert find_price("anthropic", "claude-opus-4-1") == Price(
        input=15.0, output=75.0, cache_read=1.5, cache_write=18.75
    )
    assert find_price("anthropic", "claude-haiku-4-5") == Price(
        input=1.0, output=5.0, cache_read=0.1, cache_write=1.25
    )
    for model in ("gpt-5-mini", "gpt-4.1", "gpt-4o", "o3", "o4-mini"):
        assert find_price("openai", model) is not None, model
    assert PRICES_DATE.startswith("20")


def test_dated_snapshots_and_aliases_take_their_models_price() -> None:
    assert (
        find_price("anthropic", "claude-sonnet-4-5-20250929")
        == DEFAULT_PRICES["anthropic"]["claude-sonnet-4-5"]
    )
    assert (
        find_price("anthropic", "claude-sonnet-4-20250514") == DEFAULT_PRICES["anthropic"]["claude-sonnet-4"]
    )
    assert (
        find_price("anthropic", "claude-3-5-haiku-latest") == DEFAULT_PRICES["anthropic"]["claude-3-5-haiku"]
    )
    assert find_price("openai", "gpt-4.1-2025-04-14") == DEFAULT_PRICES["openai"]["gpt-4.1"]
    # a snapshot with a price of its own is listed exactly and wins over its family
    assert find_price("openai", "gpt-4o-2024-05-13") == Price(
        input=5.0, output=15.0, cache_read=None, cache_write=5.0
    )


def test_unknown_models_and_providers_have_no_price() -> None:
    assert find_price("openai", "gpt-99") is None
    assert find_price("ollama", "qwen3:8b") is None
    assert (
        find_price("work", "gpt-5") is None
    )  # a configured provider may bill differently: no borrowed price
    assert usage_cost(Usage(input_tokens=1000, output_tokens=10), None) is None


def _config(provider: str, model: str, cost: Any) -> dict[str, Any]:
    return {"provider": {provider: {"models": {model: {"cost": cost}}}}}


def test_config_prices_a_model_the_table_does_not_know() -> None:
    config = _config("ollama", "qwen3:8b", {"input": 0, "output": 0})
    assert find_price("ollama", "qwen3:8b", config) == Price(input=0.0, output=0.0)
    work = _config("work", "big", {"input": 1, "output": 2, "cache_read": 0.5, "cache_write": 1.5})
    assert find_price("work", "big", work) == Price(input=1.0, output=2.0, cache_read=0.5, cache_write=1.5)


def test_config_overrides_some_fields_of_a_default() -> None:
    config = _config("openai", "gpt-5", {"input": 0.625})
    assert find_price("openai", "gpt-5", config) == Price(
        input=0.625, output=10.0, cache_read=0.125, cache_write=1.25
    )
    # other models of the provider keep their defaults; other keys of the entry are not read
    assert find_price("openai", "gpt-5-mini", config) == DEFAULT_PRICES["openai"]["gpt-5-mini"]
    unset = _config("openai", "gpt-5", {"input": None, "output": 9})
    assert find_price("openai", "gpt-5", unset) == Price(
        input=1.25, output=9.0, cache_read=0.125, cache_write=1.25
    )
    limits_only = {"provider": {"openai": {"models": {"gpt-5": {"limit": {"context": 1000}}}}}}
    assert find_price("openai", "gpt-5", limits_only) == DEFAULT_PRICES["openai"]["gpt-5"]


@pytest.mark.parametrize(
    ("cost", "message"),
    [
        ("cheap", "must be an object"),
        ({"input": "1"}, "cost.input: must be a number of dollars per million tokens"),
        ({"input": -1, "output": 1}, "cost.input: must be a number"),
        ({"input": float("nan"), "output": 1}, "cost.input: must be a number"),
        ({"input": float("inf"), "output": 1}, "cost.input: must be a number"),
        ({"input": True, "output": 1}, "cost.input: must be a number"),
        ({"input": 1, "output": 1, "cache": {"read": 1}}, "unknown key 'cache'"),
        ({"input": 1}, "needs output"),
        ({}, "needs input and output"),
    ],
)
def test_a_broken_cost_entry_is_a_config_error_naming_the_key(cost: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        find_price("work", "big", _config("work", "big", cost))
    assert message in str(caught.value)
    assert "provider.work.models.big.cost" in str(caught.value)


def test_a_provider_reported_cost_wins_over_the_table() -> None:
    price = Price(input=1.0, output=1.0)
    assert usage_cost(Usage(input_tokens=1_000_000, cost=0.42), price) == 0.42
    assert usage_cost(Usage(input_tokens=1_000_000), price) == pytest.approx(1.0)


def test_dollars_shows_cents_precisely_below_a_dollar() -> None:
    assert dollars(0.0) == "$0.0000"
    assert dollars(0.00003) == "<$0.0001"  # not $0.0000: it did cost something
    assert dollars(0.01234) == "$0.0123"
    assert dollars(12.345) == "$12.35"
    assert dollars(1234.5) == "$1,234.50"
