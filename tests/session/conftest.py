"""Fixtures for session tests: a real SQLite store in tmp_path, a bus, a registry, a scripted harness."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.postgres.fixtures import open_store, postgres, store_kind, store_target

from tether.bus import Bus
from tether.output import OutputStore
from tether.session import RetryPolicy, Sessions
from tether.store import PostgresStore, SQLiteStore
from tether.tools import ToolRegistry

__all__ = ["open_store", "postgres", "store_kind", "store_target"]  # the store factory, over both stores


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
    store: SQLiteStore | PostgresStore
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
def harness_store_kind() -> str:
    """The harness's store: ``sqlite``; a test runs on both with ``parametrize("harness_store_kind", KINDS)``."""
    return "sqlite"


KINDS = ("sqlite", "postgresql")


@pytest.fixture
async def harness(
    tmp_path: Path,
    agents: dict[str, Agent],
    permissions: Any,
    harness_store_kind: str,
    request: pytest.FixtureRequest,
) -> AsyncIterator[Harness]:
    if harness_store_kind == "sqlite":
        opened: SQLiteStore | PostgresStore = SQLiteStore(tmp_path / "tether.db")
    else:
        opened = PostgresStore(request.getfixturevalue("postgres").database())
    async with opened as store:
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
