"""What tether's own packages share from ``tether.llm.providers`` beyond its user surface.

``tether.llm.providers.__all__`` is what README.md and docs/ show: the adapters, the built-in providers and
``resolve_model``. The name here is for ``cli`` (``tether models``): the one merge of the built-in providers with a
config's ``provider`` entries, which ``resolve_model`` uses too, so the listing shows what a run would resolve. It
may change without notice. ``tests/test_exports.py`` pins both lists.
"""

from ._registry import _providers as configured_providers

__all__ = ["configured_providers"]
