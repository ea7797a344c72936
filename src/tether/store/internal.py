"""What tether's own packages share from ``tether.store`` beyond its user surface.

The todo list's record, protocol and bus event (the ``todowrite`` tool and the edges read them), the text of a call
found unfinished after a crash, and how a PostgreSQL URL is shown without its password. They may change without
notice. ``tests/test_exports.py`` pins the list.
"""

from ._interface import INTERRUPTED_ERROR
from ._todos import TODO_PRIORITIES, TODO_STATUSES, Todo, TodoPriority, TodoStatus, TodoStore, TodoUpdated

__all__ = [
    "INTERRUPTED_ERROR",
    "TODO_PRIORITIES",
    "TODO_STATUSES",
    "Todo",
    "TodoPriority",
    "TodoStatus",
    "TodoStore",
    "TodoUpdated",
    "describe",
]


def describe(url: str) -> str:
    """A PostgreSQL URL as errors and logs show it (the password masked); loads no PostgreSQL code until called."""
    from ._postgres_conn import describe as shown

    return shown(url)
