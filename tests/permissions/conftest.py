from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether.bus import Bus
from tether.permissions import PermissionRequest, PermissionSource, SavedApprovals


class Recorder:
    """Records every bus event and lets a test wait, without sleeping, until one it expects arrives."""

    def __init__(self, bus: Bus) -> None:
        self.events: list[Any] = []
        self._changed = anyio.Event()
        bus.subscribe("*", self._on)

    def _on(self, event: Any) -> None:
        self.events.append(event)
        self._changed.set()
        self._changed = anyio.Event()

    def of(self, type_: str) -> list[Any]:
        return [e for e in self.events if e.type == type_]

    async def wait(self, type_: str, count: int = 1) -> list[Any]:
        with anyio.fail_after(5):
            while len(self.of(type_)) < count:
                await self._changed.wait()
        return self.of(type_)


@pytest.fixture
def bus() -> Bus:
    return Bus()


@pytest.fixture
def recorder(bus: Bus) -> Recorder:
    return Recorder(bus)


@pytest.fixture
async def saved(tmp_path: Path) -> AsyncIterator[SavedApprovals]:
    async with SavedApprovals(tmp_path / "store.db") as approvals:
        yield approvals


@pytest.fixture
def make_request() -> Callable[..., PermissionRequest]:
    def make(
        action: str = "bash",
        resources: tuple[str, ...] = ("git push",),
        *,
        session: str = "ses_a",
        save: tuple[str, ...] = (),
        agent: str | None = None,
    ) -> PermissionRequest:
        return PermissionRequest(
            session_id=session,
            action=action,
            resources=resources,
            save=save,
            agent=agent,
            source=PermissionSource(message_id="msg_1", call_id="call_1"),
        )

    return make
