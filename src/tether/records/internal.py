"""What tether's own packages share from ``tether.records`` beyond its user surface: the codec and its helpers.

The stores (``tether.store``), the runner and the edges read and write a record's JSON only through these (one
codec: ``PARTS`` / ``MESSAGES``). They may change without notice. ``tests/test_exports.py`` pins the list.
"""

from ._events import storable_event, storable_part
from ._model import (
    MESSAGES,
    PARTS,
    MessageErrorKind,
    ToolErrorKind,
    check_session_rules,
    message_from_json,
    message_to_json,
    now_ms,
    part_from_json,
    part_to_json,
    part_to_plain,
    rules_from_json,
    rules_to_json,
    usage_from_json,
    usage_to_json,
)

__all__ = [
    "MESSAGES",
    "PARTS",
    "MessageErrorKind",
    "ToolErrorKind",
    "check_session_rules",
    "message_from_json",
    "message_to_json",
    "now_ms",
    "part_from_json",
    "part_to_json",
    "part_to_plain",
    "rules_from_json",
    "rules_to_json",
    "storable_event",
    "storable_part",
    "usage_from_json",
    "usage_to_json",
]
