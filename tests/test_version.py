"""The version has one value: the package's ``__version__`` (from the ground-floor ``tether._version``) is the one the
build writes into the distribution's metadata (``[project] version`` in ``pyproject.toml``)."""

import tomllib
from pathlib import Path

import tether
from tether import _version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_version_is_the_one_pyproject_builds() -> None:
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    assert _version.__version__ == declared


def test_package_face_re_exports_the_ground_floor_version() -> None:
    assert tether.__version__ is _version.__version__
