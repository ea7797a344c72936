"""Hostile config text the reader must get through in linear time, with a short error.

The attacks: ``/`` or ``,`` followed by ``"\\`` repeated to the 4 MiB the reader allows (every ``"`` opens a string
that never closes: a string pattern that must end in ``"`` is retried from each of them, quadratic: 40 KB took 14 s),
and one 3 MB unknown key (``difflib`` on it is quadratic, and the error printed it whole). Each runs in a subprocess
whose 20 s timeout is only a hang guard: the linear scan takes well under a second, the quadratic one hours.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tether.config import load_config
from tether.config._json import MAX_BYTES
from tether.config._jsonc import _comments, _trailing, strip_jsonc  # pyright: ignore[reportPrivateUsage]
from tether.errors import ConfigError

from ..cli._forkserver import tether

HANG_GUARD = 20


def _config_show(tmp_path: Path, project: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TETHER_DATA_DIR": str(tmp_path / "data"),
        "TETHER_CONFIG_DIR": str(tmp_path / "config"),
        "NO_COLOR": "1",
        "COLUMNS": "300",
    }
    return tether("config", "show", "--dir", str(project), env=env, timeout=HANG_GUARD)


@pytest.mark.parametrize("lead", ["/", ","])
def test_unterminated_strings_filling_the_size_limit_are_scanned_once(tmp_path: Path, lead: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    text = lead + '"\\' * ((MAX_BYTES - 1) // 2)
    (project / "tether.json").write_text(text, encoding="utf-8")
    done = _config_show(tmp_path, project)  # TimeoutExpired (a failure) if the scan is quadratic
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: configuration: {project.resolve() / 'tether.json'}:1")
    assert len(done.stderr) < 500


@pytest.mark.parametrize("pattern", [_comments(), _trailing()])
def test_a_string_match_never_fails_where_it_starts(pattern: object) -> None:
    # the property that keeps the scan linear: a match attempt at a quote always succeeds, so no quote is a start
    # the engine scans ahead from and then abandons
    import re

    assert isinstance(pattern, re.Pattern)
    for text in ['"\\"\\"\\', '"abc', '"a\\', '"a\nb"', '"ok"']:
        found = pattern.match(text)
        assert found is not None and found.group()[0] == '"', text


def test_comments_and_trailing_commas_are_still_blanked_and_unclosed_strings_still_fail(
    tmp_path: Path,
) -> None:
    assert strip_jsonc('{"a": "http://x/*y*/", // c\n "b": [1,],}', "f") == (
        '{"a": "http://x/*y*/",     \n "b": [1 ] }'
    )
    file = tmp_path / "tether.json"
    file.write_text('{"model": "openai/gpt-5, // no closing quote\n}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"tether\.json:1"):
        load_config(tmp_path, user_file=file, environ={})


def test_a_huge_unknown_key_is_reported_in_one_short_line(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "tether.json").write_text(json.dumps({"k" * 3_000_000: 1}), encoding="utf-8")
    done = _config_show(tmp_path, project)
    assert done.returncode == 2
    assert len(done.stderr) < 600, done.stderr[:600]
    assert f'unknown key "{"k" * 80}..."; expected one of: $schema, model' in done.stderr


def test_a_short_misspelled_key_still_gets_its_guess(tmp_path: Path) -> None:
    file = tmp_path / "tether.json"
    file.write_text('{"modle": "openai/gpt-5"}', encoding="utf-8")
    with pytest.raises(ConfigError, match='did you mean "model"'):
        load_config(None, user_file=file, environ={})


def test_an_ignored_long_key_is_clipped_in_its_warning_line(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".tether").mkdir(parents=True)
    pattern = "git " + "x" * 100_000
    (project / ".tether" / "tether.json").write_text(
        json.dumps({"permission": {"bash": {pattern: "allow"}}}), encoding="utf-8"
    )
    config = load_config(project, user_file=tmp_path / "none.json", environ={})
    assert [i.key for i in config.ignored] == [f'permission.bash["{pattern[:80]}..."]']
