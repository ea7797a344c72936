"""A tool's metadata check: the common small flat shape is passed without encoding it, and every answer is the one
encoding it gives (JSON or dropped, within ``MAX_METADATA_BYTES`` or dropped, lone surrogates shown)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.storable import has_surrogates, storable
from tether.tools._settle import MAX_METADATA_BYTES, _check_metadata


def reference(metadata: Any) -> Any:
    """The check as it is defined: encode, then keep, drop or show."""
    try:
        encoded = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    if len(encoded.encode("utf-8", "surrogatepass")) > MAX_METADATA_BYTES:
        return None
    return storable(metadata) if has_surrogates(encoded) else metadata


TEXT = st.text(st.sampled_from(["a", "\x00", "\n", '"', "\\", "é", "\ud800"]), max_size=140)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
FLAT = st.dictionaries(st.text(st.sampled_from(["k", "\x01", "é"]), max_size=40), SCALARS, max_size=20)


@settings(max_examples=300)
@given(FLAT)
def test_the_metadata_check_gives_what_encoding_gives(metadata: dict[str, Any]) -> None:
    found = _check_metadata("t", metadata)
    expected = reference(metadata)
    assert json.dumps(found, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_a_small_flat_metadata_is_kept_as_the_same_object_and_a_large_one_is_dropped() -> None:
    page = {"truncated": False, "type": "file", "total": 200, "next": None}
    assert _check_metadata("read", page) is page
    wide = {f"k{i}": "\x00" * 128 for i in range(40)}  # over the limit once encoded (\u0000 each)
    assert _check_metadata("t", wide) is None
    assert _check_metadata("t", {"x": object()}) is None
