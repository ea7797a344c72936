"""The public surface of tether.codemode, pinned (as tests/test_exports.py does for the other packages)."""

from pathlib import Path

import tether.codemode


def test_the_codemode_surface_is_pinned() -> None:
    assert set(tether.codemode.__all__) == {
        "CodeMode",
        "CodeModeSettings",
        "CodeModeStep",
        "ExecuteInput",
        "ExecuteOutput",
    }
    for name in tether.codemode.__all__:
        assert hasattr(tether.codemode, name)


def test_importing_codemode_does_not_import_the_sandbox() -> None:
    import subprocess
    import sys

    code = "import sys, tether.codemode; print('pydantic_monty' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_runtime_without_codemode_installs_nothing(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = f"""
import sys, anyio
from tether import Runtime
from tether.testing import ScriptedModel

async def main():
    async with Runtime(data_dir={str(tmp_path / "data")!r}) as rt:
        session = await rt.sessions.create({str(tmp_path)!r})
        await session.prompt("hi", model=ScriptedModel(["hello"]))
        print(rt.sessions.service.codemode, "tether.codemode" in sys.modules, "pydantic_monty" in sys.modules)

anyio.run(main)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "False", "False"]
