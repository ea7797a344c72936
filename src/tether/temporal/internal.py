"""What tether's own packages share from ``tether.temporal`` beyond its user surface.

``tether.temporal.__all__`` is what README.md and docs/ show. The names here are for ``cli`` (``tether worker``):
how long a client waits for the Temporal server. They may change without notice. ``tests/test_exports.py`` pins
both lists.
"""

from ._client import PATIENCE_SECONDS

__all__ = ["PATIENCE_SECONDS"]
