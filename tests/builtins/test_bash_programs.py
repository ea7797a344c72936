"""Program text of other languages, as the bash analysis reads it (``_shell_programs``).

What an interpreter's program text, a makefile or a program file touches is only known when it runs: its paths are
uncertain (``external_directory`` is asked for the command's text, as for ``echo x > $OUT``), and text given inline
or on the input is an unknown command too. ``sed`` scripts and ``awk`` programs are read: their named files are paths,
what they run is unknown, and a plain filter is neither. What only prints (``--version``) is none of these.
``tests/builtins/test_bash_evasions.py`` runs the spellings that write outside through ``/bin/bash``.
"""

from __future__ import annotations

import pytest

from tether.builtins._shell_analysis import Analysis
from tether.builtins._shell_parse import analyze

CWD = "/p/w"


def run(command: str) -> Analysis:
    return analyze(command, cwd=CWD, home="/home/u")


def written(analysis: Analysis) -> set[str]:
    return {p.path for p in analysis.paths if p.write}


def read(analysis: Analysis) -> set[str]:
    return {p.path for p in analysis.paths if not p.write}


# (command, its paths are uncertain, what it runs is unknown)
PROGRAMS = [
    ("python3 -c 'x'", True, True),
    ("python3.12 -Ic 'x'", True, True),
    ("pypy3 -c x", True, True),
    ("python3 -W ignore x.py", True, False),
    ("python3 -Wignore -mpytest", True, False),
    ("python3 -m pytest -q", True, False),
    ("python3", True, True),
    ("python3 -", True, True),
    ("python3 -- x.py", True, False),
    ("python3-config --cflags", False, False),  # not an interpreter
    ("node -p 1+1", True, True),
    ("node --eval x", True, True),
    ("node x.js", True, False),
    ("nodejs", True, True),
    ("deno eval 'x'", True, True),
    ("deno run x.ts", True, False),
    ("bun -e x", True, True),
    ("bun run build", True, False),
    ("tsx x.ts", True, False),
    ("perl -ne 'print'", True, True),
    ("perl -i.bak -p x.pl", True, False),  # -i takes the rest: its "e"-less suffix is no inline option
    ("perl -Ie x.pl", True, False),
    ("perl -i -pe 's/a/b/' f", True, True),  # -i takes only what is attached
    ("perl -I lib -e 1", True, True),  # -I takes the next word
    ("ruby -I lib -e 1", True, True),
    ("python3 -W ignore -c 1", True, True),
    ("python3 -X dev x.py", True, False),
    ("ruby -ne 'x'", True, True),
    ("ruby x.rb", True, False),
    ("php -r 'x'", True, True),
    ("php x.php", True, False),
    ("lua -e x", True, True),
    ("Rscript -e 'x'", True, True),
    ("julia --eval x", True, True),
    ("osascript -e x", True, True),
    ("make", True, False),
    ("make -n", True, False),
    ("gmake -C sub all", True, False),
    ("source ./env.sh", True, True),
    (". env.sh", True, True),
    ("source $F", True, True),
    ("./build.sh", True, False),
    ("scripts/deploy --dry-run", True, False),
    ("/opt/tool/bin/run", True, False),
    ("./x.py -c 'y'", True, False),  # a file run by its path: its own options are its own
    ("sudo ./build.sh", True, False),
    (".venv/bin/python3 -c x", True, True),
    ("python3 $SCRIPT", True, True),  # it may be -c
    ("python3 -- -", True, True),
    ("python3 -- x.py", True, False),
    ("node --inspect x.js", True, False),
    ("bash build.sh", True, True),
    ("uv run python -c x", True, True),
    ("uv run --with requests python x.py", True, False),
    ("poetry run make test", True, False),
    ("npx node -e x", True, True),
    ("npm exec -- node x.js", True, False),
    ("pnpm dlx tsx x.ts", True, False),
    ("uv run ./build.sh", True, False),
    ("yarn exec $TOOL", True, True),
    ("sh", True, True),
    ("awk -f prog.awk data", True, True),
    ("awk --file=prog.awk data", True, True),
    ("gawk -i lib.awk '{print}'", True, True),
    ("gawk -l ext '{print}'", True, True),
    ("gawk -E prog.awk", True, True),
    ("mawk -W exec prog.awk", True, True),
    ("awk $PROG data", True, True),
    ("awk 'BEGIN { print 1 > \"o\" }'", True, False),
    ("awk '{ print $1 >> \"o\" }' data", True, False),
    ('awk \'{ printf("%s", $1) > "o" }\' data', True, False),
    ("awk '{ getline line < \"/etc/passwd\" }' data", True, False),
    ("awk 'BEGIN { system(\"ls\") }'", True, True),
    ("awk '{ print | \"sort\" }' data", True, True),
    ("awk 'BEGIN { \"date\" | getline d }'", True, True),
    ("gawk '@include \"x\"'", True, True),
    ('gawk \'BEGIN { f = "system"; @f("ls") }\'', True, True),
    ("gawk -d '{print}' data", True, False),
    ("gawk --profile=out '{print}' data", True, False),
    ("awk '/unterminated' data", True, True),
    ("sed -f script.sed data", True, True),
    ("sed --file script.sed data", True, True),
    ("sed $S data", True, True),
    ('sed -e "$S" data', True, True),
    ("sed 's/a/b/e' data", True, True),
    ("sed -n 'e' data", True, True),
    ("sed 's/a/b/3g;  s/c/d/' data", False, False),
    ("sed 's/a' data", True, False),  # not read to its end
    ("sed 'k' data", True, False),
    ("sed '/a' data", True, False),
    ("sed -n '$' data", True, False),
    ("sed 'y/ab' data", True, False),
    ("sed 's\nx' data", True, False),
    ("sed 's\\a\\b\\' data", True, False),
    ("sed '\\' data", True, False),
    ("sed '1,/x' data", True, False),
    ("sed '/a\nb/p' data", True, False),
    ("awk '/a\nb/' data", True, True),
    ("awk '/[/]/' data", True, True),  # a bracket holding the slash: awks differ, not followed
    # after a condition a statement starts: /a#/ is a regex (gawk), not a division and a comment hiding system()
    ("awk 'BEGIN { if (x) /a#/ ; system(\"touch o\") }'", True, True),
    (
        "awk 'BEGIN { x++ / 1; system(\"touch o\"); y = 1 / 2 }'",
        True,
        True,
    ),  # gawk divides, mawk reads a regex
    ("awk '/[\\\\/]/' data", True, True),
    ("sed 's/[/]/x/w /tmp/out' data", True, False),  # GNU reads [/] as a bracket: not followed, uncertain
    ("sed 's/[\\\\]/x/' data", True, False),
    ("sed 's/[abc/x/' data", True, False),
    ("sed 's/[[:alpha/x/' data", True, False),
    ("sed '/[a\nb]/p' data", True, False),
]


