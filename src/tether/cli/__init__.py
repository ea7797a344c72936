"""The ``tether`` command (typer + rich).

Importing this package is cheap on purpose: :func:`main` loads the command tree, and each command imports rich and
tether's runtime only when it runs, so ``tether --help`` starts in well under 300 ms.

Exit codes: 0 success, 1 the turn failed, 2 usage or configuration error, 130 cancelled.

The process ends with ``os._exit`` once the command is done, its output flushed and the ``atexit`` handlers run:
tearing the interpreter down (clearing every module, collecting the provider SDK's thousands of classes) costs
0.2–0.3 s after a run and does nothing a finished command needs.

The garbage collector is off while the command starts: importing the command's modules makes ~100,000 objects that
live as long as the process, and collecting them as they pile up cost about a tenth of a ``tether run``'s start-up
(~45 ms of CPU, ``bench/startup.py``; issue 38) and freed nothing. A command that runs long turns it back on once its
runtime is open (``_common.freeze_startup``); the short ones (a listing, an export) end first.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the ``tether`` command with ``argv`` (default: ``sys.argv[1:]``); exits the process."""
    gc.disable()  # until the command's runtime is open (see the module docstring)
    from ._app import app

    try:
        app(args=list(argv) if argv is not None else None, prog_name="tether")
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    _exit(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _exit(code: int) -> NoReturn:
    """Flush, run the ``atexit`` handlers, and end the process without interpreter teardown."""
    import atexit

    atexit._run_exitfuncs()  # pyright: ignore[reportAttributeAccessIssue] (documented in CPython, no stub)
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with the descriptor closed (``tether run ... >&-``): nothing to flush
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (tether run ... | head): nothing left to tell anyone
            code = code or 1
    os._exit(code)
