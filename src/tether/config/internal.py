"""What tether's own packages share from ``tether.config`` beyond its user surface.

``tether.config.__all__`` is what README.md and docs/ show: loading a configuration, its permission and agent
sections, trust. The names here are for sibling packages (``cli``, ``plugins``, ``builtins``, the runtime): the JSON
key paths the CLI shows, what a restricted project's config had ignored, the store choice, the reference text and the
check that a project file belongs to someone else. They may change without notice. ``tests/test_exports.py`` pins
both lists.
"""

from ._discover import foreign
from ._json import format_path, leaves
from ._restrict import describe, servers
from ._schema import config_reference
from ._store import store_choice

__all__ = ["config_reference", "describe", "foreign", "format_path", "leaves", "servers", "store_choice"]
