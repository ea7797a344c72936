"""Property: no generated path lets a write land outside the root without external_directory approval."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.tools import Completed

COMPONENTS = st.sampled_from(
    ["..", ".", "sub", "out", "in", "dangling", "file.txt", "é", "n\u0303", "~", "new", "x.txt", " ", "..."]
)


def _snapshot(base: Path, root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        if Path(dirpath) == root or root in Path(dirpath).parents:
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink() or p.is_dir():
                out[str(p)] = None
            else:
                out[str(p)] = p.read_bytes()
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    prefix=st.sampled_from(["", "/", "~/", "~", "ROOT/", "OUTSIDE/", "BASE/", "../", "../../"]),
    parts=st.lists(COMPONENTS, min_size=1, max_size=5),
)
def test_no_write_lands_outside_without_external_approval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_project, kit, prefix: str, parts: list[str]
) -> None:
    base = tmp_path
    root = base / "project"
    outside = base / "outside"
    home = base / "home"
    for d in (root / "sub", outside, home):
        d.mkdir(parents=True, exist_ok=True)
    for link, target in (("out", outside), ("in", root / "sub"), ("dangling", outside / "dangling.txt")):
        if not (root / link).is_symlink():
            (root / link).symlink_to(target)
    monkeypatch.setenv("HOME", str(home))
    path = prefix.replace("ROOT", str(root)).replace("OUTSIDE", str(outside)).replace(
        "BASE", str(base)
    ) + "/".join(parts)
    perms = kit.Recorder(decide=lambda r: "deny" if r.action == "external_directory" else "allow")
    project = make_project(perms)
    before = _snapshot(base, root)
    outcome = anyio.run(lambda: project.call("write", path=path, content="payload\n"))
    assert _snapshot(base, root) == before, path
    if isinstance(outcome, Completed):
        assert "external_directory" not in [r.action for r in perms.requests]
        written = root / outcome.metadata["resource"]  # type: ignore[index]
        assert written.resolve().is_relative_to(root.resolve())
