"""The request body's one encoder (``_common.dumps``, pydantic-core) writes the standard library's JSON.

The bytes are the standard encoder's (compact, UTF-8, nothing escaped that need not be), except the spelling of
some floats (``1e-7`` for ``1e-07``, ``0.00001`` for ``1e-05``): the same numbers.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tether.llm.providers._common import dumps

TEXT = st.text(st.characters(exclude_categories=["Cs"]))  # lone surrogates are never storable (law 12)
SCALARS = st.none() | st.booleans() | st.integers() | TEXT


def documents(scalars: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5),
        max_leaves=30,
    )


def standard(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@given(documents(SCALARS))
def test_the_body_is_the_standard_encoders_bytes(value: Any) -> None:
    assert dumps(value) == standard(value)


@given(documents(SCALARS | st.floats(allow_nan=False, allow_infinity=False)))
def test_the_body_reads_back_as_the_same_values(value: Any) -> None:
    assert json.loads(dumps(value)) == value


def test_control_characters_quotes_and_non_ascii_are_written_as_the_standard_encoder_writes_them() -> None:
    value = {"content": 'line\n\t"quoted" \\ \x00\x1f\x7f é 中 \u2028 😀', "n": [1, -2, 2**70, 1.5, -0.0]}
    assert dumps(value) == standard(value)
