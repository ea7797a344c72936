"""Visible escapes for text that is not valid Unicode: storable, sendable, and reversible for names."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.storable import has_surrogates, raw_name, visible

# Any code point including lone surrogates, but no backslash (a literal backslash is the tools' ambiguity case).
_chars = st.characters(blacklist_characters="\\", blacklist_categories=())


@given(st.text(alphabet=_chars))
def test_visible_text_is_always_utf8_and_a_shown_name_maps_back_to_the_original(text: str) -> None:
    shown = visible(text)
    shown.encode("utf-8")  # never raises
    assert not has_surrogates(shown)
    if has_surrogates(text):
        assert raw_name(shown) == text
    else:
        assert shown == text
        assert raw_name(shown) is None


def test_undecodable_bytes_show_as_hex_and_other_surrogates_as_code_points() -> None:
    assert visible("bad\udcffname\ud800") == "bad\\xffname\\ud800"
    assert visible("café ✓") == "café ✓"
    assert raw_name("plain\\n") is None  # an escape that no lone surrogate produces is left alone
