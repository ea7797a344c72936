"""A real ``tether serve`` app on 127.0.0.1 in a background thread, with scripted models, for the server tests.

Each server has its own data directory and project in ``tmp_path``. The socket is bound (listening) before the
fixture returns, so a request queues until uvicorn serves it: nothing waits on a sleep.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from tests.postgres.fixtures import open_store, postgres, store_kind, store_target

from tether import Runtime
from tether.client import Client
from tether.config import Config
from tether.errors import UsageError
from tether.server import bind, serve
from tether.testing import ScriptedModel, Step

__all__ = ["open_store", "postgres", "store_kind", "store_target"]  # the store factory, over both stores

TOKEN = "test-token-" + "x" * 32


@dataclass
class Live:
    """A running server: its URL, token, project and data directory; ``scripts`` is what the next prompts play."""

    url: str
    token: str
    project: Path
    data_dir: Path
    scripts: list[Sequence[Any]] = field(default_factory=list[Sequence[Any]])
    server: Any = None

    def client(self) -> Client:
        return Client(self.url, self.token, timeout=10)

    def script(self, *steps: Any) -> None:
        """The steps the next prompt's model plays (each prompt takes the next script)."""
        self.scripts.append(steps)

    @property
    def host(self) -> str:
        return self.url.removeprefix("http://")


def _model_factory(live: Live) -> Callable[[str | None], Any]:
    def choose(name: str | None) -> Any:
        if name is not None:
            raise UsageError(f"model {name!r} is not served in this test")
        steps = live.scripts.pop(0) if live.scripts else ([Step("done")],)
        return ScriptedModel([Step.of(s) for s in steps])

    return choose


def start(
    tmp: Path,
    *,
    project: Path | None = None,
    data_dir: Path | None = None,
    beside: Callable[[Runtime], Coroutine[Any, Any, None]] | None = None,
    config: Config | None = None,
    **options: Any,
) -> Generator[Live]:
    """Serve ``project`` (default ``tmp/project``) from ``data_dir`` (default ``tmp/data``; two servers may share
    one) with ``config`` (default: none); ``beside(rt)`` runs in the server's runtime while it serves (cancelled
    when it stops)."""
    project = project or tmp / "project"
    project.mkdir(exist_ok=True)
    (project / "notes.txt").write_text("alpha\nbeta\n")
    data_dir = data_dir or tmp / "data"
    sock = bind("127.0.0.1", 0)
    live = Live(
        url=f"http://127.0.0.1:{sock.getsockname()[1]}", token=TOKEN, project=project, data_dir=data_dir
    )
    ready = threading.Event()
    failure: list[BaseException] = []

    def started(server: Any) -> None:
        live.server = server
        ready.set()

    async def main() -> None:
        async with Runtime(data_dir=data_dir, plugins=False, config=config) as rt:
            location = await rt.location(project)
            async with anyio.create_task_group() as group:
                if beside is not None:
                    group.start_soon(beside, rt)
                await serve(
                    rt,
                    location,
                    sock=sock,
                    host="127.0.0.1",
                    token=TOKEN,
                    choose_model=_model_factory(live),
                    started=started,
                    **options,
                )
                group.cancel_scope.cancel()

    def run() -> None:
        try:
            anyio.run(main)
        except BaseException as exc:  # shown by the fixture's teardown
            failure.append(exc)
            ready.set()

    thread = threading.Thread(target=run, name="tether-serve", daemon=True)
    thread.start()
    assert ready.wait(30), "the server did not start"
    if failure:
        raise failure[0]
    try:
        yield live
    finally:
        live.server.should_exit = True
        thread.join(30)
        assert not thread.is_alive(), "the server did not stop"
        if failure:
            raise failure[0]


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    yield from start(tmp_path)


@pytest.fixture
def api(live: Live) -> Iterator[Client]:
    with live.client() as client:
        yield client
