"""Fixtures for session tests: a real SQLite store in tmp_path, a bus, a registry, a scripted harness."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tether.bus import Bus
from tether.output import OutputStore
from tether.session import RetryPolicy, Sessions, SQLiteStore
from tether.tools import ToolRegistry


@dataclass(frozen=True)
class Rule:
    action: str
    resource: str
    effect: str


@dataclass(frozen=True)
class Agent:
    name: str = "build"
    rules: Sequence[Any] = ()
    steps: int | None = None
    prompt: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])


@dataclass
class Loc:
    tools: ToolRegistry
    root: Path
    directory: Path


@dataclass
class Harness:
    store: SQLiteStore
    bus: Bus
    sessions: Sessions
    loc: Loc
    agents: dict[str, Agent] = field(default_factory=dict)

    @property
    def tools(self) -> ToolRegistry:
        return self.loc.tools


@pytest.fixture
def agents() -> dict[str, Agent]:
    return {"build": Agent()}


@pytest.fixture
def permissions() -> Any:
    return None


@pytest.fixture
async def harness(tmp_path: Path, agents: dict[str, Agent], permissions: Any) -> AsyncIterator[Harness]:
    async with SQLiteStore(tmp_path / "tether.db") as store:
        bus = Bus()
        registry = ToolRegistry(output=OutputStore(tmp_path / "tool-output"))
        project = tmp_path / "project"
        project.mkdir()
        loc = Loc(tools=registry, root=project, directory=project)

        async def locate(directory: str, project: str) -> Loc:
            return loc

        sessions = Sessions(
            store=store,
            bus=bus,
            agents=agents,
            permissions=permissions,
            locate=locate,
            retry=RetryPolicy(base=0.0),
        )
        yield Harness(store=store, bus=bus, sessions=sessions, loc=loc, agents=agents)
        sessions.close()
