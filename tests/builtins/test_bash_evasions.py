"""Spellings of a denied command, generated and run through the real shell: none is ever allowed.

Each generated text is analysed as the bash tool analyses it and decided by the real rule evaluation, under a deny
list (``* allow``, ``rm * deny``) and an allow list (``* deny`` with read-only commands allowed); then the text is run
by ``/bin/bash`` in a temp directory holding a canary file. When the canary is gone the text really ran ``rm``, and
then neither rule set may have allowed it.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.builtins._shell_parse import analyze
from tether.builtins.bash import plan_command
from tether.location import Location
from tether.permissions import PermissionRequest, Rule, builtin_agents, evaluate_request

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


RUNNERS = [
    "uv run",
    "uv run --with x",
    "poetry run",
    "pdm run",
    "hatch run",
    "pipenv run",
    "rye run",
    "pixi run",
    "conda run -n base",
    "npx",
    "npx --yes",
    "bunx",
    "pnpx",
    "bun x",
    "npm exec --",
    "npm x --yes --",
    "pnpm exec",
    "pnpm dlx",
    "yarn exec",
    "yarn dlx",
]


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_runner_runs_a_denied_command_and_is_denied_as_it(tmp_path: Path, runner: str) -> None:
    # ``uv run rm x``, ``npx rm x`` run ``rm`` (from PATH): a runner is a wrapper, and ``rm *: deny`` applies to it as
    # to ``sudo rm x``. Before, its only resource was the whole text, which ``* allow`` allowed.
    text = f"{runner} rm canary"
    if shutil.which(runner.split()[0]) is not None:
        assert _runs_rm(tmp_path, text), f"the runner must really run rm: {text!r}"
    assert not _allowed(text, DENY_LIST, tmp_path)


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


# --- program text writes outside the project: decided as a path only known at run time ------------------------------
#
# ``bash: {"*": "allow"}`` with ``external_directory: deny``: the user lets commands run but nothing touch files
# outside the project. Program text (an interpreter's -c/-e, a script file, a module, its input, a makefile, a file
# run by its path, awk and sed programs) touches paths only known when it runs, so it is refused as ``echo x > $OUT``
# is. Each spelling is first run by /bin/bash to prove it writes the canary outside, then through the real tool.

OUTSIDE_DENIED = (
    Rule("*", "*", "allow"),
    Rule("bash", "*", "allow"),
    Rule("external_directory", "*", "deny"),
)
PY = "open('{out}', 'w').write('x')"
PROGRAMS = [
    'python3 -c "{py}"',
    'python3 -Ic "{py}"',
    "python3 write.py",
    "python3 -m write",
    "python3 - <<'EOF'\n{py}\nEOF",
    "python3 <<'EOF'\n{py}\nEOF",
    'echo "{py}" | python3',
    "python3 < write.py",
    "env python3 write.py",
    "timeout 10 python3 write.py",
    "find . -maxdepth 0 -exec python3 write.py \\;",
    "perl -e 'open(F, \">{out}\")'",
    "echo x | perl -ne 'open(F, \">{out}\")'",
    "sh ./write.sh",
    "bash write.sh",
    "./write.sh",
    "source ./write.sh",
    ". ./write.sh",
    "make",
    "make -n",  # $(shell ...) in the makefile runs even on a dry run
    "make -f Makefile all",
    'awk \'BEGIN {{ print "x" > "{out}" }}\'',
    'awk \'BEGIN {{ printf("x") > "{out}" }}\'',
    "awk 'BEGIN {{ system(\"touch {out}\") }}'",
    'awk \'BEGIN {{ print "x" | "cat > {out}" }}\'',
    "echo x | sed 's|.*|touch {out}|e'",
    "echo x | sed -n 'w {out}'",
    "echo x | sed 's/x/y/w {out}'",
    "echo x | sed 'e touch {out}'",
    "echo x | sed -n --expr='w {out}'",  # getopt reads any unambiguous prefix of --expression
    "echo a/b | sed 's/[/]/x/w {out}'",  # GNU sed reads [/] as a bracket: the s command ends later, at w
    "echo x | sed -n 'b end; :end w {out}'",  # GNU sed 4.9 ends a :label at white space: w is a command
    "X='touch {out}'; eval $X",
    "x='a[$(touch {out})]'; echo $((x))",
]
NODE_PROGRAMS = [
    "node -e \"require('fs').writeFileSync('{out}', 'x')\"",
    "node write.js",
]


def _program_project(root: Path, out: Path) -> None:
    py = PY.format(out=out)
    (root / "write.py").write_text(py + "\n")
    (root / "write.js").write_text(f"require('fs').writeFileSync('{out}', 'x')\n")
    (root / "write.sh").write_text(f"#!/bin/sh\ntouch '{out}'\n")
    (root / "write.sh").chmod(0o755)
    (root / "Makefile").write_text(f"X := $(shell touch '{out}')\nall:\n\ttouch '{out}'\n")


def _shell_writes(text: str, cwd: Path, out: Path) -> bool:
    out.unlink(missing_ok=True)
    subprocess.run(
        ["/bin/bash", "-c", text],
        cwd=cwd,
        capture_output=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    wrote = out.exists()
    out.unlink(missing_ok=True)
    return wrote


@pytest.mark.anyio
@pytest.mark.parametrize(
    "spelling",
    [
        *PROGRAMS,
        *(
            pytest.param(
                p, marks=pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
            )
            for p in NODE_PROGRAMS
        ),
    ],
)
async def test_program_text_that_writes_outside_is_refused_by_an_external_directory_deny(
    root: Path, tmp_path: Path, make_project: Callable[..., Any], kit: Any, spelling: str
) -> None:
    out = tmp_path / "elsewhere" / "canary"
    out.parent.mkdir()
    _program_project(root, out)
    text = spelling.format(out=out, py=PY.format(out=out))
    assert _shell_writes(text, root, out), f"the spelling must really write outside: {text!r}"
    decided: list[tuple[str, str]] = []

    def decide(request: PermissionRequest) -> str:
        effect = evaluate_request(request.action, request.resources, OUTSIDE_DENIED).effect
        decided.append((request.action, effect))
        return "allow" if effect == "allow" else "deny"

    project = make_project(kit.Recorder(decide=decide))
    outcome = await project.fail("bash", command=text)
    assert outcome.kind == "blocked"
    assert decided[-1] == ("external_directory", "deny"), decided
    assert not out.exists()
    plan = plan_command(project.location, text, root)
    assert plan is not None and (plan.analysis.uncertain or plan.outside)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "spelling",
    [
        "awk 1 {secret}",
        "awk -F: '{{print $1}}' notes.txt {secret}",
        "tac {secret}",
        "base64 {secret}",
        "rev {secret}",
        "shuf -n 1 {secret}",
        "fold -w 80 {secret}",
    ],
)
async def test_a_command_reading_a_file_outside_is_refused_by_an_external_directory_deny(
    root: Path, tmp_path: Path, make_project: Callable[..., Any], kit: Any, spelling: str
) -> None:
    secret = tmp_path / "elsewhere" / "secret"
    secret.parent.mkdir()
    secret.write_text("the key\n")
    (root / "notes.txt").write_text("a:1\n")
    decided: list[tuple[str, str]] = []

    def decide(request: PermissionRequest) -> str:
        effect = evaluate_request(request.action, request.resources, OUTSIDE_DENIED).effect
        decided.append((request.action, effect))
        return "allow" if effect == "allow" else "deny"

    outcome = await make_project(kit.Recorder(decide=decide)).fail(
        "bash", command=spelling.format(secret=secret)
    )
    assert outcome.kind == "blocked"
    assert ("external_directory", "deny") in decided
    assert "the key" not in str(outcome)


CONTROLS = [
    "python3 --version",
    "python3 -V",
    "node --version",
    "make --version",
    "bash --version",
    "command -v python3",
    "awk '{print $1}' notes.txt",
    "awk -F: '$2 > 1 {print $1}' notes.txt",
    "awk '/a|b/ {n++} END {print n}' notes.txt",
    "sed -n 's/a/b/p' notes.txt",
    "sed -i 's/a/b/' notes.txt",
    "sed --sandbox 's/a/b/w x' notes.txt",
    "git status",
]


@pytest.mark.parametrize("text", CONTROLS)
def test_commands_that_only_print_or_filter_know_their_paths(tmp_path: Path, text: str) -> None:
    (tmp_path / "notes.txt").write_text("a:2\n")
    plan = plan_command(Location(tmp_path), text, tmp_path)
    assert plan is not None
    assert plan.analysis.uncertain == () and plan.outside == (), plan.analysis.uncertain
    assert evaluate_request("bash", plan.analysis.resources, OUTSIDE_DENIED).effect == "allow"


@pytest.mark.anyio
async def test_a_directory_rule_never_matches_the_text_of_a_command_whose_paths_are_unknown(
    root: Path, tmp_path: Path, make_project: Callable[..., Any], kit: Any
) -> None:
    # The text of a command whose paths are unknown is asked as ``(uncertain) <text>``: as the bare text, a command
    # starting with the temp directory's path matched the default ``external_directory`` rule ``<tmp>/*: allow`` and
    # ran without the ask (with ``bash: allow``, ``/tmp/x; python3 -c ...`` wrote anywhere).
    out = tmp_path / "elsewhere" / "canary"
    out.parent.mkdir()
    rules = (*builtin_agents(tmp_path / "data", tmp_path)["build"].rulesets, (Rule("bash", "*", "allow"),))
    text = f'{tmp_path}/nope; python3 -c "{PY.format(out=out)}"'
    assert _shell_writes(text, root, out)
    decided: list[tuple[str, tuple[str, ...], str]] = []

    def decide(request: PermissionRequest) -> str:
        effect = evaluate_request(request.action, request.resources, rules).effect
        decided.append((request.action, tuple(request.resources), effect))
        return "allow" if effect == "allow" else "deny"

    outcome = await make_project(kit.Recorder(decide=decide)).fail("bash", command=text)
    assert outcome.kind == "blocked"
    assert decided == [("external_directory", (f"(uncertain) {text}",), "ask")]
    assert not out.exists()
