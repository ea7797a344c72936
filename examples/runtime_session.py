"""Run a real session offline: the Runtime, a Location with the built-in tools, the SQLite store, a scripted model.

Run: .venv/bin/python examples/runtime_session.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio

from tether import Runtime
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call


def make_project(tmp: str) -> Path:
    project = Path(tmp, "project")
    project.mkdir()
    (project / "notes.txt").write_text("ship it on friday\n")
    return project


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(tmp)
        async with Runtime(data_dir=Path(tmp, "data")) as rt:
            loc = await rt.location(project)
            session = await rt.sessions.create(loc, agent="build")
            model = ScriptedModel(
                [
                    [tool_call("read", {"path": "notes.txt"}), tool_call("grep", {"pattern": "friday"})],
                    "The notes say to ship on Friday.",
                ]
            )
            result = await session.prompt("When do we ship?", model=model)
            print(f"stop={result.stop} steps={result.steps} tool_calls={result.tool_calls}")
            print("answer:", result.text)
            for message in await session.messages():
                for part in message.parts:
                    if isinstance(part, ToolPart):
                        decided = [p["decision"]["effect"] for p in part.permissions if "decision" in p]
                        print(f"  {part.tool:5} {part.state:9} permissions={decided}")


if __name__ == "__main__":
    anyio.run(main)
