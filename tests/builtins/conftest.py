"""Fixtures for the file tools: a project directory, a recording permission fake, settle-based calls."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tether.builtins import BuiltinDeps, builtin_tools
from tether.content import text_of
from tether.errors import BlockedError, CorrectedError, DeclinedError
from tether.location import Location
from tether.output import OutputStore
from tether.permissions import PermissionRequest
from tether.tools import Completed, Failed, ToolCall, ToolContext, ToolRegistry

Decide = Callable[[PermissionRequest], str]


@dataclass
class Recorder:
    """A permission fake: records every request (and which target paths were opened before it), applies ``decide``.

    ``decide(request)`` returns ``"allow"``, ``"deny"``, ``"decline"`` or ``"correct"``.
    """

    decide: Decide = lambda request: "allow"
    requests: list[PermissionRequest] = field(default_factory=list)
    opened_before: list[list[str]] = field(default_factory=list)

    async def assert_(self, request: PermissionRequest) -> None:
        self.requests.append(request)
        self.opened_before.append(list(OPENED))
        verdict = self.decide(request)
        if verdict == "deny":
            raise BlockedError(
                f"Permission denied: {request.action}", action=request.action, resources=request.resources
            )
        if verdict == "decline":
            raise DeclinedError("declined")
        if verdict == "correct":
            raise CorrectedError("do something else")

    @property
    def asked(self) -> list[tuple[str, tuple[str, ...]]]:
        return [(r.action, tuple(r.resources)) for r in self.requests]


# Every open() of a watched path is recorded by an audit hook (audit hooks cannot be removed; it is a no-op unless
# paths are watched). This is how the tests prove that nothing was read before approval.
OPENED: list[str] = []
_O_PATH: int = getattr(os, "O_PATH", 0)
_FD_LINKS = ("/proc/self/fd/", "/dev/fd/", f"/proc/{os.getpid()}/fd/")
WATCHED: set[str] = set()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # tether's file operations open relative to a directory descriptor (the "open" event then carries only the
    # name); they raise "tether.location.read" with the full path.
    if (
        event in ("open", "tether.location.read")
        and WATCHED
        and args
        and isinstance(args[0], (str, bytes, Path))
    ):
        # a name that is not UTF-8 (another suite's test, on the same worker) is decoded as the OS does, never fails
        name = os.fsdecode(args[0]) if isinstance(args[0], bytes) else str(args[0])
        flags = args[2] if event == "open" and len(args) > 2 and isinstance(args[2], int) else 0
        if flags & _O_PATH:
            return  # an O_PATH descriptor names a file and cannot read it (Location.resolve's canonical path)
        if name.startswith(_FD_LINKS):  # reopening a descriptor (an O_PATH one, say) reads what it names
            try:
                name = os.readlink(name)
            except OSError:
                return
        if name in WATCHED:
            OPENED.append(name)


sys.addaudithook(_audit)


def watch(paths: Iterable[Path]) -> None:
    OPENED.clear()
    WATCHED.clear()
    WATCHED.update(str(p) for p in paths)


def unwatch() -> None:
    WATCHED.clear()
    OPENED.clear()


CTX = ToolContext(session_id="ses_test", agent="build", message_id="msg_test", call_id="call_test")


class Project:
    """One Location with every built-in registered; :meth:`call` settles a call through the full pipeline."""

    def __init__(self, root: Path, output_dir: Path, permissions: Any = None) -> None:
        self.root = root
        self.location = Location(root)
        self.permissions = permissions if permissions is not None else Recorder()
        deps = BuiltinDeps(
            location=self.location, permissions=self.permissions, output=OutputStore(output_dir)
        )
        self.tools = builtin_tools(deps)
        self.registry = ToolRegistry(output=OutputStore(output_dir))
        self.registry.register(self.tools)
        self._counter = 0

    async def call(self, name: str, **input: Any) -> Completed | Failed:
        self._counter += 1
        step = self.registry.materialize(rules=[])
        call = ToolCall(call_id=f"call_{self._counter}", name=name, input=input)
        return await step.settle(call, CTX)

    async def ok(self, name: str, **input: Any) -> Completed:
        outcome = await self.call(name, **input)
        assert isinstance(outcome, Completed), outcome
        return outcome

    async def fail(self, name: str, **input: Any) -> Failed:
        outcome = await self.call(name, **input)
        assert isinstance(outcome, Failed), outcome
        return outcome

    async def text(self, name: str, **input: Any) -> str:
        return text_of((await self.ok(name, **input)).content)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def make_project(root: Path, tmp_path: Path) -> Iterator[Callable[..., Project]]:
    """Build a Project on ``root`` with a given permission fake (``Recorder(decide=...)``) or a real service."""

    def build(permissions: Any = None, directory: Path | None = None) -> Project:
        return Project(directory or root, tmp_path / "tool-output", permissions)

    yield build
    unwatch()


@pytest.fixture
def project(make_project: Callable[..., Project]) -> Project:
    return make_project()


@dataclass(frozen=True)
class Kit:
    Recorder: type[Recorder]
    watch: Callable[[Iterable[Path]], None]
    opened: list[str]
    ctx: ToolContext


@pytest.fixture
def kit() -> Kit:
    """What tests need from this conftest without importing it (importlib import mode)."""
    return Kit(Recorder=Recorder, watch=watch, opened=OPENED, ctx=CTX)