@pytest.mark.parametrize(("command", "uncertain", "unknown"), PROGRAMS)
def test_program_text_makes_paths_uncertain_and_inline_text_unknown(
    command: str, uncertain: bool, unknown: bool
) -> None:
    analysis = run(command)
    assert bool(analysis.uncertain) == uncertain, analysis.uncertain
    assert bool(analysis.unknown) == unknown, analysis.unknown
    assert (analysis.uncertain_resource is not None) == unknown


ONLY_PRINTS = [
    "python3 --version",
    "python3 -VV",
    "python -h",
    "node -v",
    "deno --version",
    "bun --revision",
    "perl -V",
    "ruby --version",
    "php -m",
    "lua -v",
    "julia --version",
    "make --version",
    "gmake -h",
    "bash --version",
    "sh --help",
    "command -v python3",
    "command -V make",
    "/usr/bin/git status",
    "/bin/../bin/ls",
    "awk --version",
    "awk -S 'BEGIN { system(\"ls\") }'",
    "gawk --sandbox '{ print > \"o\" }'",
    "sed --sandbox 'w o' data",
    "awk '{ print $1 }' data",
    "awk -F: -v n=1 '$2 > n { print ($1 > $2) }' data",
    "awk -Ft -vn=1 -- '{ n += $1 } END { print n }' data",
    "awk --field-separator , --assign n=1 '{ x = a / 2 / 3; print x }' data",
    "awk '/a|b/ { n++ } # a | comment\n END { print n \"|\" }' data",
    "awk '$1 ~ /[.|]/ || $2 == \"x\" { print }' data",
    "awk --source '{print}' data",
    "awk -e '{print}' data",
    "awk -e'{print}' -b data",
    "mawk -W version",
    "awk -Z '{print}' data",
    "awk",
    "sed -n '/start/,/end/p' data",
    "sed -e 's/a/b/' -e 's/c/d/g' data",
    "sed --expression='s/a/b/' --expression s/c/d/ data",
    "sed -ne 's/a/b/p' data",
    "sed -E -s -z -u -l 80 's/a/b/' data",
    "sed --line-length 80 --posix 's/a/b/' data",
    "sed -i.bak 's/a/b/' data",
    "sed '0~3d; 2,+4d; 5,~2d; $!N; /x/I,/y/M{p;d}; \\%a%d' data",
    "sed -e ':a' -e 'N;$!ba' -e 's/\\n/ /g' data",
    "sed 'b end; p; :end' data",
    "sed 't; T x; v 4.2; q5; Q; l 20; =' data",
    "sed '/x/a\\\nappended text; w not-a-file' data",
    "sed 'a text; w not-a-file' data",
    "sed '1i\\\nline one\\\nline two' data",
    "sed 'y/abc/xyz/' data",
    "sed 's/[a-z]/x/; /[]x]/d; s/[[:alpha:]]/y/; s/[^]a]/z/' data",
    "sed 'y/[/x/' data",
    "awk '/[a-z]+|x/ { print }' data",
    "awk '/[[:alpha:]]/ && /[]x]/ { print }' data",
    "awk '{ ++i; n++ } END { print n / 2, f(1) / 2 }' data",
    "awk '{ while (x) /re/ }' data",
    "awk 'BEGIN { x = 1) }'",
    "sed 's/a/\\/b/; # comment w not-a-file' data",
    "sed 'w /dev/stdout' data",
    "sed 'w' data",
    "sed '1a x\n2p' data",
    "awk '$0 ~ /a\\/b/ { print }' data",
    "sed 's/x/y/w /dev/stderr' data",
    "sed",
    "sed -- 's/a/b/' data",
    "uv run pytest -q",  # a program by its name, as pytest alone
    "uv pip install x",
    "npx tsc --noEmit",
    "npm test",
    "npx",
]


