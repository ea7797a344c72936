"""The bash tool through settle: permission order and resources, model text, metadata, workdir, cancellation."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether.builtins import BuiltinDeps
from tether.builtins.bash import make
from tether.bus import Bus
from tether.content import text_of
from tether.location import Location
from tether.output import OutputStore
from tether.permissions import Agent, PermissionRequest, PermissionService, Rule, SavedApprovals, StaticRules
from tether.tools import Completed, Failed, ToolCall, ToolContext, ToolRegistry

pytestmark = pytest.mark.anyio

Project = Any
MakeProject = Callable[..., Any]


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return True
    return stat[stat.rfind(b")") + 2 :].split()[0] in (b"Z", b"X")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    return path


# --- model text and metadata ---------------------------------------------------------------------------------------


async def test_output_then_exit_code(project: Project) -> None:
    outcome = await project.ok("bash", command="echo hello; echo oops >&2; exit 3", description="Say hello")
    assert text_of(outcome.content) == "hello\noops\n\nCommand exited with code 3."
    metadata = outcome.metadata
    assert metadata["exit"] == 3
    assert metadata["timedOut"] is False
    assert metadata["truncated"] is False
    assert metadata["outputPath"] is None
    assert isinstance(metadata["durationMs"], int)
    assert outcome.title == "Say hello"


async def test_empty_output_is_shown_as_no_output(project: Project) -> None:
    assert await project.text("bash", command="true") == "(no output)\n\nCommand exited with code 0."


async def test_output_without_trailing_newline(project: Project) -> None:
    assert await project.text("bash", command="printf abc") == "abc\n\nCommand exited with code 0."


async def test_timeout_is_reported_with_the_limit(project: Project) -> None:
    outcome = await project.ok("bash", command="echo started; sleep 1000", timeout=300)
    text = text_of(outcome.content)
    # Whether the shell printed before the deadline depends on the machine's load: both are valid outputs.
    output, _, rest = text.partition("\n\n")
    assert output in ("started", "(no output)")
    assert rest.startswith("Command timed out after 300 ms.")
    assert outcome.metadata["timedOut"] is True
    assert outcome.metadata["exit"] is None


@pytest.mark.parametrize("timeout", [0, -1, 600_001])
async def test_timeout_out_of_range_is_invalid_input(project: Project, timeout: int) -> None:
    outcome = await project.fail("bash", command="true", timeout=timeout)
    assert outcome.kind == "invalid_input"
    assert project.permissions.requests == []


async def test_long_output_is_bounded_once_by_settle(project: Project) -> None:
    outcome = await project.ok("bash", command="seq 1 100000")
    text = text_of(outcome.content)
    assert "output truncated; full content saved to" in text
    assert text.endswith("100000\n\nCommand exited with code 0.")
    assert outcome.metadata["truncated"] is False
    assert len(outcome.output_paths) == 1
    assert Path(outcome.output_paths[0]).read_text().startswith("1\n2\n")


async def test_output_over_the_capture_limit_names_the_full_output_file(project: Project) -> None:
    outcome = await project.ok("bash", command="seq 1 400000")
    text = text_of(outcome.content)
    path = outcome.metadata["outputPath"]
    assert outcome.metadata["truncated"] is True
    assert Path(path).read_text() == "".join(f"{i}\n" for i in range(1, 400001))
    total = outcome.metadata["bytes"]
    assert total == Path(path).stat().st_size
    kept = int(re.findall(r"kept (\d+) of", text)[0])
    assert kept <= 1 << 20
    # The tail of the stream, our notice naming the full file, then the status survive settle's own bounding.
    assert text.endswith(
        f"400000\n\n[Output capture truncated at the in-memory limit of 1048576 bytes: kept {kept} of {total} "
        f"bytes (head and tail). Full output saved to: {path}]\nCommand exited with code 0."
    )


# --- permissions ---------------------------------------------------------------------------------------------------


async def test_asks_bash_with_one_resource_per_command_and_prefix_patterns(project: Project) -> None:
    await project.ok("bash", command="git status && npm run build -- --prod | tee log.txt")
    edit, request = project.permissions.requests
    assert (edit.action, tuple(edit.resources), tuple(edit.save)) == ("edit", ("log.txt",), ("*",))
    assert request.action == "bash"
    assert tuple(request.resources) == ("git status", "npm run build -- --prod", "tee log.txt")
    assert tuple(request.save) == ("git status *", "npm run build *", "tee *")
    assert request.metadata["command"] == "git status && npm run build -- --prod | tee log.txt"
    assert request.source is not None and request.source.call_id == "call_test"


async def test_external_paths_ask_external_directory_before_bash(project: Project, outside: Path) -> None:
    target = outside / "file.txt"
    target.write_text("x")
    await project.ok("bash", command=f"cat {target} > copy.txt && rm -rf {outside}/sub")
    asked = project.permissions.asked
    assert asked[0] == ("external_directory", (f"{outside}/*",))
    # The command writes copy.txt (inside) and deletes under the outside directory: both are edits.
    assert asked[1] == ("edit", ("copy.txt", f"{outside}/sub"))
    assert asked[2][0] == "bash"
    assert len(asked) == 3


async def test_cd_out_of_the_project_asks_for_the_parent(project: Project) -> None:
    await project.ok("bash", command="cd .. && ls")
    parent = project.location.root.parent
    assert project.permissions.asked == [("external_directory", (f"{parent}/*",)), ("bash", ("ls",))]


async def test_pure_cd_inside_the_project_asks_bash_for_its_text(project: Project) -> None:
    (project.root / "sub").mkdir()
    await project.ok("bash", command="cd sub")
    assert project.permissions.asked == [("bash", ("cd sub",))]


async def test_redirect_only_command_asks_edit_then_bash_for_the_raw_text(
    make_project: MakeProject, kit: Any
) -> None:
    project = make_project(kit.Recorder(decide=lambda r: "deny" if r.action == "bash" else "allow"))
    (project.root / "important.py").write_text("print(1)\n")
    outcome = await project.fail("bash", command="> important.py")
    assert outcome.kind == "blocked"
    assert project.permissions.asked == [("edit", ("important.py",)), ("bash", ("> important.py",))]
    assert project.permissions.requests[1].save == ("> important.py",)
    assert (project.root / "important.py").read_text() == "print(1)\n"


@pytest.mark.parametrize(
    "command",
    [
        "cp --target-directory={outside} x",
        "cp -t {outside} x",
        "mv --target-directory={outside} x",
        "nice -n 5 rm {outside}/victim",
        "sudo -u root rm {outside}/victim",
        "timeout 5 rm {outside}/victim",
        "env -u X rm {outside}/victim",
        "rm {{"
        + ",".join(["a"] * 100)
        + ",{outside}/victim}}",  # more alternatives than were once enumerated
    ],
)
async def test_wrapped_and_optioned_outside_paths_ask_external_directory(
    make_project: MakeProject, kit: Any, outside: Path, command: str
) -> None:
    (outside / "victim").write_text("v")
    project = make_project(
        kit.Recorder(decide=lambda r: "deny" if r.action == "external_directory" else "allow")
    )
    (project.root / "x").write_text("x")
    outcome = await project.fail("bash", command=command.format(outside=outside))
    assert outcome.kind == "blocked"
    assert [a for a, _ in project.permissions.asked] == ["external_directory"]
    assert (outside / "victim").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]


async def test_unknown_directory_then_relative_path_asks_external_directory_for_the_raw_text(
    make_project: MakeProject, kit: Any, outside: Path
) -> None:
    (outside / "victim").write_text("v")
    project = make_project(
        kit.Recorder(decide=lambda r: "deny" if r.action == "external_directory" else "allow")
    )
    command = f"X={outside}; cd $X && rm victim"
    outcome = await project.fail("bash", command=command)
    assert outcome.kind == "blocked"
    assert project.permissions.asked == [("external_directory", (f"(uncertain) {command}",))]
    request = project.permissions.requests[0]
    assert request.save == (f"(uncertain) {command}",)
    assert request.metadata["uncertain"]
    assert (outside / "victim").exists()


async def test_external_directory_is_asked_once_per_directory(project: Project, tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    await project.ok(
        "bash", command=f"ls {tmp_path}/one/a {tmp_path}/two/b; cat {tmp_path}/one/a {tmp_path}/two/b"
    )
    asked = project.permissions.asked
    assert asked[:2] == [
        ("external_directory", (f"{tmp_path}/one/*",)),
        ("external_directory", (f"{tmp_path}/two/*",)),
    ]
    assert [a for a, _ in asked[2:]] == ["bash"]
    assert project.permissions.requests[0].metadata["command"].startswith("ls ")


async def test_workdir_outside_the_project_needs_external_directory(project: Project, outside: Path) -> None:
    outcome = await project.ok("bash", command="pwd", workdir=str(outside))
    assert text_of(outcome.content).startswith(f"{outside}\n")
    assert project.permissions.asked[0] == ("external_directory", (f"{outside}/*",))


async def test_workdir_relative_to_the_project(project: Project) -> None:
    (project.root / "sub").mkdir()
    outcome = await project.ok("bash", command="pwd", workdir="sub")
    assert text_of(outcome.content).startswith(f"{project.location.root / 'sub'}\n")
    assert [a for a, _ in project.permissions.asked] == ["bash"]


async def test_home_paths_are_expanded(
    project: Project, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(outside))
    await project.ok("bash", command="touch ~/a.txt")
    assert project.permissions.asked[0] == ("external_directory", (f"{outside}/*",))
    assert (outside / "a.txt").exists()


async def test_symlink_leading_out_asks_for_where_it_lands(project: Project, outside: Path) -> None:
    (project.root / "link").symlink_to(outside)
    await project.ok("bash", command="touch link/x")
    assert project.permissions.asked[0] == ("external_directory", (f"{outside}/*",))


async def test_unparseable_command_asks_an_uncertain_resource_and_saves_nothing(project: Project) -> None:
    outcome = await project.ok("bash", command="echo 'unterminated")
    # What the parser could read is asked too (a deny on it applies), beside the uncertain text; what text that
    # is not valid shell touches is not known either (external_directory for its text).
    assert project.permissions.asked == [
        ("external_directory", ("(uncertain) echo 'unterminated",)),
        ("bash", ("echo", "(uncertain) echo 'unterminated")),
    ]
    assert project.permissions.requests[1].save == ()
    assert project.permissions.requests[1].metadata["uncertain"]
    assert "Command exited with code 2." in text_of(outcome.content)


async def test_denied_bash_runs_nothing(make_project: MakeProject, kit: Any) -> None:
    project = make_project(kit.Recorder(decide=lambda r: "deny" if r.action == "bash" else "allow"))
    outcome = await project.fail("bash", command="touch marker")
    assert outcome.kind == "blocked"
    assert not (project.root / "marker").exists()


async def test_denied_external_directory_never_asks_bash(
    make_project: MakeProject, kit: Any, outside: Path
) -> None:
    project = make_project(
        kit.Recorder(decide=lambda r: "deny" if r.action == "external_directory" else "allow")
    )
    outcome = await project.fail("bash", command=f"touch {outside}/marker")
    assert outcome.kind == "blocked"
    assert [a for a, _ in project.permissions.asked] == ["external_directory"]
    assert not (outside / "marker").exists()


async def test_real_permission_service_allows_and_blocks(root: Path, tmp_path: Path) -> None:
    agent = Agent(
        name="build",
        rules=(Rule("*", "*", "allow"), Rule("bash", "*", "ask"), Rule("bash", "echo *", "allow")),
    )
    async with SavedApprovals(tmp_path / "approvals.db") as saved:
        service = PermissionService(bus=Bus(), saved=saved, resolve=StaticRules(project="prj", agent=agent))
        project_deps = BuiltinDeps(
            location=Location(root), permissions=service, output=OutputStore(tmp_path / "out")
        )
        registry = ToolRegistry(output=OutputStore(tmp_path / "out"))
        registry.register({"bash": make(project_deps)})
        ctx = ToolContext(session_id="ses_1", agent="build", message_id="msg_1", call_id="call_1")
        step = registry.materialize(rules=[])
        ok = await step.settle(ToolCall(call_id="call_1", name="bash", input={"command": "echo hi"}), ctx)
        assert isinstance(ok, Completed)
        assert text_of(ok.content) == "hi\n\nCommand exited with code 0."
        agent_deny = Agent(name="build", rules=(Rule("*", "*", "allow"), Rule("bash", "rm *", "deny")))
        deny_service = PermissionService(
            bus=Bus(), saved=saved, resolve=StaticRules(project="prj", agent=agent_deny)
        )
        registry2 = ToolRegistry(output=OutputStore(tmp_path / "out"))
        registry2.register(
            {
                "bash": make(
                    BuiltinDeps(
                        location=Location(root), permissions=deny_service, output=OutputStore(tmp_path)
                    )
                )
            }
        )
        (root / "keep").write_text("x")
        blocked = await registry2.materialize(rules=[]).settle(
            ToolCall(call_id="call_2", name="bash", input={"command": "ls && rm keep"}), ctx
        )
        assert isinstance(blocked, Failed)
        assert blocked.kind == "blocked"
        assert "rm keep" in blocked.error
        assert (root / "keep").exists()


# --- workdir -------------------------------------------------------------------------------------------------------


async def test_missing_workdir_fails_before_asking(project: Project) -> None:
    outcome = await project.fail("bash", command="true", workdir="nope")
    assert outcome.kind == "tool"
    assert outcome.error == f"Working directory is not a directory: {project.location.root / 'nope'}"
    assert project.permissions.requests == []


async def test_workdir_that_disappears_during_approval_runs_nothing(
    make_project: MakeProject, kit: Any
) -> None:
    def remove_then_allow(request: PermissionRequest) -> str:
        if request.action == "bash":
            (workdir / "keep").unlink()
            workdir.rmdir()
        return "allow"

    project = make_project(kit.Recorder(decide=remove_then_allow))
    workdir = project.root / "w"
    workdir.mkdir()
    (workdir / "keep").write_text("x")
    outcome = await project.fail("bash", command="touch created", workdir="w")
    assert outcome.error == f"Working directory is not a directory: {project.location.root / 'w'}"
    assert not workdir.exists()


async def test_a_file_as_workdir_fails(project: Project) -> None:
    (project.root / "f").write_text("x")
    outcome = await project.fail("bash", command="true", workdir="f")
    assert outcome.error.startswith("Working directory is not a directory:")


# --- progress and cancellation -------------------------------------------------------------------------------------


class Tail:
    def __init__(self) -> None:
        self.updates: list[Mapping[str, Any]] = []
        self._changed = anyio.Event()
        self._token = anyio.lowlevel.current_token()

    def __call__(self, update: Mapping[str, Any]) -> None:
        self.updates.append(update)
        anyio.from_thread.run_sync(self._changed.set, token=self._token)

    async def wait_for(self, pattern: str) -> re.Match[str]:
        with anyio.fail_after(5):
            while True:
                for update in reversed(self.updates):
                    if found := re.search(pattern, update["output"]):
                        return found
                await self._changed.wait()
                self._changed = anyio.Event()


async def test_cancelling_the_call_kills_the_command_and_propagates(project: Project) -> None:
    tail = Tail()
    ctx = ToolContext(session_id="ses_1", agent="build", message_id="msg_1", call_id="call_c", progress=tail)
    step = project.registry.materialize(rules=[])
    call = ToolCall(
        call_id="call_c", name="bash", input={"command": "echo sh=$$; sleep 1000 & echo bg=$!; wait"}
    )
    pids: list[int] = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel_when_running() -> None:
                found = await tail.wait_for(r"sh=(\d+)\nbg=(\d+)")
                pids.extend(int(p) for p in found.groups())
                scope.cancel()

            tg.start_soon(cancel_when_running)
            await step.settle(call, ctx)
            pytest.fail("settle should not return a result for a cancelled call")
    assert scope.cancelled_caught
    assert pids and all(gone(pid) for pid in pids)


async def test_environment_marks_tether(project: Project) -> None:
    assert (await project.text("bash", command="echo $TETHER")).startswith("1\n")
    assert "TETHER" not in os.environ


# --- writes: edit, protected paths ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "target"),
    [
        ("echo '[core] fsmonitor = touch canary' >> .git/config", ".git/config"),
        ("printf x | tee -a .git/hooks/pre-commit", ".git/hooks/pre-commit"),
        ("sed -i s/ask/allow/ .tether/tether.json", ".tether/tether.json"),
        ("cp evil.md AGENTS.md", "AGENTS.md"),
        ("\\command dd if=evil.md of=.gitmodules", ".gitmodules"),
        ("bash -c 'cat evil.md > .git/config'", ".git/config"),
        ("git diff --output=.git/config", ".git/config"),
    ],
)
async def test_a_write_to_a_protected_path_asks_edit_for_it_and_writes_nothing_when_refused(
    make_project: MakeProject, kit: Any, command: str, target: str
) -> None:
    project = make_project(
        kit.Recorder(
            decide=lambda r: "deny" if r.action == "edit" and r.metadata.get("protected") else "allow"
        )
    )
    root = project.root
    for name in (".git/config", ".git/hooks/pre-commit", ".tether/tether.json", "AGENTS.md", ".gitmodules"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("original\n")
    (root / "evil.md").write_text("evil\n")
    outcome = await project.fail("bash", command=command)
    assert outcome.kind == "blocked"
    protected = [r for r in project.permissions.requests if r.metadata.get("protected")]
    assert [tuple(r.resources) for r in protected] == [(target,)]
    assert (root / target).read_text() == "original\n"
    assert not (root / "canary").exists()


async def test_writes_inside_the_project_ask_edit_so_an_agent_that_may_not_edit_cannot_write(
    make_project: MakeProject, kit: Any
) -> None:
    project = make_project(kit.Recorder(decide=lambda r: "deny" if r.action == "edit" else "allow"))
    (project.root / "app.py").write_text("print(1)\n")
    for command in ("echo x > app.py", "ls; >> app.py", "truncate -s 0 app.py", "rm app.py", "ls 1<>app.py"):
        outcome = await project.fail("bash", command=command)
        assert outcome.kind == "blocked", command
    assert (project.root / "app.py").read_text() == "print(1)\n"
    # ``1<>`` is lost by the parser: text that does not parse also asks external_directory for its text
    assert [a for a, _ in project.permissions.asked] == ["edit"] * 4 + ["external_directory", "edit"]
