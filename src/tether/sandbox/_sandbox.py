"""One runtime's sandbox: its settings, the detected mechanism, and the policy of each command.

:class:`Sandbox` is made once per runtime (after detection, off the event loop) and captured by the bash tool and
the MCP stdio servers marked ``"sandbox": true``. Per call, :meth:`Sandbox.policy` builds the
:class:`~tether.sandbox.SandboxPolicy` for a Location and a session, and :meth:`Sandbox.wrap` turns a command's argv
into what actually starts (the bubblewrap argv, or the Landlock rules the guard applies before ``execve``). The
session temp directories it made go when the runtime closes (:meth:`Sandbox.close`, :mod:`._tmp`).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._record import record
from ..rules import Rule
from ._bwrap import bwrap_argv
from ._detect import Detection
from ._policy import PROXY_SOCKET, Network, ProxySeam, SandboxPolicy, build_policy
from ._proxy import proxy_socket
from ._settings import SandboxSettings
from ._tmp import SessionTemps, sweep

__all__ = ["LANDLOCK_MODULE", "Launch", "Sandbox", "protected_allows", "writable_from_rules"]

_log = logging.getLogger("tether.sandbox")

LANDLOCK_MODULE = str(Path(__file__).with_name("_landlock.py"))
"""The stdlib-only module the guard loads by path to apply Landlock in the shell it forks."""
BRIDGE_MODULE = str(Path(__file__).with_name("_bridge.py"))
"""The stdlib-only script that forwards a loopback port inside the sandbox to tether's proxy (network ``proxy``)."""
SECCOMP_MODULE = str(Path(__file__).with_name("_seccomp.py"))
"""The stdlib-only module whose seccomp filter refuses unix sockets: loaded by path by the guard, the bridge and the
MCP servers' trampoline."""

_WILD = ("*", "?")


def writable_from_rules(rules: Iterable[Rule]) -> tuple[str, ...]:
    """The directories the user's ``external_directory`` allow rules name (``/cache/*`` → ``/cache``), real paths.

    Only literal directory patterns count (``/a/b/*``, ``/a/b/**``, ``/a/b``, ``~/x/*``): ``*`` or ``/*/x`` name no
    one directory, and a directory becomes writable only when a rule names it.
    """
    found: list[str] = []
    for rule in rules:
        if rule.action != "external_directory" or rule.effect != "allow":
            continue
        pattern = (
            rule.resource.rstrip("*").rstrip("/")
            if rule.resource.endswith("/*") or rule.resource.endswith("/**")
            else rule.resource
        )
        pattern = os.path.expanduser(pattern)
        if not pattern.startswith("/") or any(w in pattern for w in _WILD) or pattern == "/":
            continue
        found.append(os.path.realpath(pattern))
    return tuple(dict.fromkeys(found))


def protected_allows(rules: Iterable[Rule]) -> tuple[str, ...]:
    """The ``edit`` allow patterns of the user's rules: one that names a protected anchor makes it writable."""
    return tuple(rule.resource for rule in rules if rule.action == "edit" and rule.effect == "allow")


@record
class Launch:
    """How one command starts: its argv, the variables it gets, and what the guard applies in its child before
    ``execve``: the Landlock rules, and the seccomp filter that refuses unix sockets (``seccomp``: the path of
    ``sandbox/_seccomp.py``, ``None``: not by the guard; the bridge applies it itself)."""

    argv: list[str]
    env: Mapping[str, str]
    landlock: Mapping[str, Any] | None = None
    seccomp: str | None = None


