"""Attack tests (review 2, hole 5): a repository's ``.dist-info`` does not become a plugin through ``sys.path``.

A relative ``PYTHONPATH`` entry (``src``) resolves against the directory tether starts in, a cloned repository's; an
absolute entry inside an untrusted project is the repository's too. Neither is searched for entry points.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tether.plugins import _sources  # pyright: ignore[reportPrivateUsage]

from ..cli.conftest import Cli
from .conftest import install, unique


def _plant(repo: Path, canary: Path) -> None:
    module = unique("tp_relative")
    source = (
        f"from pathlib import Path\nPath({str(canary)!r}).write_text('ran')\ndef plugin(api):\n    pass\n"
    )
    install(repo / "src", "planted", {"planted": f"{module}:plugin"}, {module: source})
    (repo / ".git").mkdir()  # a cloned repository: its root is the project


def _origins(result: object) -> set[str]:
    return {t["origin"] for t in json.loads(result.stdout)["tools"]}  # type: ignore[attr-defined]


def test_a_relative_pythonpath_entry_does_not_make_the_repositorys_dist_info_a_plugin(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    repo = tmp_path / "repo"
    _plant(repo, canary)
    cli = Cli(tmp_path)
    cli.env["PYTHONPATH"] = "src"
    result = cli.run("tools", "--format", "json", cwd=repo)
    assert result.code == 0, result.output
    assert not canary.exists() and _origins(result) == {"builtin"}


def test_an_absolute_entry_inside_an_untrusted_project_is_not_searched(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    repo = tmp_path / "repo"
    _plant(repo, canary)
    cli = Cli(tmp_path)
    cli.env["PYTHONPATH"] = str(repo / "src")
    result = cli.run("tools", "--format", "json", cwd=repo)
    assert result.code == 0, result.output
    assert not canary.exists() and _origins(result) == {"builtin"}
    # trusted, the same entry is the user's choice: its plugin loads (so the test can fail)
    cli.env["TETHER_TRUST"] = "1"
    trusted = cli.run("tools", "--format", "json", cwd=repo)
    assert trusted.code == 0, trusted.output
    assert canary.read_text() == "ran"


def test_the_search_path_keeps_only_absolute_entries_outside_the_excluded_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (tmp_path / "site").mkdir()
    (tmp_path / "project-sibling").mkdir()
    monkeypatch.chdir(project)
    entries = [
        "",
        ".",
        "src",
        "./src",
        "../project/src",
        str(project),
        str(project / "src"),
        str(tmp_path / "site"),
        str(tmp_path / "project-sibling"),
    ]
    monkeypatch.setattr(sys, "path", entries)
    search = _sources._search_path  # pyright: ignore[reportPrivateUsage]
    outside = [str(tmp_path / "site"), str(tmp_path / "project-sibling")]
    assert search() == [
        str(project / "src"),
        *outside,
    ]  # relative entries and the directory itself are dropped
    assert search([project]) == outside  # and what is inside an untrusted project
    link = tmp_path / "link"  # an absolute entry that leads into the project by a symlink
    link.symlink_to(project / "src")
    monkeypatch.setattr(sys, "path", [str(link)])
    assert search([project]) == []
