"""The runner's whole suite (``test_bash_run.py``) again, with every shell started inside the sandbox.

Each test of ``test_bash_run`` runs unchanged; only the ``run_shell`` its module calls is the sandboxed one (the
policy the bash tool would build for the test's working directory). So the guard's guarantees (no survivors on
exit, timeout, cancellation or SIGKILL of tether; capture, spill and progress; exit statuses) hold through
bubblewrap exactly as without it.
"""

from __future__ import annotations

import functools
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether.builtins import _shell_run
from tether.sandbox import Sandbox, SandboxSettings, detect

from . import test_bash_run as base

pytestmark = pytest.mark.anyio

_DETECTION = detect("bwrap")
_SKIP = pytest.mark.skipif(
    _DETECTION.mechanism != "bwrap",
    reason=f"bubblewrap cannot run here ({'; '.join(_DETECTION.reasons)}); scripts/bootstrap installs it",
)
SANDBOX = Sandbox.make(SandboxSettings(mode="bwrap"), _DETECTION, Path(tempfile.gettempdir()).resolve(), ())
STARTED: list[str] = []


async def sandboxed_run_shell(command: str, *, cwd: Path, **kwargs: Any) -> _shell_run.ShellRun:
    """``run_shell`` inside the sandbox of a project rooted at ``cwd``."""
    policy = SANDBOX.policy(str(Path(cwd).resolve().parent), "ses_suite")
    STARTED.append(policy.mechanism)
    return await _shell_run.run_shell(command, cwd=cwd, sandbox=SANDBOX, policy=policy, **kwargs)


def _rebound(function: Callable[..., Any]) -> Callable[..., Any]:
    namespace = dict(function.__globals__)
    namespace["run_shell"] = sandboxed_run_shell
    copy = types.FunctionType(
        function.__code__, namespace, function.__name__, function.__defaults__, function.__closure__
    )
    functools.update_wrapper(copy, function)
    copy.__kwdefaults__ = function.__kwdefaults__
    return copy


store = base.store
cwd = base.cwd
big_store = base.big_store

for _name in dir(base):
    if _name.startswith("test_"):
        _test = getattr(base, _name)
        globals()[_name] = _SKIP(_rebound(_test))  # its marks (parametrize, ...) come with its __dict__


@_SKIP
async def test_the_suite_above_really_ran_in_bubblewrap(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    spill = base.OutputStore(tmp_path / "out")
    run = await sandboxed_run_shell(
        "touch /etc/tether-canary; echo $TMPDIR",
        cwd=work,
        time_limit=30,
        spill=lambda: spill.open_managed("s"),
    )
    assert "Read-only file system" in run.output
    assert run.output.strip().endswith("/tmp")
    assert STARTED and set(STARTED) == {"bwrap"}
