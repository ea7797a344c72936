from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel

from tether.output import OutputStore
from tether.tools import Tool, ToolContext, ToolRegistry, ToolResponse
from tether.tools.internal import Deadlines


class EchoInput(BaseModel):
    text: str
    times: int = 1


class EchoOutput(BaseModel):
    echoed: str


async def _echo(inp: EchoInput, ctx: ToolContext) -> ToolResponse[EchoOutput]:
    return ToolResponse(output=EchoOutput(echoed=inp.text * inp.times))


@pytest.fixture
def echo() -> Tool[EchoInput, EchoOutput]:
    return Tool(description="Echo text back", input=EchoInput, output=EchoOutput, execute=_echo)


@pytest.fixture
async def deadlines() -> AsyncIterator[Deadlines]:
    """A session's shared deadline timer, running for the test."""
    timer = Deadlines()
    async with anyio.create_task_group() as tg:
        tg.start_soon(timer.run)
        yield timer
        timer.close()


@pytest.fixture
def store(tmp_path: Path) -> OutputStore:
    return OutputStore(tmp_path / "tool-output")


@pytest.fixture
def registry(store: OutputStore) -> ToolRegistry:
    return ToolRegistry(output=store)


@pytest.fixture
def ctx() -> ToolContext:
    return ToolContext(session_id="ses_1", agent="build", message_id="msg_1", call_id="call_1")
