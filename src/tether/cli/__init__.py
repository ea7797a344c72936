"""The ``tether`` command (typer + rich).

Importing this package is cheap on purpose: :func:`main` loads the command tree, and each command imports rich and
tether's runtime only when it runs, so ``tether --help`` starts in well under 300 ms.

Exit codes: 0 success, 1 the turn failed, 2 usage or configuration error, 130 cancelled.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``tether`` command with ``argv`` (default: ``sys.argv[1:]``); exits the process."""
    from ._app import app

    app(args=list(argv) if argv is not None else None, prog_name="tether")
