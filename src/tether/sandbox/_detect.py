"""Which mechanism holds commands on this machine: found once per process, and said in one line.

In order: bubblewrap (``bwrap`` on ``PATH``, and one real start with the namespaces every sandbox uses: a container
or a kernel that forbids user namespaces fails here, not at the first command), else Landlock (the kernel's ABI
version, :mod:`._landlock`), else none. ``mode`` narrows the choice (``bwrap``, ``landlock``) or turns it off.

The answer is cached per process and mode (a probe costs one ``bwrap`` start, ~4 ms); :func:`reset` forgets it (for
tests and ``tether doctor --refresh``, nothing else).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from typing import Literal

from .._record import record
from . import _landlock
from ._bwrap import NAMESPACE_FLAGS
from ._policy import Mechanism

__all__ = ["Detection", "Mode", "detect", "notice", "reset"]

Mode = Literal["auto", "bwrap", "landlock", "off"]
"""``auto``: the best the machine offers; ``bwrap``/``landlock``: that one or none; ``off``: never sandbox."""

_PROBE_TIMEOUT = 10.0


@record
class Detection:
    """What was found.

    Attributes:
        mechanism: the mechanism commands run under.
        bwrap: the bubblewrap executable, when found on ``PATH``.
        landlock_abi: the kernel's Landlock ABI version (0: none).
        reasons: why a better mechanism was not chosen (shown by ``tether doctor`` and the notice).
    """

    mechanism: Mechanism
    bwrap: str | None = None
    landlock_abi: int = 0
    reasons: tuple[str, ...] = ()


_lock = threading.Lock()
_found: dict[str, Detection] = {}


def detect(mode: Mode = "auto") -> Detection:
    """The mechanism for ``mode`` on this machine (cached per process). Blocking the first time (one probe)."""
    with _lock:
        found = _found.get(mode)
        if found is None:
            found = _found[mode] = _detect(mode)
        return found


def reset() -> None:
    """Forget what was found (the next :func:`detect` probes again)."""
    with _lock:
        _found.clear()


def _detect(mode: Mode) -> Detection:
    if mode == "off":
        return Detection(mechanism="none", reasons=("sandbox.mode is off",))
    reasons: list[str] = []
    bwrap: str | None = None
    if mode in ("auto", "bwrap"):
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            reasons.append(
                "bubblewrap is not installed (bwrap not on PATH; Debian/Ubuntu: apt install bubblewrap)"
            )
        else:
            failure = _probe(bwrap)
            if failure is None:
                return Detection(mechanism="bwrap", bwrap=bwrap, landlock_abi=_landlock.abi_version())
            reasons.append(f"bubblewrap cannot start a sandbox here: {failure}")
    abi = _landlock.abi_version()
    if mode in ("auto", "landlock"):
        if abi >= 1:
            return Detection(mechanism="landlock", bwrap=bwrap, landlock_abi=abi, reasons=tuple(reasons))
        reasons.append(
            "the kernel has no Landlock"
            if sys.platform.startswith("linux")
            else f"{sys.platform}: no Landlock"
        )
    return Detection(mechanism="none", bwrap=bwrap, landlock_abi=abi, reasons=tuple(reasons))


def _probe(bwrap: str) -> str | None:
    """``None`` when bubblewrap starts a sandbox with our namespaces, else why not (its last line of error)."""
    true = shutil.which("true") or "/bin/true"
    argv = [
        bwrap,
        *NAMESPACE_FLAGS,
        "--unshare-net",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    try:
        done = subprocess.run(
            [*argv, "--", true],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
            cwd="/",
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def notice(detection: Detection, *, required: bool = False) -> str | None:
    """The one line a run prints when commands are not fully sandboxed (``None`` when bubblewrap holds them)."""
    match detection.mechanism:
        case "bwrap":
            return None
        case "landlock":
            what = "sandbox: Landlock only (writes confined to the project and temp; protected paths are decided by the asks"
            return f"{what}): {'; '.join(detection.reasons) or 'bubblewrap not used'}. See tether doctor."
        case "none":
            why = "; ".join(detection.reasons) or "no mechanism"
            if required:
                return f"sandbox: required but unavailable ({why}): bash commands are refused. See tether doctor."
            return f"sandbox: none, bash commands run unconfined ({why}). See tether doctor."
