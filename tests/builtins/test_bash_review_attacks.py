"""Attacks from the security review of the bash analysis (issue 12 follow-up), each run against the real tool.

Every attack is a command that a narrow rule set allowed although it ran something else, read outside the project or
wrote a protected file. Each test runs the bash tool (settle, the analysis, the real permission evaluation of the
built-in ``build`` agent or of a given rule set) with a fake that allows what the rules allow and refuses the rest,
and checks that the attack is refused and its canary untouched; where the attack needs the shell's own behaviour to
mean anything, the text is first run by the real ``/bin/bash`` to prove it does what the test says. Controls show the
legitimate spelling still runs.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import pytest

from tether.builtins._shell_parse import analyze
from tether.permissions import PermissionRequest, Rule, builtin_agents, evaluate_request
from tether.tools import Completed

from .conftest import Project, Recorder

pytestmark = pytest.mark.anyio

Rules = Sequence[Rule] | Sequence[Sequence[Rule]]


class Gate(Recorder):
    """The permission fake: decides each request with the real evaluation; ``ask`` refuses (nobody answers)."""

    def __init__(self, rules: Rules) -> None:
        super().__init__(decide=self._decide)
        self.rules = rules
        self.effects: list[tuple[str, str]] = []

    def _decide(self, request: PermissionRequest) -> str:
        effect = evaluate_request(
            request.action, request.resources, self.rules, protected=request.protected
        ).effect
        self.effects.append((request.action, effect))
        return "allow" if effect == "allow" else "deny"


Run = Callable[..., Awaitable[Gate]]


@pytest.fixture
def default_rules(tmp_path: Path) -> Rules:
    return builtin_agents(tmp_path / "data", tmp_path / "tmp")["build"].rulesets


@pytest.fixture
def run(make_project: Callable[..., Project]) -> Run:
    """Run ``command`` through the real tool under ``rules``; returns the gate (what was asked, what was decided)."""

    async def call(command: str, rules: Rules, *, ran: bool | None = None) -> Gate:
        gate = Gate(rules)
        project = make_project(gate)
        outcome = await project.call("bash", command=command)
        if ran is not None:
            assert isinstance(outcome, Completed) == ran, (command, gate.effects, outcome)
        return gate

    return call


def shell(text: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        ["/bin/bash", "-c", text],
        cwd=cwd,
        capture_output=True,
        timeout=20,
        stdin=subprocess.DEVNULL,
        check=False,
        env={**os.environ, **(env or {})},
    )


# --- 1. the read-only allow list ran any command -------------------------------------------------------------------

NESTED_BACKTICKS = "echo `echo \\`touch canary\\``"


async def test_nested_escaped_backticks_are_not_allowed_as_echo(root: Path, run: Run) -> None:
    scratch = root.parent / "scratch"
    scratch.mkdir()
    shell(NESTED_BACKTICKS, scratch)
    assert (scratch / "canary").exists(), "bash runs the inner substitution"
    rules = (Rule("*", "*", "allow"), Rule("bash", "*", "deny"), Rule("bash", "echo *", "allow"))
    gate = await run(NESTED_BACKTICKS, rules, ran=False)
    assert ("bash", "deny") in gate.effects  # the inner ``touch canary`` is read, and the text is uncertain
    assert not (root / "canary").exists()
    await run("echo `echo hi`", rules, ran=True)  # control: one level of backticks is analysed, and allowed
    deny_rm = (Rule("*", "*", "allow"), Rule("bash", "rm *", "deny"))
    await run("echo `echo \\`rm canary\\``", deny_rm, ran=False)  # a deny-list sees the inner command


SUBSTRINGS = [
    "echo ${x:y}",
    "echo ${x:1:y}",
    "echo ${@:y}",
    "echo ${x[@]:y}",
    "echo ${x:(y)}",
    "echo ${x:1+y}",
    "echo ${x:${y}}",
    'echo "${x:1:y}"',
    "cat <<EOF\n${x:y}\nEOF",
]


@pytest.mark.parametrize("text", SUBSTRINGS)
async def test_a_substring_offset_that_is_not_a_number_is_uncertain(root: Path, run: Run, text: str) -> None:
    scratch = root.parent / "scratch"
    scratch.mkdir()
    shell(text, scratch, env={"x": "abcdef", "y": "a[$(touch canary)]"})
    assert (scratch / "canary").exists(), "bash evaluates the offset as arithmetic and runs the substitution"
    assert analyze(text, cwd=str(root), home="/h").uncertain_resource is not None
    rules = (Rule("bash", "*", "deny"), Rule("bash", "echo *", "allow"), Rule("bash", "cat *", "allow"))
    await run(text, rules, ran=False)


@pytest.mark.parametrize("text", ["echo ${x:1:2}", "echo ${x: -1}", "echo ${x:-y}", "echo ${x:=y} ${x:+z}"])
async def test_literal_substrings_and_default_values_stay_allowed(run: Run, text: str) -> None:
    await run(text, (Rule("bash", "*", "deny"), Rule("bash", "echo *", "allow")), ran=True)


# --- 2. options that run a program ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "rg --hostname-bin=./evil.sh x",
        "rg --hostname-bin ./evil.sh x",
        "rg --pre ./evil.sh x",
        "rg --pre=./evil.sh x a.txt",
        "rg -z x",
        "rg --search-zip x",
        "rg -iz x",
        "sort --compress-program=./evil.sh a.txt",
        "sort --compress=./evil.sh a.txt",  # GNU getopt takes an unambiguous prefix
    ],
)
async def test_options_that_run_a_program_ask_by_default(
    root: Path, run: Run, default_rules: Rules, text: str
) -> None:
    (root / "a.txt").write_text("x\n")
    evil = root / "evil.sh"
    evil.write_text("#!/bin/sh\ntouch canary\n")
    evil.chmod(0o755)
    gate = await run(text, default_rules, ran=False)
    # what the program touches is not known either: the command's text asks external_directory first
    assert gate.effects == [("external_directory", "ask")]
    resources = analyze(text, cwd=str(root), home="/h").resources
    assert evaluate_request("bash", resources, default_rules).effect == "ask"  # and so would the command
    assert not (root / "canary").exists()


async def test_a_program_given_to_rg_is_a_command_a_deny_matches(tmp_path: Path) -> None:
    analysis = analyze("rg --pre=rm x", cwd=str(tmp_path), home="/h")
    rules = (Rule("bash", "*", "allow"), Rule("bash", "rm *", "deny"))
    assert evaluate_request("bash", analysis.resources, rules).effect == "deny"


@pytest.mark.parametrize("text", ["rg -n x", "rg -e z x", "rg -g '*.py' x", "grep -rn x ."])
async def test_plain_searches_still_run(root: Path, run: Run, default_rules: Rules, text: str) -> None:
    (root / "a.txt").write_text("x\n")
    await run(text, default_rules, ran=True)


# --- 3. globs ------------------------------------------------------------------------------------------------------


@pytest.fixture
def outside_link(root: Path) -> Path:
    """A committed symlink leading out of the project, holding a secret."""
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "creds").write_text("secret")
    (root / "vendor_link").symlink_to(outside)
    return outside


async def test_a_glob_read_through_a_symlink_asks(
    root: Path, run: Run, default_rules: Rules, outside_link: Path
) -> None:
    scratch_out = subprocess.run(
        ["/bin/bash", "-c", "cat */creds"], cwd=root, capture_output=True, text=True, check=False
    ).stdout
    assert scratch_out == "secret", "the glob reaches outside through the symlink"
    gate = await run("cat */creds", default_rules, ran=False)
    assert ("external_directory", "ask") in gate.effects


async def test_a_glob_read_inside_the_project_asks_external_directory(
    root: Path, run: Run, default_rules: Rules
) -> None:
    # Documented choice: the analysis does not read the file system, and any name a glob matches may be a symlink
    # leading out, so a glob read asks ``external_directory`` for the raw text (a person decides; "always" saves
    # nothing for it: the saved text's * would be a wildcard, approving ``cat src/; <anything>; .py``).
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x = 1\n")
    gate = await run("cat src/*.py", default_rules, ran=False)
    assert gate.effects[0] == ("external_directory", "ask")
    assert gate.requests[0].resources == ("(uncertain) cat src/*.py",) and gate.requests[0].save == ()
    allow_external = [*default_rules, [Rule("external_directory", "(uncertain) cat src/*.py", "allow")]]
    await run("cat src/*.py", allow_external, ran=True)
    await run("cat src/a.py", default_rules, ran=True)  # a literal path needs nothing more


@pytest.mark.parametrize("text", ["grep -rn x --include=*.py .", "cat '*.py'", "ls"])
async def test_option_values_and_quoted_globs_are_not_matched_and_run(
    root: Path, run: Run, default_rules: Rules, text: str
) -> None:
    (root / "a.py").write_text("x\n")
    await run(text, default_rules, ran=None)
    assert not analyze(text, cwd=str(root), home="/h").uncertain


async def test_a_glob_write_that_can_match_git_config_is_a_protected_write(root: Path, run: Run) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "x.txt").write_text("[core]\n\tfsmonitor = touch canary\n")
    rules = (Rule("*", "*", "allow"),)
    gate = await run("cp x.txt .gi?/config", rules, ran=False)
    assert ("edit", "ask") in gate.effects  # only a rule naming the pattern itself allows it
    assert (root / ".git" / "config").read_text() == "[core]\n"


async def test_ansi_c_bytes_name_the_file_bash_opens(tmp_path: Path) -> None:
    analysis = analyze("cat $'\\xff'", cwd=str(tmp_path), home="/h")
    (path,) = [p.path for p in analysis.paths]
    assert os.fsencode(path) == os.fsencode(str(tmp_path)) + b"/\xff"


# --- 4. options that follow symbolic links -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "grep -R secret .",
        "grep --dereference-recursive secret .",
        "grep --deref secret .",
        "grep -Rn secret",
        "rg -L secret",
        "rg --follow secret",
        "find -L . -name creds",
        "find . -follow -name creds",
        "diff -r vendor_link vendor_link",
    ],
)
async def test_options_that_follow_symlinks_ask(
    root: Path, run: Run, default_rules: Rules, outside_link: Path, text: str
) -> None:
    gate = await run(text, default_rules, ran=False)
    assert ("external_directory", "ask") in gate.effects


async def test_grep_r_does_not_follow_symlinks_and_runs(
    root: Path, run: Run, default_rules: Rules, outside_link: Path
) -> None:
    await run("grep -rn secret .", default_rules, ran=True)


# --- 7. deny-list evasions -----------------------------------------------------------------------------------------

DENY_RM = (Rule("*", "*", "allow"), Rule("bash", "rm *", "deny"))


@pytest.mark.parametrize(
    "text",
    [
        "time { rm canary; }",
        "! { rm canary; }",
        "coproc { rm canary; }; wait",
        "time { A=1 rm canary; }",
        "/bin/r? canary",
        "/bin/[r]m canary",
    ],
)
async def test_groups_after_keywords_and_glob_command_names_are_denied(
    root: Path, run: Run, text: str
) -> None:
    scratch = root.parent / "scratch"
    scratch.mkdir()
    (scratch / "canary").write_text("x")
    shell(text, scratch)
    assert not (scratch / "canary").exists(), "bash really runs rm"
    (root / "canary").write_text("x")
    gate = await run(text, DENY_RM, ran=False)
    assert ("bash", "deny") in gate.effects
    assert (root / "canary").exists()


@pytest.mark.parametrize("text", ["bash <(echo rm canary)", "bash script.sh", "sh < script.sh"])
async def test_a_shell_reading_a_script_file_is_uncertain(root: Path, run: Run, text: str) -> None:
    # A deny-list (``*`` allowed) cannot contain what a script file runs, as for ``python script.py``; only a rule
    # of ``*`` allows the uncertain text, so an allow-list asks.
    (root / "script.sh").write_text("rm canary\n")
    (root / "canary").write_text("x")
    assert analyze(text, cwd=str(root), home="/h").uncertain_resource is not None
    allow_list = (Rule("*", "*", "allow"), Rule("bash", "*", "deny"), Rule("bash", "bash *", "allow"))
    allow_list += (
        Rule("bash", "sh *", "allow"),
        Rule("bash", "echo *", "allow"),
        Rule("bash", "< *", "allow"),
    )
    await run(text, allow_list, ran=False)
    assert (root / "canary").exists()


# --- 5. git settings that name commands, git subcommands that write ------------------------------------------------

GIT_ALLOWED = (Rule("*", "*", "allow"), Rule("bash", "*", "deny"), Rule("bash", "git *", "allow"))


@pytest.fixture
def repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


@pytest.mark.parametrize(
    "text",
    [
        "git -c core.fsmonitor='touch canary' status",
        "git -c core.pager='touch canary' -p log",
        "git -c diff.external='touch canary' diff",
        "git -c core.sshCommand='touch canary' fetch",
        "git -c include.path=../evil.cfg status",
        "git -c alias.st='-c core.fsmonitor=x status' st",
    ],
)
async def test_git_settings_that_name_a_command_are_uncertain(
    root: Path, repo: Path, run: Run, text: str
) -> None:
    gate = await run(text, GIT_ALLOWED, ran=False)
    assert ("bash", "deny") in gate.effects
    assert not (root / "canary").exists()


async def test_fsmonitor_really_runs_and_a_deny_on_its_command_applies(
    root: Path, repo: Path, run: Run
) -> None:
    scratch = root.parent / "scratch"
    subprocess.run(["git", "init", "-q", str(scratch)], check=True, capture_output=True)
    shell("git -c core.fsmonitor='touch canary' status", scratch)
    assert (scratch / "canary").exists(), "git runs core.fsmonitor"
    (root / "victim").write_text("x")
    await run("git -c core.fsmonitor='rm victim' status", DENY_RM, ran=False)
    assert (root / "victim").exists()


@pytest.mark.parametrize(
    "text",
    [
        "git config core.fsmonitor 'touch canary'",
        "git config --add core.hooksPath .",
        "git archive -o .git/config HEAD",
        "git format-patch -o .git/hooks HEAD",
        "git bundle create .git/config HEAD",
        "git init --separate-git-dir=.git/hooks/x",
        "git worktree add .git/hooks/w",
        "git clone ../other .git/hooks/c",
    ],
)
async def test_git_subcommands_that_write_a_protected_path_ask(
    root: Path, repo: Path, run: Run, text: str
) -> None:
    gate = await run(text, (Rule("*", "*", "allow"),), ran=False)
    assert ("edit", "ask") in gate.effects


@pytest.mark.parametrize("text", ["git -c user.name=x -c color.ui=never log", "git config --get user.name"])
async def test_harmless_git_settings_and_config_reads_run(
    root: Path, repo: Path, run: Run, text: str
) -> None:
    await run(text, GIT_ALLOWED, ran=None)
    assert analyze(text, cwd=str(root), home="/h").unknown == ()
    assert not [p for p in analyze(text, cwd=str(root), home="/h").paths if p.write]


# --- 6. write commands missing from the path table -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("uniq a.txt .git/config", ".git/config"),
        ("sort -o .git/config a.txt", ".git/config"),
        ("sort --output=.git/config a.txt", ".git/config"),
        ("sort --out=.git/config a.txt", ".git/config"),
        ("split a.txt .git/hooks/x", ".git/hooks/x"),
        ("curl -sSfo .git/config http://127.0.0.1:9/x", ".git/config"),
        ("wget -qO .git/config http://127.0.0.1:9/x", ".git/config"),
        ("zip .git/config a.txt", ".git/config"),
        ("ed .git/config", ".git/config"),
    ],
)
async def test_writing_commands_write_their_output_paths(
    root: Path, repo: Path, run: Run, text: str, written: str
) -> None:
    analysis = analyze(text, cwd=str(root), home="/h")
    assert str(root / written) in {p.path for p in analysis.paths if p.write}
    gate = await run(text, (Rule("*", "*", "allow"),), ran=False)
    assert ("edit", "ask") in gate.effects  # a protected path: only a rule naming it allows


async def test_patch_writes_files_named_inside_the_patch(root: Path, run: Run) -> None:
    gate = await run(
        "patch -p1 < fix.diff", (Rule("*", "*", "allow"), Rule("external_directory", "*", "ask"))
    )
    assert ("external_directory", "ask") in gate.effects  # uncertain paths: the raw text is asked


@pytest.mark.parametrize(
    "text", ["bash <(echo rm canary)", "sh <(printf 'rm canary')", "echo rm canary | bash"]
)
async def test_a_shell_fed_an_echoed_script_is_denied_by_a_deny_list(root: Path, run: Run, text: str) -> None:
    scratch = root.parent / "scratch"
    scratch.mkdir()
    (scratch / "canary").write_text("x")
    shell(text, scratch)
    assert not (scratch / "canary").exists(), "bash really runs rm"
    (root / "canary").write_text("x")
    gate = await run(text, DENY_RM, ran=False)
    assert ("bash", "deny") in gate.effects
    assert (root / "canary").exists()
