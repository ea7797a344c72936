"""What tether's own packages share from ``tether.server`` beyond its user surface.

``tether.server.__all__`` is what README.md and docs/ show. The names here are for ``cli`` (``tether serve``'s
options): the check of the allowed browser origins. They may change without notice. ``tests/test_exports.py`` pins
both lists.
"""

from ._security import check_origins

__all__ = ["check_origins"]
