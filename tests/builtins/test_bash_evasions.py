"""Spellings of a denied command, generated and run through the real shell: none is ever allowed.

Each generated text is analysed as the bash tool analyses it and decided by the real rule evaluation, under a deny
list (``* allow``, ``rm * deny``) and an allow list (``* deny`` with read-only commands allowed); then the text is run
by ``/bin/bash`` in a temp directory holding a canary file. When the canary is gone the text really ran ``rm``, and
then neither rule set may have allowed it.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.builtins._shell_parse import analyze
from tether.builtins.bash import plan_command
from tether.location import Location
from tether.permissions import Rule, evaluate_request

DENY_LIST = (Rule("bash", "*", "allow"), Rule("bash", "rm *", "deny"))
ALLOW_LIST = (
    Rule("bash", "*", "deny"),
    *(
        Rule("bash", p, "allow")
        for p in ("ls *", "echo *", "true *", "false *", "find *", "xargs *", "cat *")
    ),
)

NAMES = [
    "rm",
    "\\rm",
    "r\\m",
    "r''m",
    'r""m',
    '"rm"',
    "'rm'",
    "/bin/rm",
    "/usr/bin/rm",
    "/bin/../bin/rm",
    "$'rm'",
    "$'\\x72m'",
    "$'r\\155'",
    "/bin/r?",
    "/bin/[r]m",
    "/usr/bin/r*",
]
WRAPPERS = [
    "command",
    "command -p",
    "env",
    "env A=1",
    "env -u HOME",
    "env --",
    "nice",
    "nice -n 5",
    "nohup",
    "timeout 5",
    "timeout -s KILL 5",
    "time",
    "stdbuf -o0",
    "setsid -w",
    "exec",
    "A=1",
]
BEFORE = ["", "true; ", "true && ", "false || ", "ls >/dev/null; ", "x=1; ", "echo a | "]
AFTER = ["", " 2>/dev/null", " >/dev/null", "; true", " && true", " || true", " &\nwait"]


@st.composite
def spellings(draw: st.DrawFn) -> str:
    """A text that may run ``rm canary``, built from the spellings the shell accepts."""
    name = draw(st.sampled_from(NAMES))
    wrappers = draw(st.lists(st.sampled_from(WRAPPERS), max_size=2))
    if "exec" in wrappers:  # exec must be the outermost word to make sense; keep it first
        wrappers = ["exec", *[w for w in wrappers if w != "exec"]]
    operand = draw(st.sampled_from(["canary", "./canary", "'canary'", "c\\anary", "-f canary", "-- canary"]))
    command = " ".join([*wrappers, name, operand])
    shape = draw(
        st.sampled_from(
            [
                "{c}",
                "{{ {c}; }}",
                "( {c} )",
                "echo $({c})",
                "echo `{c}`",
                "bash -c {q}",
                "sh -c {q}",
                "eval {q}",
                "if true; then {c}; fi",
                "for i in 1; do {c}; done",
                "f() {{ {c}; }}; f",
                "echo canary | xargs {n}",
                "find . -name canary -exec {n} {{}} \\;",
                "find . -name canary -delete",
                "x=$({c})",
                "case x in x) {c};; esac",
                "while true; do {c}; break; done",
                "! {c}",
                "{c} | cat",
                "cat <({c})",
                "coproc {c}\nwait",
                'echo "$({c})"',
                "echo ${{x:-$({c})}}",
                "true\n{c}",
                "time {{ {c}; }}",
                "! {{ {c}; }}",
                "coproc {{ {c}; }}\nwait",
                "echo `echo \\`{c}\\``",
            ]
        )
    )
    text = shape.format(c=command, q=shlex.quote(command), n=" ".join([*wrappers, name]))
    return draw(st.sampled_from(BEFORE)) + text + draw(st.sampled_from(AFTER))


def _runs_rm(tmp: Path, text: str) -> bool:
    canary = tmp / "canary"
    canary.write_text("canary")
    subprocess.run(
        ["/bin/bash", "-c", text],
        cwd=tmp,
        capture_output=True,
        timeout=20,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return not canary.exists()


def _allowed(text: str, rules: tuple[Rule, ...], cwd: Path) -> bool:
    # The tool's own plan: the pure analysis plus the forms of glob command words matched on the file system.
    plan = plan_command(Location(cwd), text, cwd)
    assert plan is not None
    return evaluate_request("bash", plan.analysis.resources, rules).effect == "allow"


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=spellings())
def test_a_spelling_that_runs_a_denied_command_is_never_allowed(tmp_path: Path, text: str) -> None:
    work = tmp_path / "w"
    work.mkdir(exist_ok=True)
    if not _runs_rm(work, text):
        return  # this spelling does not run rm here (nothing to prove)
    assert not _allowed(text, DENY_LIST, work), f"allowed by the deny list although it runs rm: {text!r}"
    assert not _allowed(text, ALLOW_LIST, work), f"allowed by the allow list although it runs rm: {text!r}"


@pytest.mark.parametrize(
    "text",
    [
        "\\rm canary",
        "r''m canary",
        "/bin/rm canary",
        "command rm canary",
        "env rm canary",
        "nice rm canary",
        "$'\\x72m' canary",
        "find . -delete",
        "find . -exec rm {} \\;",
        "echo canary | xargs rm",
        "bash -c 'r\"\"m canary'",
        "eval 'rm canary'",
        "x=$(rm canary)",
        "true; { rm canary; }",
        "time A=1 /usr/bin/rm -f canary",
        "r\\\nm canary",
        "coproc rm canary; wait",
        "coproc A=1 rm canary\nwait",
        "true\n\\rm canary",  # tree-sitter-bash reads a line starting with a backslash as more arguments
        "taskset 1 rm canary",
        "flock canary.lock rm canary",
        "script -qc 'rm canary' /dev/null",
        "watch -n1 -e -g 'rm canary; false'",
        "mapfile -C 'rm canary' -c 1 x <<< a",
        "git -c alias.x='!rm canary' x",
        "sh -c \"eval 'r''m' canary\"",
        "time { rm canary; }",
        "! { rm canary; }",
        "coproc { rm canary; }; wait",
        "/bin/r? canary",
        "/bin/[r]m canary",
        "echo canary | xargs /bin/r?",
        "{rm,canary}",
        "true; {rm,canary}",
        "r{m,x} canary",
    ],
)
def test_known_evasions_run_rm_and_are_denied(tmp_path: Path, text: str) -> None:
    assert _runs_rm(tmp_path, text), "the spelling must really run rm for this test to mean anything"
    assert not _allowed(text, DENY_LIST, tmp_path)
    assert not _allowed(text, ALLOW_LIST, tmp_path)


@pytest.mark.parametrize(
    "text",
    [
        "rm $(echo canary)",  # a dynamic operand is fine: the command word is known
        "ls; > canary",  # a statement that is only a redirection
        "$((1))",
    ],
)
def test_statements_without_a_known_allowed_command_are_not_allowed_by_the_allow_list(
    tmp_path: Path, text: str
) -> None:
    assert not _allowed(text, ALLOW_LIST, tmp_path)


@pytest.mark.parametrize(
    "text",
    [
        "echo $((x))",
        "echo $[x]",
        "echo ${a[x]}",
        "echo ${x@P}",
        "cat <<EOF\n`rm canary`\nEOF",
        "cat <<-EOF\n\t$(rm canary)\n\tEOF",
        "cat <<EOF; rm canary\nbody\nEOF\nls",
        "$((touch X) )",
        'eval "$CMD"',
        "python3 -c 'import os'",
        "node -e 'x'",
        "$CMD canary",
        "ls 1<>canary",
        'echo "${x:-`rm canary`}"',
        "source /dev/stdin <<< 'rm canary'",
        "hash -p /bin/rm ls; ls canary",
        "$(" * 300 + "ls" + ")" * 300,
    ],
)
def test_text_that_cannot_be_known_is_allowed_only_by_a_star_rule(tmp_path: Path, text: str) -> None:
    analysis = analyze(text, cwd=str(tmp_path), home="/nonexistent-home")
    assert analysis.uncertain_resource is not None
    narrow = (
        Rule("bash", "*", "deny"),
        *(Rule("bash", p, "allow") for p in ("ls *", "echo *", "cat *", "eval *")),
    )
    narrow += (
        Rule("bash", "python3 *", "allow"),
        Rule("bash", "node *", "allow"),
        Rule("bash", "$*", "allow"),
    )
    assert evaluate_request("bash", analysis.resources, narrow).effect != "allow"
    assert evaluate_request("bash", analysis.resources, (Rule("bash", "*", "allow"),)).effect == "allow"
    assert analysis.uncertain_resource not in analysis.save
