"""What the ``bash`` tool shows before its module loads: its description, the shell it runs and its default sandbox.

``builtin_tools`` registers ``bash`` with this module only (``_deferred``); ``bash.py`` (its input model, the command
plan, the run: ~1.3 % of a scripted ``tether run``'s instructions, issue 38) loads at the first call. Both build the
description here, from the same shell and sandbox, so the registered tool shows what ``bash.make`` would.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..sandbox import Sandbox

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "DESCRIPTION",
    "MAX_TIMEOUT_MS",
    "default_sandbox",
    "default_shell",
    "describe",
]

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000

DESCRIPTION = f"""Run a shell command in the working directory and return its output.

- `command` runs with `{{shell}} -c`; stdin is empty, so interactive prompts cannot be answered: pass flags such as
  `--yes` or `--no-edit` instead.
- `workdir` is the directory to run in (relative to the working directory, or absolute); it defaults to the working directory.
  Prefer it over `cd <dir> && ...`.
- `timeout` is in milliseconds: default {DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS}. When it passes, the command
  and everything it started are killed.
- `description` is a few words saying what the command does, shown to the user.
- stdout and stderr are combined in the order they were written. Long output is shortened in the middle and the full
  output is saved to a file you can read. Every process the command starts, background (`cmd &`) and detached
  (`setsid`, `nohup`, daemons) ones included, is stopped when the command finishes: a server started here does not
  keep running.
- Commands and paths outside the project may need the user's approval. Use the dedicated tools to read, search and
  edit files rather than `cat`, `grep`, `sed` or `echo >`."""

SANDBOX_TEXT = """
- Commands run in a sandbox ({mechanism}): they may write only in the project and `/tmp` (this session's private temp
  directory; other tools see it at `{tmp}/<session id>/`){network}. Git's and tether's config, hooks and instruction
  files are read-only. When a command fails only because the sandbox refused it (`Read-only file system`, `Permission
  denied`{net_errors}) and it really needs more, call bash again with `escalate: true` and a one-sentence
  `justification`: the user is asked, and the command then runs outside the sandbox."""


def default_shell(configured: str | None = None) -> str:
    """The configured shell, else ``/bin/bash`` if it exists, else ``/bin/sh``."""
    if configured:
        return configured
    return "/bin/bash" if os.access("/bin/bash", os.X_OK) else "/bin/sh"


def default_sandbox() -> Sandbox:
    """The sandbox with the default settings on this machine (its mechanism is found once per process)."""
    import tempfile

    from ..sandbox import Sandbox, SandboxSettings, detect

    settings = SandboxSettings()
    return Sandbox.make(settings, detect(settings.mode), Path(os.path.realpath(tempfile.gettempdir())), ())


def describe(shell: str, sandbox: Sandbox | None) -> str:
    """The tool's description for ``shell`` in ``sandbox`` (what it may write and reach, how to escalate)."""
    text = DESCRIPTION.replace("{shell}", os.path.basename(shell))
    if sandbox is None or not sandbox.active:
        return text
    mechanism = "bubblewrap" if sandbox.detection.mechanism == "bwrap" else "Landlock"
    offline = sandbox.network == "none"
    network = "; it has no network: connections and name lookups fail" if offline else ""
    net_errors = ", `Network is unreachable`, `Could not resolve host`" if offline else ""
    if sandbox.network == "proxy":
        network = (
            "; it reaches the network only through tether's proxy (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY are set for "
            "commands that may use the network; SOCKS5 at $TETHER_PROXY), which asks the user once per new host: a "
            "refused host gets HTTP 403, and direct connections (`/dev/tcp`, raw sockets) reach nothing. To reach a "
            "service on the user's own machine (127.0.0.1), clear NO_PROXY for that command"
        )
    extra = SANDBOX_TEXT.format(
        mechanism=mechanism,
        tmp=str(sandbox.temps.parent),
        network=network,
        net_errors=net_errors,
    )
    return text + extra