@record
class Sandbox:
    """The runtime's sandbox.

    Attributes:
        settings: the user's ``sandbox`` settings.
        detection: what holds commands on this machine.
        tmp_base: the directory session temp directories are made in (the real system temp directory).
        temps: the session temp directories this sandbox made (removed by :meth:`close`).
        writable: further writable directories (settings' ``writable`` and the user's ``external_directory`` allows).
        allowed_protected: the user's ``edit`` allow patterns (naming a protected anchor makes it writable).
    """

    settings: SandboxSettings
    detection: Detection
    tmp_base: Path
    temps: SessionTemps
    writable: tuple[str, ...] = ()
    allowed_protected: tuple[str, ...] = ()

    @classmethod
    def make(
        cls, settings: SandboxSettings, detection: Detection, tmp_base: Path, rules: Sequence[Rule]
    ) -> Sandbox:
        """The sandbox of a runtime whose user rules (the config's own, never a project's) are ``rules``."""
        return cls(
            settings=settings,
            detection=detection,
            tmp_base=tmp_base,
            temps=SessionTemps(tmp_base),
            writable=tuple(dict.fromkeys((*settings.writable, *writable_from_rules(rules)))),
            allowed_protected=protected_allows(rules),
        )

    @property
    def active(self) -> bool:
        """Whether commands run in a sandbox at all."""
        return self.detection.mechanism != "none"

    @property
    def auto_allow(self) -> bool:
        """Whether the built-in agents let bash commands run without asking, except destructive ones
        (``permissions.builtin_agents(sandboxed=...)``): only when bubblewrap holds them, and by default only when it
        holds the network too (``sandbox.network`` is not ``host``); ``sandbox.auto_allow`` decides otherwise.

        Never with Landlock only: it cannot make the protected paths inside the project read-only, so a command
        allowed without asking could plant ``core.fsmonitor`` in ``.git/config`` through a program the parse-level
        asks cannot read (``sh ./build.sh``, ``make``).
        """
        if self.detection.mechanism != "bwrap":
            return False
        if self.settings.auto_allow is not None:
            return self.settings.auto_allow
        return self.settings.network != "host"

    @property
    def network(self) -> Network:
        """The network commands get: ``sandbox.network``, except that ``proxy`` needs bubblewrap (a network namespace
        of its own) and a Python the sandbox can run for the bridge: else ``none``."""
        wanted = self.settings.network
        if wanted == "proxy" and (self.detection.mechanism != "bwrap" or self.bridge_python is None):
            return "none"
        return wanted

    @property
    def bridge_python(self) -> str | None:
        """The Python that runs the bridge inside the sandbox (tether's own), or ``None`` when the sandbox cannot see
        it (it lives under the temp directory, which the sandbox replaces)."""
        python = os.path.realpath(sys.executable) if sys.executable else ""
        base = str(self.tmp_base).rstrip("/") + "/"
        if not python or python.startswith(base) or BRIDGE_MODULE.startswith(base):
            return None
        return python

    @property
    def refused(self) -> str | None:
        """Why commands are refused (``sandbox.required`` without a mechanism), else ``None``."""
        if self.settings.required and not self.active:
            reasons = "; ".join(self.detection.reasons) or "no mechanism"
            return (
                f"The sandbox is required (sandbox.required in tether.json) but unavailable here: {reasons}. "
                "Run `tether doctor`; the user may run this command outside the sandbox if you call bash again with "
                "escalate: true and a justification."
            )
        return None

    def policy(
        self,
        root: str,
        session_id: str,
        *,
        extra_protected: Iterable[str] = (),
        allowed: Iterable[str] = (),
        visible: Iterable[str] = (),
        writable: Iterable[str] = (),
        proxy: bool = False,
    ) -> SandboxPolicy:
        """The policy of a command in the project at real ``root`` for ``session_id``. Blocking (reads the file system).

        ``allowed`` adds protected anchors this call was allowed to write (the parse-level asks approved them);
        ``visible`` are the outside directories it was approved to use (read-only inside), ``writable`` those of the
        outside paths it was approved to write (the parse-level ``external_directory`` and ``edit`` asks). With
        network ``proxy``, ``proxy`` gives the call a proxy (the policy's ``proxy.socket`` is where the caller serves
        it, ``tether.sandbox.open_proxy``, while the command runs); without it the call has no network.

        Raises:
            OSError: the session temp directory cannot be made safely.
        """
        tmp = str(self.temps.session(session_id)) if self.active else None
        seam: ProxySeam | None = None
        if proxy and self.network == "proxy" and tmp is not None:
            # beside the session temp directories, never in one
            seam = ProxySeam(socket=str(proxy_socket(Path(tmp).parent)))
        return build_policy(
            mechanism=self.detection.mechanism,
            root=root,
            tmp=tmp,
            writable=(*self.writable, *self._approved(writable)),
            allowed_protected=(*self.allowed_protected, *allowed),
            extra_protected=frozenset(extra_protected),
            network="none" if self.network == "proxy" and seam is None else self.network,
            proxy=seam,
            visible=self._approved(visible),
            unix_sockets=self.settings.unix_sockets,
        )

    def preview(self, root: str, *, extra_protected: Iterable[str] = ()) -> SandboxPolicy | None:
        """The policy a command in ``root`` would get, changing nothing (``tether doctor``, ``--explain``). Blocking."""
        if not self.active:
            return None
        return build_policy(
            mechanism=self.detection.mechanism,
            root=root,
            tmp=str(self.temps.parent / "<session id>"),
            writable=self.writable,
            allowed_protected=self.allowed_protected,
            extra_protected=frozenset(extra_protected),
            network=self.network,
            proxy=ProxySeam(socket="<the call's proxy>") if self.network == "proxy" else None,
            create=False,
            unix_sockets=self.settings.unix_sockets,
        )

    def wrap_server(self, name: str, argv: list[str], root: str, cwd: str) -> Launch | None:
        """How an MCP stdio server marked ``"sandbox": true`` starts: under bubblewrap with the project ``root`` and a
        private temp directory of its own writable; ``None`` when it cannot be held (no bubblewrap: the guard that
        applies Landlock is the bash tool's, not the MCP one). Blocking.

        Raises:
            OSError: the server's temp directory cannot be made safely.
        """
        if self.detection.mechanism != "bwrap":
            return None
        tmp = str(self.temps.session(f"mcp-{name}"))
        policy = build_policy(
            mechanism="bwrap",
            root=root,
            tmp=tmp,
            writable=self.writable,
            allowed_protected=self.allowed_protected,
            network="host" if self.network == "host" else "none",  # no call to ask for: no proxy
            unix_sockets=self.settings.unix_sockets,
        )
        launch = self.wrap(policy, argv, cwd)
        if launch.seccomp is None:
            return launch
        # No guard starts a server: the filter goes on through a trampoline in front of bubblewrap (outside it,
        # where tether's own Python always runs), once per server start.
        trampoline = [sys.executable, "-S", "-I", launch.seccomp, "--"]
        return Launch(argv=[*trampoline, *launch.argv], env=launch.env)

    def _approved(self, directories: Iterable[str]) -> list[str]:
        # The temp directory itself (or one above it) stays out: /tmp inside is the session's own, and other
        # sessions' files there stay out of reach; a directory below it, named by the command, may be written.
        base = str(self.tmp_base)
        return [
            d for d in directories if d != "/" and not (base == d or base.startswith(d.rstrip("/") + "/"))
        ]

    def open(self) -> None:
        """At a runtime's start: remove the temp directories of runtimes whose process died, then (when a sandbox is
        active) choose this one's parent and register it there. Blocking; errors are logged (the first command that
        needs a temp directory reports its own)."""
        sweep(self.tmp_base)
        if self.active:
            try:
                self.temps.open()
            except OSError as exc:
                _log.warning("sandbox: no session temp directories in %s: %s", self.tmp_base, exc)

    def release(self, session_id: str) -> None:
        """A session was deleted: its temp directory goes unless another live runtime still uses it. Blocking."""
        self.temps.release(session_id)

    def close(self) -> None:
        """At a runtime's end: remove the session temp directories it made that no other live runtime uses.
        Blocking."""
        self.temps.close()

    def wrap(self, policy: SandboxPolicy, argv: list[str], cwd: str) -> Launch:
        """How ``argv`` starts under ``policy`` in ``cwd`` (its environment additions included)."""
        match policy.mechanism:
            case "bwrap":
                assert self.detection.bwrap is not None
                env = {"TMPDIR": "/tmp"} if policy.tmp else {}
                python = self.bridge_python
                seccomp = SECCOMP_MODULE if policy.filtered else None
                if policy.proxy is not None and python is not None:
                    # The bridge must reach the proxy's unix socket itself: it filters the command's child instead.
                    options = ["--seccomp", SECCOMP_MODULE] if seccomp else []
                    argv = [python, "-S", "-I", BRIDGE_MODULE, PROXY_SOCKET, *options, "--", *argv]
                    seccomp = None
                bwrap = bwrap_argv(self.detection.bwrap, policy, cwd=cwd)
                return Launch(argv=[*bwrap, *argv], env=env, seccomp=seccomp)
            case "landlock":
                writable = [*policy.writable, *([policy.tmp] if policy.tmp else []), "/dev"]
                spec = {"module": LANDLOCK_MODULE, "writable": writable, "network": policy.network != "none"}
                return Launch(
                    argv=argv,
                    env={"TMPDIR": policy.tmp} if policy.tmp else {},
                    landlock=spec,
                    seccomp=SECCOMP_MODULE if policy.filtered else None,
                )
            case "none":
                return Launch(argv=argv, env={})
