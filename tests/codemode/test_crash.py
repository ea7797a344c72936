"""After a crash (SIGKILL) during an execute call, reopening the store marks its running inner call interrupted:
the child session answers "what happened?" like any session."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from tether import Runtime

from .conftest import codemode_config, tool_parts

pytestmark = pytest.mark.anyio

CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import anyio

    from tether import Runtime
    from tether.config import parse_config
    from tether.testing import ScriptedModel, tool_call
    from tether.tools import Tool

    data, project = Path(sys.argv[1]), Path(sys.argv[2])


    stores = []


    async def hang(input, ctx):
        await stores[0].flush()  # the inner call's running part is committed (a barrier, not a wait)
        print("READY", ctx.session_id, flush=True)
        await anyio.sleep_forever()


    async def main():
        config = parse_config({"agent": {"build": {"codemode": True}}}, file=str(project / "tether.json"))
        code = "print('before')\\nawait tools.hang()"
        model = ScriptedModel([[tool_call("execute", {"code": code}, id="ex1")], "never"])
        async with Runtime(data_dir=data, config=config) as rt:
            stores.append(rt.store)
            with rt.tools.register({"hang": Tool(description="Hang", input={"type": "object"}, execute=hang)}):
                session = await rt.sessions.create(project)
                await session.prompt("go", model=model)


    anyio.run(main)
    """
)


async def test_a_running_inner_call_is_interrupted_after_a_crash(tmp_path: Path, project: Path) -> None:
    data = tmp_path / "data"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data), str(project)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = await anyio.to_thread.run_sync(child.stdout.readline)
        assert line.startswith("READY"), line
        parent_id = line.split()[1]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    async with Runtime(data_dir=data, config=codemode_config(project)) as rt:
        session = await rt.sessions.get(parent_id)
        (execute,) = await tool_parts(session)
        assert execute.tool == "execute" and execute.state == "error" and execute.error_kind == "interrupted"
        (info,) = [s for s in await rt.sessions.list() if s.parent_id == parent_id]
        assert info.parent_call_id == "ex1"
        (inner,) = await tool_parts(await rt.sessions.get(info.id))
        assert inner.tool == "hang" and inner.state == "error" and inner.error_kind == "interrupted"
