"""Code Mode through real session turns: a real Runtime (SQLite store, files in tmp_path), a scripted model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether.config import Config, parse_config
from tether.llm import ModelRequest, ToolMessage
from tether.session import Session, ToolPart
from tether.testing import FunctionModel, tool_call
from tether.tools import Text


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    for i in range(5):
        (root / f"f{i}.txt").write_text("line\n" * (i + 1))
    return root


def codemode_config(project: Path, codemode: Any = True, **extra: Any) -> Config:
    data: dict[str, Any] = {"agent": {"build": {"codemode": codemode}}, **extra}
    return parse_config(data, file=str(project / "tether.json"))


def execute(code: str, id: str = "x1") -> Any:
    return tool_call("execute", {"code": code}, id=id)


def last_tool_text(request: ModelRequest) -> str:
    message = request.messages[-1]
    if isinstance(message, ToolMessage):
        return "\n".join(p.text for r in message.results for p in r.content if isinstance(p, Text))
    return ""


class Script:
    """A model that plays ``steps`` in order and keeps every request (a callable step sees the request)."""

    def __init__(self, *steps: Any | Callable[[ModelRequest], Any]) -> None:
        self.steps = list(steps)
        self.requests: list[ModelRequest] = []
        self.model = FunctionModel(self._step)

    def _step(self, request: ModelRequest) -> Any:
        self.requests.append(request)
        step = self.steps.pop(0)
        return step(request) if callable(step) else step


async def tool_parts(session: Session) -> list[ToolPart]:
    return [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
