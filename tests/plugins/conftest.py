"""Real plugin distributions for the tests: a ``.dist-info`` with an ``entry_points.txt`` next to its modules.

``importlib.metadata`` finds a distribution by its ``.dist-info`` folder on ``sys.path``, exactly as an installed
package: the test puts the folder on ``sys.path`` (in process, with ``monkeypatch.syspath_prepend``) or on
``PYTHONPATH`` (a ``tether`` subprocess). Module names carry the test's unique suffix, so two tests never share an
imported module.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Mapping
from pathlib import Path

_counter = itertools.count()


def unique(name: str) -> str:
    """``name`` with a suffix no other test in this process uses (module names are process-wide)."""
    return f"{name}_{next(_counter)}"


def install(site: Path, dist: str, entry_points: Mapping[str, str], modules: Mapping[str, str]) -> Path:
    """Write the distribution ``dist`` into ``site``: its modules (name → source) and its ``tether.plugins`` entry
    points (name → ``module:attr``). Returns ``site``."""
    site.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n", encoding="utf-8")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[tether.plugins]\n{lines}", encoding="utf-8")
    return site
