"""The bash analysis follows the shell text a command runs besides itself, and says when it cannot.

``eval``, ``sh -c``, ``su -c``, ``trap``, ``alias``, ``mapfile -C``, ``watch``, a git shell alias and ``find -exec``
run text of their own: a literal text is analysed as commands of the call (so a rule on ``rm *`` sees the ``rm``),
text only known at run time makes the call uncertain (asked as such, never matched by a narrower allow).
"""

from __future__ import annotations

import pytest

from tether.builtins._shell_analysis import Analysis
from tether.builtins._shell_parse import analyze

CWD = "/p/w"
HOME = "/home/u"


def run(command: str) -> Analysis:
    return analyze(command, cwd=CWD, home=HOME)


def texts(analysis: Analysis) -> list[str]:
    return [c.text for c in analysis.commands]


RUNS_INNER = [
    ("eval 'rm a'", "rm a"),
    ("su -c 'rm x' root", "rm x"),
    ("su --command='rm y'", "rm y"),
    ("runuser -c 'rm x' nobody", "rm x"),
    ('bash -o errexit -c "rm z"', "rm z"),
    ("trap 'rm x' EXIT", "rm x"),
    ("alias ll='rm -rf x'", "rm -rf x"),
    ("mapfile -C 'rm x' arr", "rm x"),
    ("watch ls", "ls"),
    ("git -c alias.x='!rm -rf y' x", "rm -rf y"),
    ("find . -exec rm {} \\;", "rm {}"),
]


@pytest.mark.parametrize(("command", "inner"), RUNS_INNER)
def test_literal_inner_text_is_analysed_as_a_command_of_the_call(command: str, inner: str) -> None:
    analysis = run(command)
    assert inner in texts(analysis)
    assert analysis.unknown == ()
    assert analysis.uncertain_resource is None
    assert inner in analysis.resources


UNKNOWN = [
    ("eval $X", "eval of text only known at run time"),
    ('trap "$X" EXIT', "trap of text only known at run time"),
    ("alias x=$Y", "alias of text only known at run time"),
    ('su -c "$X"', "su -c runs text only known at run time"),
    ("su -c", "su -c runs text only known at run time"),
    ("bash -c", "bash -c runs text only known at run time"),
    ("bash", "bash reads the commands to run from its input"),
    ('mapfile -C "$cb" arr', "mapfile -C runs text only known at run time"),
    ("watch $CMD", "watch runs text only known at run time"),
    ("source /dev/stdin", "source runs text that is only known at run time"),
    ("source", "source runs text that is only known at run time"),
    (". $f", ". runs text that is only known at run time"),
    ("hash -p /bin/rm ls", "hash -p changes which program a name runs"),
    ("python3 -c 'print(1)'", "python3 runs program text given on its command line"),
    ("python -Ic 'print(1)'", "python runs program text given on its command line"),
    ("node -e 'x'", "node runs program text given on its command line"),
]


@pytest.mark.parametrize(("command", "reason"), UNKNOWN)
def test_text_only_known_at_run_time_makes_the_call_uncertain(command: str, reason: str) -> None:
    analysis = run(command)
    assert [u for u in analysis.unknown if u.startswith(reason)], analysis.unknown
    assert analysis.uncertain_resource == f"(uncertain) {command}"
    assert analysis.uncertain_resource in analysis.resources
    assert not [p for p in analysis.save if p.startswith("(uncertain)")]  # "always" saves nothing for it


def test_trap_that_resets_a_signal_runs_nothing() -> None:
    analysis = run("trap - EXIT")
    assert texts(analysis) == ["trap - EXIT"]
    assert analysis.unknown == ()


def test_a_shell_given_a_script_file_runs_text_that_is_not_analysed() -> None:
    analysis = run("bash -- script.sh")
    assert analysis.unknown == ("bash runs a script file that is not analysed: bash -- script.sh",)


def test_find_delete_is_seen_as_rm_of_its_start_points() -> None:
    assert run("find -L src -name x -delete").commands[0].forms == ("rm -rf src",)
    assert run("find -delete").commands[0].forms == ("rm -rf .",)
    assert ("/p/w/src", True) in {(p.path, p.write) for p in run("find -L src -delete").paths}


def test_ansi_c_strings_are_decoded_and_what_is_not_decoded_is_uncertain() -> None:
    assert run("echo $'\\x41\\101\\n'").commands[0].forms == ("echo AA\n",)
    for undecoded in ("rm $'\\u00e9'", "rm $'\\xZZ'"):
        analysis = run(undecoded)
        assert analysis.paths == ()
        assert analysis.uncertain, undecoded


def test_hundreds_of_nested_evals_stop_at_the_nesting_limit_as_unknown() -> None:
    command = "; ".join(["eval 'eval true'"] * 150)
    analysis = run(command)
    assert any(u.startswith("too many nested shell texts") for u in analysis.unknown)
    assert analysis.uncertain_resource is not None


def test_inner_text_that_is_not_valid_shell_is_unknown() -> None:
    analysis = run("eval 'if'")
    assert analysis.unknown == ("the shell text it runs is not valid shell: eval 'if'",)


def test_options_before_the_command_option_are_skipped_even_when_unknown() -> None:
    assert "rm x" in texts(run("su $U -c 'rm x'"))
    assert run("su root").unknown == ()


def test_escapes_inside_double_quotes_are_removed_in_the_form_and_the_path() -> None:
    analysis = run('rm "a\\"b"')
    assert analysis.commands[0].forms == ('rm a"b',)
    assert [p.path for p in analysis.paths] == ['/p/w/a"b']


def test_brace_expansion_gives_every_path_and_a_huge_range_is_uncertain() -> None:
    assert [p.path for p in run("rm {a,b}x").paths] == ["/p/w/ax", "/p/w/bx"]
    assert [p.path for p in run("rm x{1..3}").paths] == ["/p/w/x1", "/p/w/x2", "/p/w/x3"]
    huge = run("rm {1..99999}")
    assert huge.paths == ()
    assert huge.uncertain


def test_a_wrapper_whose_command_is_only_known_at_run_time_is_uncertain() -> None:
    analysis = run("sudo $X rm a")
    assert analysis.unknown and analysis.uncertain
    assert analysis.uncertain_resource == "(uncertain) sudo $X rm a"


def test_assigning_a_variable_the_shell_expands_again_is_unknown() -> None:
    assert run("export PROMPT_COMMAND=x").unknown == (
        "PROMPT_COMMAND is expanded again later: PROMPT_COMMAND=x",
    )