@pytest.mark.parametrize("command", ONLY_PRINTS)
def test_what_only_prints_or_filters_is_certain(command: str) -> None:
    analysis = run(command)
    assert analysis.uncertain == () and analysis.unknown == (), (analysis.uncertain, analysis.unknown)


def test_awks_input_files_are_read_paths_and_its_program_and_assignments_are_not() -> None:
    # ``awk 1 /elsewhere/secret`` read outside the project unasked while ``cat`` and ``sed -n p`` asked
    analysis = run("awk -F: '/a/ {print $1}' /etc/passwd data FS=, -")
    assert read(analysis) == {"/etc/passwd", f"{CWD}/data"} and analysis.uncertain == ()
    assert read(run("awk -f prog.awk /etc/hosts")) >= {"/etc/hosts"}  # every operand is input after -f
    assert read(run("awk -e '{print}' /etc/hosts")) == {"/etc/hosts"}
    assert read(run("awk --sandbox '{print}' /etc/hosts")) == {"/etc/hosts"}
    assert run("awk '{print}' $F").uncertain != ()
    assert read(run("awk 'BEGIN { print 1 }'")) == set()


def test_sed_files_are_paths_like_any_operand_and_its_e_command_is_a_command() -> None:
    analysis = run("sed -n -e '/x/w out.txt' -e 's/a/b/w /tmp/o' -e '1r /etc/hosts' -e 'R in.txt' data")
    assert written(analysis) >= {f"{CWD}/out.txt", "/tmp/o"}
    assert read(analysis) >= {"/etc/hosts", f"{CWD}/in.txt", f"{CWD}/data"}
    executed = run("sed '1e rm -rf build' data")
    assert "rm -rf build" in [c.text for c in executed.commands]
    assert f"{CWD}/build" in written(executed)
    assert executed.unknown == ()


def test_long_options_are_read_by_any_unambiguous_prefix_as_getopt_reads_them() -> None:
    # ``--expr`` is ``--expression``: the script is the option's, and ``'s/a/b/'`` a file to read
    assert "/etc/x" in written(run("sed --expr='w /etc/x' 's/a/b/' data"))
    assert run("sed --fi s.sed data").unknown
    assert written(run("sed --sand 's/a/b/w x' data")) == set()
    assert run("gawk --so='BEGIN { system(\"ls\") }' '{ print }' data").unknown
    assert not run("gawk --sa '{ print > \"o\" }' data").uncertain


def test_a_wrapper_that_only_looks_a_command_up_runs_nothing() -> None:
    assert [c.forms for c in run("command -v rm").commands] == [()]
    assert "rm x" in run("command -p rm x").commands[0].forms
