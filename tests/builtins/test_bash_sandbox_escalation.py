"""What the model reads when the sandbox refuses, how it asks for more (escalate), and what the record keeps."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.builtins import BuiltinDeps, builtin_tools
from tether.content import text_of
from tether.location import Location
from tether.output import OutputStore
from tether.rules import Rule
from tether.sandbox import Detection, Sandbox, SandboxSettings
from tether.tools import Completed, ToolCall, ToolContext, ToolRegistry

from .test_bash_sandbox_attacks import TMP, Approver, Harness, needs_bwrap

pytestmark = pytest.mark.anyio


@pytest.fixture
def outside() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="tether-outside-", dir="/var/tmp"))
    yield path
    for child in path.iterdir():
        child.unlink()
    path.rmdir()


async def settle(harness: Harness, **input: object) -> Completed:
    step = harness.registry.materialize(rules=[])
    ctx = ToolContext(session_id="ses_esc", agent="build", message_id="msg_1", call_id="call_1")
    outcome = await step.settle(ToolCall(call_id="call_1", name="bash", input=input), ctx)
    assert isinstance(outcome, Completed), outcome
    return outcome


@needs_bwrap
async def test_a_refused_write_names_the_sandbox_and_the_way_to_ask(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    harness = Harness(root, tmp_path / "out", Approver("yes"))
    outcome = await settle(harness, command=f"python3 -c \"open('{outside}/x','w')\"")
    text = text_of(outcome.content)
    assert "Permission denied" in text or "Read-only file system" in text
    assert "The sandbox (bubblewrap) may have refused this" in text and "escalate: true" in text
    assert outcome.metadata is not None and outcome.metadata["sandbox"]["mechanism"] == "bwrap"
    assert outcome.metadata["sandbox"]["network"] == "proxy"  # python3 may use the network: through the proxy
    assert str(root) in outcome.metadata["sandbox"]["writable"]


@needs_bwrap
async def test_escalate_asks_and_runs_outside_the_sandbox(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    approver = Approver("yes")
    harness = Harness(root, tmp_path / "out", approver)
    command = f"python3 -c \"open('{outside}/x','w').write('ok')\""
    outcome = await settle(harness, command=command, escalate=True, justification="write the build cache")
    assert (outside / "x").read_text() == "ok"
    asked = [r for r in approver.requests if r.action == "escalate"]
    assert asked and asked[0].metadata["justification"] == "write the build cache"
    assert outcome.metadata is not None and outcome.metadata["escalated"] == {
        "justification": "write the build cache"
    }
    assert "sandbox" not in outcome.metadata


@needs_bwrap
async def test_escalation_rejected_runs_nothing(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    # the uncertain text's own ask is allowed here, so the escalation is what is rejected
    harness = Harness(
        root, tmp_path / "out", Approver("deny-asks", (Rule("external_directory", "*", "allow"),))
    )
    text = await harness.bash(
        f"python3 -c \"open('{outside}/x','w')\"", escalate=True, justification="because"
    )
    assert "Permission denied: escalate" in text
    assert list(outside.iterdir()) == []


async def test_escalate_needs_a_justification(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    harness = Harness(root, tmp_path / "out", Approver("yes"))
    text = await harness.bash("true", escalate=True)
    assert "needs a justification" in text


async def test_a_required_sandbox_that_cannot_run_refuses_every_command(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    sandbox = Sandbox.make(
        SandboxSettings(mode="off", required=True),
        Detection(mechanism="none", reasons=("sandbox.mode is off",)),
        TMP,
        (),
    )
    approver = Approver("yes", (Rule("bash", "*", "allow"),))
    deps = BuiltinDeps(
        location=Location(root), permissions=approver, output=OutputStore(tmp_path / "o"), sandbox=sandbox
    )
    registry = ToolRegistry(output=OutputStore(tmp_path / "o"))
    registry.register(builtin_tools(deps))
    step = registry.materialize(rules=[])
    ctx = ToolContext(session_id="ses_r", agent="build", message_id="m", call_id="c")
    outcome = await step.settle(ToolCall(call_id="c", name="bash", input={"command": "touch made"}), ctx)
    assert not isinstance(outcome, Completed)
    assert "sandbox is required" in outcome.error and not (root / "made").exists()
