"""Property: whatever the path, an internal result really lands inside the root, and everything else is external."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.errors import PathError
from tether.location import Location

_BASE = Path(tempfile.mkdtemp(prefix="tether-resolve-prop-"))
ROOT = _BASE / "root"
OUTSIDE = _BASE / "outside"
(ROOT / "sub").mkdir(parents=True)
OUTSIDE.mkdir()
(ROOT / "file.txt").write_text("x")
(ROOT / "out").symlink_to(OUTSIDE)
(ROOT / "in").symlink_to(ROOT / "sub")
(ROOT / "dangling").symlink_to(OUTSIDE / "missing.txt")
(ROOT / "loop").symlink_to(ROOT / "loop")

COMPONENTS = st.sampled_from(
    ["..", ".", "sub", "out", "in", "dangling", "loop", "file.txt", "é", "ü\u0308", "~", "new", " ", "a b"]
)
PREFIXES = st.sampled_from(["", "/", "~/", str(ROOT) + "/", str(OUTSIDE) + "/", str(_BASE) + "/", "../"])


@settings(max_examples=400, deadline=None)
@given(prefix=PREFIXES, parts=st.lists(COMPONENTS, min_size=0, max_size=6))
def test_internal_means_inside_and_external_carries_a_request(prefix: str, parts: list[str]) -> None:
    path = prefix + "/".join(parts)
    loc = Location(ROOT)
    try:
        resolved = loc.resolve(path)
    except PathError:
        return
    real = os.path.realpath(resolved.path)
    inside = real == str(ROOT) or real.startswith(str(ROOT) + os.sep)
    if resolved.internal:
        assert inside, (path, real)
        assert resolved.external is None
        assert not resolved.resource.startswith("/")
    else:
        assert not inside, (path, real)
        assert resolved.external is not None
        directory = resolved.external.directory
        assert real == directory or real.startswith(directory.rstrip("/") + "/")


@settings(max_examples=400, deadline=None)
@given(
    prefix=st.sampled_from(["", "//", "/", str(ROOT) + "//"]) | PREFIXES,
    parts=st.lists(COMPONENTS, max_size=6),
)
def test_the_canonical_path_and_resource_are_realpaths_and_relpaths(prefix: str, parts: list[str]) -> None:
    # An existing path's canonical form is found by the kernel (an O_PATH descriptor's /proc link), anything else by
    # realpath: either way the answer is realpath's, and an internal resource is relpath's from the real root.
    path = prefix + "/".join(parts)
    try:
        resolved = Location(ROOT).resolve(path)
    except PathError:
        return
    cleaned = path.strip()
    if cleaned == "~" or cleaned.startswith("~/"):
        cleaned = str(Path.home()) + cleaned[1:]
    expected = os.path.realpath(os.path.normpath(os.path.join(str(ROOT), cleaned)))
    assert str(resolved.path) == expected
    if resolved.internal:
        assert resolved.resource == os.path.relpath(expected, os.path.realpath(ROOT))
    else:
        assert resolved.resource == expected
