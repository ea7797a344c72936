"""What tether's own packages share from ``tether.llm`` beyond its user surface.

``tether.llm.__all__`` is what README.md and docs/ show: the request, the event vocabulary and the ``Model`` base
class. The names here are for sibling packages (``cli``, the runtime): the cache of opened models and the prices a
turn's usage is costed with. They may change without notice. ``tests/test_exports.py`` pins both lists.
"""

from ._model import ModelCache
from ._pricing import DEFAULT_PRICES, Price, dollars, find_price, usage_cost

__all__ = ["DEFAULT_PRICES", "ModelCache", "Price", "dollars", "find_price", "usage_cost"]
