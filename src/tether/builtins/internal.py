"""What tether's own packages share from ``tether.builtins`` beyond its user surface.

``tether.builtins`` makes the built-in tools. The names here are for ``_preview`` (the change an edit, write or
apply_patch call would make, shown before approval): the diff, edit's replacement with its errors and apply_patch's
parser and applier, so a preview computes exactly what the tool will do. They may change without notice.
``tests/test_exports.py`` pins the list.
"""

from ._common import unified_diff
from ._patch import PatchError, apply_chunks, parse_patch
from ._replacers import AmbiguousMatch, IndentationUnclear, NoMatch, SpanTooLarge, replace

__all__ = [
    "AmbiguousMatch",
    "IndentationUnclear",
    "NoMatch",
    "PatchError",
    "SpanTooLarge",
    "apply_chunks",
    "parse_patch",
    "replace",
    "unified_diff",
]
