"""``tether worker --temporal`` and ``tether run --temporal``, as real processes against a real Temporal server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    found = {
        **os.environ,
        "TETHER_DATA_DIR": str(tmp_path / "data"),
        "TETHER_CONFIG_DIR": str(tmp_path / "config"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "NO_COLOR": "1",
        "COLUMNS": "160",
    }
    for name in ("TETHER_PERMISSION", "TETHER_TRUST", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        found.pop(name, None)
    return found


def tether(*args: str) -> list[str]:
    return [sys.executable, "-m", "tether.cli", *args]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def queue(temporal_server: str, env: dict[str, str], project: Path) -> Iterator[str]:
    """A ``tether worker`` process serving a fresh task queue."""
    name = f"q-{uuid.uuid4().hex}"
    process = subprocess.Popen(
        tether(
            "worker",
            "--temporal",
            temporal_server,
            "--task-queue",
            name,
            "--dir",
            str(project),
            "--allow-test-models",
        ),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()  # the worker says so once it serves the queue (or fails and exits)
    assert "serving task queue" in line, line + process.stderr.read()
    try:
        yield name
    finally:
        process.terminate()  # SIGTERM stops the worker in order
        assert process.wait(30) == 0
        assert "tether worker: stopped" in process.stderr.read()
        process.stderr.close()


def script(tmp_path: Path, steps: list[dict[str, object]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tether("run", *args), env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
    )


def test_run_submits_the_turn_to_a_worker_and_session_show_shows_it(
    temporal_server: str, queue: str, env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    call = {"name": "bash", "arguments": {"command": "echo hello > out.txt", "description": "write"}}
    model = script(tmp_path, [{"tool_calls": [call]}, {"text": "Finished."}])
    done = run(env, "--temporal", temporal_server, "--task-queue", queue, "--model", model, "--yes",
               "--dir", str(project), "write the file")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Finished." in done.stdout
    assert (
        "? bash echo hello > out.txt" in done.stderr
    )  # the ask went through the workflow, answered by --yes
    assert "✓ bash" in done.stderr
    assert (project / "out.txt").read_text() == "hello\n"
    found = re.search(r"session (ses_\w+)", done.stderr)
    assert found is not None, done.stderr
    show = subprocess.run(
        tether("session", "show", found.group(1), "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert show.returncode == 0, show.stderr
    shown = json.loads(show.stdout)
    text = json.dumps(shown)
    assert '"completed"' in text and "echo hello > out.txt" in text


def test_deny_asks_rejects_through_the_workflow_and_the_turn_fails(
    temporal_server: str, queue: str, env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    call = {"name": "bash", "arguments": {"command": "echo no > out.txt", "description": "write"}}
    model = script(tmp_path, [{"tool_calls": [call]}, {"text": "Finished."}])
    done = run(env, "--temporal", temporal_server, "--task-queue", queue, "--model", model, "--deny-asks",
               "--format", "json", "--dir", str(project), "write the file")  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events if e["type"] in ("ask", "answer", "done")] == ["ask", "answer", "done"]
    assert events[-1] == {"type": "done", "stop": "declined"}
    assert not (project / "out.txt").exists()


def test_a_bad_temporal_address_is_a_clear_error(env: dict[str, str], project: Path) -> None:
    done = run(env, "--temporal", "nowhere", "--model", "replay", "--dir", str(project), "hi")
    assert done.returncode == 2
    assert "give the Temporal server as HOST:PORT" in done.stderr


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_sleeping_turn(
    temporal_server: str,
    queue: str,
    env: dict[str, str],
    project: Path,
    tmp_path: Path,
    *,
    sigint_ignored: bool = False,
) -> tuple[subprocess.Popen[str], str, int]:
    """``tether run --temporal`` whose one call is bash in ``sleep 900`` on the worker: the follower, its turn's
    workflow id and the pid of the ``sleep`` (the shell ``exec``s it), once it runs. ``sigint_ignored``: started with
    SIGINT ignored, as a shell without job control starts ``cmd &`` (a CI job's background step)."""
    import time

    started = project / "started"
    # the call (and its own timeout, the longest bash allows) outlasts every guard below: only the cancel ends it
    command = {"command": "echo $$ > started && exec sleep 900", "description": "wait", "timeout": 600_000}
    model = script(
        tmp_path, [{"tool_calls": [{"name": "bash", "arguments": command}]}, {"text": "Finished."}]
    )
    process = subprocess.Popen(
        tether("run", "--temporal", temporal_server, "--task-queue", queue, "--model", model, "--yes",
               "--dir", str(project), "wait"),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint if sigint_ignored else None,
    )  # fmt: skip
    assert process.stderr is not None
    found = re.search(r"turn (\S+) submitted", process.stderr.readline())
    assert found is not None
    deadline = time.monotonic() + 300
    while not (started.exists() and started.read_text().strip().isdigit()):  # the call runs on the worker
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    return process, found.group(1), int(started.read_text())


def _sleeping(pid: int) -> bool:
    try:
        return "sleep" in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


def _cancelled_turn(temporal_server: str, env: dict[str, str], workflow_id: str) -> tuple[str, list[object]]:
    """The turn's end (waited for: the workers write it, the follower may be gone) and its tool parts' states."""
    import anyio

    from tether import Runtime
    from tether.session import ToolPart
    from tether.temporal import TemporalRunner

    async def read() -> tuple[str, list[object]]:
        data = Path(env["TETHER_DATA_DIR"])
        runner = await TemporalRunner.connect(temporal_server, data_dir=data)
        with anyio.fail_after(300):  # a hang guard: the cancel reaches the call within a second or two
            result = await runner.turn(workflow_id).result()
        async with Runtime(data_dir=data, plugins=False) as rt:
            messages = await rt.store.load_messages(result.session_id)
        parts = [
            (p.tool, p.state, p.error_kind) for m in messages for p in m.parts if isinstance(p, ToolPart)
        ]
        return result.stop, list(parts)

    return anyio.run(read)


def test_ctrl_c_cancels_the_turn_on_the_worker_and_exits_130(
    temporal_server: str, queue: str, env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    import signal

    # started with SIGINT ignored (the disposition a background step inherits): Ctrl-C still cancels, as it does for
    # `tether run` without --temporal
    process, workflow_id, sleeping = _start_sleeping_turn(
        temporal_server, queue, env, project, tmp_path, sigint_ignored=True
    )
    assert process.stderr is not None
    process.send_signal(signal.SIGINT)
    try:
        assert process.wait(300) == 130, (
            process.stderr.read()
        )  # a hang guard: it exits once the server has the cancel
        said = process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
    assert f"cancelling turn {workflow_id}" in said and f"turn {workflow_id} cancelled" in said, said
    # the workers end the turn without the follower: the call cancelled (bash's process gone), its part aborted
    assert _cancelled_turn(temporal_server, env, workflow_id) == ("cancelled", [("bash", "error", "aborted")])
    assert not _sleeping(sleeping)


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_exits_130_when_the_server_does_not_answer_the_cancel_and_a_second_one_at_once(
    temporal_server: str, queue: str, env: dict[str, str], project: Path, tmp_path: Path, presses: int
) -> None:
    import signal

    import anyio

    from tether.temporal import TemporalRunner

    from .conftest import _SERVER  # pyright: ignore[reportPrivateUsage]

    process, workflow_id, _ = _start_sleeping_turn(temporal_server, queue, env, project, tmp_path)
    assert process.stderr is not None and _SERVER.process is not None
    server = _SERVER.process.pid
    os.kill(server, signal.SIGSTOP)  # the cancel's request waits for an answer that does not come
    try:
        process.send_signal(signal.SIGINT)
        said = ""
        while f"cancelling turn {workflow_id}" not in said:  # the ask answered by --yes comes first
            line = process.stderr.readline()
            assert line, f"the follower ended without cancelling: {said}"
            said += line
        if presses == 2:
            process.send_signal(signal.SIGINT)
        assert process.wait(300) == 130  # a hang guard: one press waits CANCEL_WAIT, a second none
        said += process.stderr.read()
    finally:
        os.kill(server, signal.SIGCONT)
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
    if presses == 1:
        assert f"could not cancel turn {workflow_id}: the Temporal server did not answer" in said, said
        assert f"temporal workflow cancel --workflow-id {workflow_id}" in said

    async def cancel() -> None:  # the request the stopped server had not answered may be taken now: harmless
        runner = await TemporalRunner.connect(temporal_server, data_dir=Path(env["TETHER_DATA_DIR"]))
        await runner.turn(workflow_id).cancel()

    anyio.run(cancel)
    assert _cancelled_turn(temporal_server, env, workflow_id)[0] == "cancelled"


def _question_script(tmp_path: Path) -> str:
    from tests.builtins.test_question import COLOR, EXTRAS  # the runtime's and the in-process CLI's questions

    call = {"name": "question", "arguments": {"questions": [COLOR, EXTRAS]}}
    return script(tmp_path, [{"text": "Asking.", "tool_calls": [call]}, {"text": "Going on."}])


def test_a_question_is_asked_on_the_terminal_and_its_answers_reach_the_worker(
    temporal_server: str, queue: str, env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    from tests.cli.conftest import Pty

    term = Pty(
        tether("run", "--temporal", temporal_server, "--task-queue", queue, "--model", _question_script(tmp_path),
               "--dir", str(project), "ask me"),
        env=env,
        cwd=None,
    )  # fmt: skip
    term.expect(r"question 1/2: Color", timeout=60)
    term.expect(r"2\. Red — loud")
    term.send("2\n")
    term.expect(r"question 2/2: Extras")
    term.send("1, 2\n")
    term.expect("Going on.", timeout=60)
    assert term.wait() == 0, term.text
    found = re.search(r"session (ses_\w+)", term.text)
    assert found is not None, term.text
    show = subprocess.run(
        tether("session", "show", found.group(1)), env=env, capture_output=True, text=True, timeout=60
    )
    assert show.returncode == 0, show.stderr
    assert 'User has answered your questions: "Which color should the button be?"="Red"' in show.stdout
    assert '"Which extras?"="Icon, Tooltip"' in show.stdout


def test_without_a_terminal_a_question_fails_at_once_and_the_model_goes_on(
    temporal_server: str, queue: str, env: dict[str, str], project: Path, tmp_path: Path
) -> None:
    from tether.session._questions import NO_ANSWERER

    done = run(env, "--temporal", temporal_server, "--task-queue", queue, "--model", _question_script(tmp_path),
               "--format", "json", "--dir", str(project), "ask me")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert not [e for e in events if e["type"] in ("ask", "answer")]  # nobody was asked, nothing waited
    call = next(e for e in events if e["type"] == "call")
    assert call["name"] == "question" and call["outcome"] == "error" and call["error"] == NO_ANSWERER
    assert call["error_kind"] == "tool"  # as an in-process run writes it (tests/builtins/test_question.py)
    assert events[-1] == {"type": "done", "stop": "done"}
    assert "Going on." in done.stdout
