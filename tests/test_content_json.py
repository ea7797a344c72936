"""Content parts survive their JSON form, and what is not a part is refused rather than guessed."""

from __future__ import annotations

import pytest

from tether.content import File, Text, content_from_json, content_to_json, text_of


def test_text_and_file_parts_round_trip_through_json() -> None:
    parts = (
        Text("hello"),
        File.from_bytes(b"\x89PNG", mime="image/png", name="a.png"),
        File(mime="application/pdf", uri="https://example.test/a.pdf"),
    )
    encoded = content_to_json(parts)
    assert encoded[1] == {"type": "file", "mime": "image/png", "data": "iVBORw==", "name": "a.png"}
    assert encoded[2] == {"type": "file", "mime": "application/pdf", "uri": "https://example.test/a.pdf"}
    assert content_from_json(encoded) == parts


def test_a_file_part_is_its_uri_or_a_data_uri() -> None:
    assert File(mime="image/png", uri="file:///a.png").data_uri() == "file:///a.png"
    assert File.from_bytes(b"hi", mime="text/plain").data_uri() == "data:text/plain;base64,aGk="


def test_a_file_needs_exactly_one_of_data_and_uri() -> None:
    with pytest.raises(ValueError, match="exactly one of data"):
        File(mime="image/png")
    with pytest.raises(ValueError, match="exactly one of data"):
        File(mime="image/png", data="aGk=", uri="file:///a.png")


def test_an_item_that_is_not_a_part_is_refused() -> None:
    with pytest.raises(ValueError, match="not a content part"):
        content_from_json([{"type": "image", "url": "x"}])


def test_text_of_skips_file_parts() -> None:
    parts = [Text("a"), File.from_bytes(b"x", mime="image/png"), Text("b")]
    assert text_of(parts, sep="\n") == "a\nb"
