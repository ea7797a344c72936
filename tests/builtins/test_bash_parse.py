"""The bash tool's command analysis: simple commands, path arguments, cwd tracking, "always" patterns, fallback."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.builtins._shell_analysis import ARITY, Analysis, always_pattern, arity_prefix
from tether.builtins._shell_parse import analyze

CWD = "/p/w"
HOME = "/home/u"


def run(command: str, cwd: str = CWD) -> Analysis:
    return analyze(command, cwd=cwd, home=HOME)


def paths(command: str, cwd: str = CWD) -> set[tuple[str, str]]:
    return {(p.path, p.role) for p in run(command, cwd).paths}


# --- simple commands and resources -----------------------------------------------------------------------------------

RESOURCES = [
    ("ls -la", ("ls -la",), ("ls *",)),
    ("cat a.txt | grep x | wc -l", ("cat a.txt", "grep x", "wc -l"), ("cat *", "grep *", "wc *")),
    (
        'git add . && git commit -m "msg; not a separator" || echo failed; npm test',
        (
            "git add .",
            'git commit -m "msg; not a separator"',
            "git commit -m msg; not a separator",
            "echo failed",
            "npm test",
        ),
        ("git add *", "git commit *", "echo *", "npm test *"),
    ),
    ("(cd sub && make build)", ("make build",), ("make build *",)),
    (
        "echo $(git rev-parse HEAD)",
        ("git rev-parse HEAD", "echo $(git rev-parse HEAD)"),
        ("git rev-parse *", "echo *"),
    ),
    ("echo `date`", ("date", "echo `date`"), ("date *", "echo *")),
    ("x=$(ls src)", ("ls src",), ("ls *",)),
    ("if test -f a; then rm a; fi", ("test -f a", "rm a"), ("test *", "rm *")),
    ("for f in *.py; do black $f; done", ("black $f",), ("black *",)),
    ("f() { rm -rf build; }; f", ("rm -rf build", "f"), ("rm *", "f *")),
    # A statement with a redirection: its text, the command, and the redirection on its own.
    ("echo hi > out.txt", ("echo hi > out.txt", "echo hi", "> out.txt"), ("echo *", "> out.txt")),
    # The text and the normalized forms (assignments and wrappers stripped, quotes removed) are all resources.
    ("FOO=1 npm run dev", ("FOO=1 npm run dev", "npm run dev"), ("FOO=1 npm run dev *", "npm run dev *")),
    ("sudo rm -rf /opt/x", ("sudo rm -rf /opt/x", "rm -rf /opt/x"), ("sudo rm *", "rm *")),
    (
        "env A=1 git push origin",
        ("env A=1 git push origin", "git push origin"),
        ("env A=1 git push *", "git push *"),
    ),
    (r"\rm -rf x", (r"\rm -rf x", "rm -rf x"), (r"\rm *", "rm *")),
    ("/bin/r''m x", ("/bin/r''m x", "rm x"), ("/bin/r''m *", "rm *")),
    (
        "nice -n 5 command rm x",
        ("nice -n 5 command rm x", "command rm x", "rm x"),
        ("nice -n 5 command rm *", "command rm *", "rm *"),
    ),
    ("ls | xargs -0 rm", ("ls", "xargs -0 rm", "rm"), ("ls *", "xargs -0 rm *", "rm *")),
    ("find . -exec rm {} +", ("rm {}", "find . -exec rm {} +"), ("rm *", "find *")),
    ("find . -delete", ("find . -delete", "rm -rf ."), ("find *",)),
    (
        "bash -c 'rm x'",
        ("bash -c 'rm x'", "bash -c rm x", "rm x"),
        ("bash -c 'rm x'", "bash -c rm x", "rm *"),
    ),
    ("eval rm x", ("eval rm x", "rm x"), ("eval rm x", "rm *")),
    # No simple command, but not empty: the raw text is the resource (never an empty request for something that runs).
    ("cd ..", ("cd ..",), ("cd ..",)),
    ("x=1", ("x=1",), ("x=1",)),
    ("> important.py", ("> important.py",), ("> important.py",)),
    ("", (), ()),
    ("# just a comment", (), ()),
]


@pytest.mark.parametrize(("command", "resources", "save"), RESOURCES)
def test_one_resource_per_simple_command_with_prefix_patterns(
    command: str, resources: tuple[str, ...], save: tuple[str, ...]
) -> None:
    analysis = run(command)
    assert analysis.opaque is None
    assert analysis.resources == resources
    assert analysis.save == save


def test_quoted_operators_do_not_split_commands() -> None:
    analysis = run("echo 'a && b' \"c | d\" e\\;f")
    assert analysis.resources == ("echo 'a && b' \"c | d\" e\\;f", "echo a && b c | d e;f")


def test_heredoc_statement_is_one_resource_and_its_substitutions_are_commands() -> None:
    command = "cat <<EOF > /etc/motd\nhello $(whoami)\nEOF"
    analysis = run(command)
    assert analysis.resources == (command, "cat", "whoami", "> /etc/motd", "(uncertain) " + command)
    assert paths("cat <<EOF > /etc/motd\nhello $(whoami)\nEOF") == {("/etc/motd", "path")}


def test_quoted_heredoc_body_is_not_a_command() -> None:
    analysis = run("cat <<'EOF'\nrm -rf /\nEOF")
    assert analysis.resources == ("cat <<'EOF'\nrm -rf /\nEOF", "cat")
    assert analysis.unknown == ()
    assert analysis.paths == ()


# --- path arguments ------------------------------------------------------------------------------------------------

PATHS = [
    ("rm -rf build /tmp/x", {("/p/w/build", "path"), ("/tmp/x", "path")}),
    ("cp -r src/ ../backup", {("/p/w/src", "path"), ("/p/backup", "path")}),
    ("cp -- -weird /srv/b", {("/p/w/-weird", "path"), ("/srv/b", "path")}),
    ("chmod +x /usr/local/bin/tool", {("/usr/local/bin/tool", "path")}),
    ("mkdir -p /opt/app/logs", {("/opt/app/logs", "path")}),
    ("ln -s /etc/hosts link", {("/etc/hosts", "path"), ("/p/w/link", "path")}),
    ("touch a && mv a /var/tmp/", {("/p/w/a", "path"), ("/var/tmp", "path")}),
    (
        "rm \"my file\" 'other file' with\\ space",
        {("/p/w/my file", "path"), ("/p/w/other file", "path"), ("/p/w/with space", "path")},
    ),
    (
        'rm ~/x "$HOME/y" ${HOME}/z ~',
        {("/home/u/x", "path"), ("/home/u/y", "path"), ("/home/u/z", "path"), ("/home/u", "path")},
    ),
    # A written glob: its literal directory, and the whole pattern (asked as a protected write by the tool).
    ("rm /var/log/*.log", {("/var/log", "path"), ("/var/log/*.log", "path")}),
    ("rm *", {("/p/w", "path"), ("/p/w/*", "path")}),
    ("cp /etc/{passwd,group} .", {("/etc/passwd", "path"), ("/etc/group", "path"), ("/p/w", "path")}),
    ("rm $TARGET $(cat list) `x`", {("/p/w/list", "path")}),  # only the inner cat is static
    ("ls /etc", {("/etc", "path")}),
    ("echo /etc", set[tuple[str, str]]()),
    ("echo hi > /tmp/out 2>/dev/null", {("/tmp/out", "path")}),
    ("echo hi >> ../log.txt", {("/p/log.txt", "path")}),
    ("make &> /tmp/build.log", {("/tmp/build.log", "path")}),
    ("sort < /etc/passwd", {("/etc/passwd", "path")}),
    ("echo x 2>&1 >&2", set[tuple[str, str]]()),
    ("sudo rm /opt/x", {("/opt/x", "path")}),
    ("command cat /etc/shadow", {("/etc/shadow", "path")}),
    # Target directories and other option values of file commands.
    ("cp --target-directory=../out x", {("/p/out", "path"), ("/p/w/x", "path")}),
    ('mv --target-directory="../o d" x', {("/p/o d", "path"), ("/p/w/x", "path")}),
    ("cp -t ../out x", {("/p/out", "path"), ("/p/w/x", "path")}),
    # A symbolic link's relative target is resolved from the link's directory, as the kernel does.
    ("ln -sft../out x", {("/p/out", "path"), ("/p/out/x", "path")}),
    (
        "ln -s ../../etc/passwd sub/link",
        {("/p/w/sub/link", "path"), ("/p/etc/passwd", "path"), ("/p/w/etc/passwd", "path")},
    ),
    ("touch -r../ref x", {("/p/ref", "path"), ("/p/w/x", "path")}),
    ("chown --reference=/etc/passwd x", {("/etc/passwd", "path"), ("/p/w/x", "path")}),
    ("cp --target-directory=~/t x", {("/home/u/t", "path"), ("/p/w/x", "path")}),
    # Wrappers whose options take arguments: the option argument is not the wrapped command.
    ("nice -n 5 rm ../x", {("/p/x", "path")}),
    ("nice -5 rm ../x", {("/p/x", "path")}),
    ("sudo -u root rm ../x", {("/p/x", "path")}),
    ("sudo -u root -- rm ../x", {("/p/x", "path")}),
    ("timeout 5 rm ../x", {("/p/x", "path")}),
    ("timeout -s KILL -k 1 5s rm ../x", {("/p/x", "path")}),
    ("timeout --signal=TERM 5 rm ../x", {("/p/x", "path")}),
    ("env -u X A=1 rm ../x", {("/p/x", "path")}),
    ("stdbuf -o L cat ../x", {("/p/x", "path")}),
    ("nohup nice -n 1 sudo -u a rm ../x", {("/p/x", "path")}),
    ("rm {1..3}", {("/p/w/1", "path"), ("/p/w/2", "path"), ("/p/w/3", "path")}),
]


@pytest.mark.parametrize(("command", "expected"), PATHS)
def test_file_command_and_redirection_paths_are_resolved(
    command: str, expected: set[tuple[str, str]]
) -> None:
    assert paths(command) == expected


def test_cd_chain_moves_the_working_directory() -> None:
    assert paths("cd .. && cd .. && rm x", cwd="/a/b/c") == {
        ("/a/b", "directory"),
        ("/a", "directory"),
        ("/a/x", "path"),
    }


def test_cd_that_may_fail_keeps_the_old_directory_possible() -> None:
    # With ";" the rm runs even when the cd failed, so both places are checked.
    assert paths("cd /tmp; rm y") == {("/tmp", "directory"), ("/tmp/y", "path"), ("/p/w/y", "path")}
    assert paths("cd /tmp && rm y") == {("/tmp", "directory"), ("/tmp/y", "path")}
    assert paths("cd /a || cd /b; touch z") >= {("/a/z", "path"), ("/b/z", "path"), ("/p/w/z", "path")}


def test_cd_inside_a_subshell_or_pipeline_does_not_leak() -> None:
    assert paths("(cd /; rm a); rm b") == {
        ("/", "directory"),
        ("/a", "path"),
        ("/p/w/a", "path"),
        ("/p/w/b", "path"),
    }
    assert ("/p/w/b", "path") in paths("cd / | true; rm b")
    assert paths("x=$(cd /etc && cat passwd); rm y") == {
        ("/etc", "directory"),
        ("/etc/passwd", "path"),
        ("/p/w/y", "path"),
    }


def test_cd_home_and_tilde() -> None:
    assert paths("cd && rm x") == {("/home/u", "directory"), ("/home/u/x", "path")}
    assert paths("cd ~/proj && rm x") == {("/home/u/proj", "directory"), ("/home/u/proj/x", "path")}


def test_loop_with_cd_considers_every_iteration() -> None:
    found = paths("for i in 1 2 3; do cd ..; done; rm q", cwd="/a/b/c/d")
    assert {("/a/b/c/q", "path"), ("/a/b/q", "path"), ("/a/q", "path"), ("/a/b/c/d/q", "path")} <= found


def test_unknown_directory_after_dynamic_cd_skips_relative_but_keeps_absolute_paths() -> None:
    assert paths("cd $X && rm rel /abs") == {("/abs", "path")}


def test_trailing_redirect_on_a_list_considers_directories_the_list_moved_through() -> None:
    assert {("/p/w/out.txt", "path"), ("/tmp/out.txt", "path")} <= paths("cd /tmp && ls > out.txt")


def test_device_redirects_are_not_paths() -> None:
    assert paths("cmd > /dev/null 2> /dev/stderr < /dev/null") == set()


# --- unparseable input: ask for the raw text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["echo $(", "cat <<EOF\nunterminated", "if then fi", "echo 'open", "ls )", "for; do"],
)
def test_unparseable_command_is_an_uncertain_resource_and_saves_nothing(command: str) -> None:
    analysis = run(command)
    assert analysis.opaque == "syntax"
    assert analysis.resources[-1] == "(uncertain) " + command.strip()
    assert analysis.save == ()


@pytest.mark.parametrize(
    ("command", "inner"),
    [
        ('eval "rm -rf /"', "rm -rf /"),
        ("bash -c 'rm -rf /'", "rm -rf /"),
        ("sh -ec 'rm x'", "rm x"),
        ("sudo zsh -c 'rm y'", "rm y"),
        ("command eval rm z", "rm z"),
        ("bash -o errexit -c 'rm w' arg0", "rm w"),
        ("alias ls='rm v'", "rm v"),
        ("trap 'rm u' EXIT", "rm u"),
        ("find . -exec sh -c 'rm t' \\;", "rm t"),
    ],
)
def test_eval_and_shell_c_text_is_analysed_and_the_outer_text_saved_exactly(command: str, inner: str) -> None:
    analysis = run(command)
    assert command in analysis.resources
    assert inner in analysis.resources
    assert command in analysis.save or command.startswith(("find", "alias", "trap"))
    assert not any(p.startswith(("eval *", "bash *", "sh *", "zsh *", "sudo *")) for p in analysis.save)
    assert analysis.unknown == ()


def test_odd_input_never_raises() -> None:
    for command in ["\0", "\udcff", "\ud800", "é" * 10, "a" * 100_000, "$((1+", "<<<", "|", "&&"]:
        analysis = run(command)
        assert analysis.resources or analysis.opaque is None


# --- the "always" prefix table ---------------------------------------------------------------------------------------

ALWAYS = [
    ("git checkout main", "git checkout *"),
    ("git push origin main", "git push *"),
    ("git -C x status", "git -C *"),
    ("git config user.name x", "git config user.name *"),
    ("git stash pop", "git stash pop *"),
    ("npm run dev x", "npm run dev *"),
    ("npm install left-pad", "npm install *"),
    ("docker compose up svc", "docker compose up *"),
    ("docker ps -a", "docker ps *"),
    ("aws s3 cp a b", "aws s3 cp *"),
    ("gh pr create --fill", "gh pr create *"),
    ("kubectl rollout status deploy/x", "kubectl rollout status *"),
    ("cargo run --release", "cargo run --release *"),
    ("cargo build", "cargo build *"),
    ("python -m pytest", "python -m *"),
    ("pnpm dlx create-app x", "pnpm dlx create-app *"),
    ("terraform workspace select prod", "terraform workspace select *"),
    ("ls -la", "ls *"),
    ("rm -rf build", "rm *"),
    ("pytest -x", "pytest *"),
    ("git", "git *"),
    ("npm run", "npm run *"),
]


WRAPPED = {"pnpm dlx create-app x": ("create-app *",)}
"""A runner is a wrapper: "always" also saves the command it runs, as ``sudo rm x`` saves ``rm *``."""


@pytest.mark.parametrize(("command", "pattern"), ALWAYS)
def test_always_pattern_from_the_prefix_table(command: str, pattern: str) -> None:
    assert always_pattern(command.split()) == pattern
    assert run(command).save == (pattern, *WRAPPED.get(command, ()))


def test_prefix_table_matches_the_reference() -> None:
    assert len(ARITY) == 25 + 64 + 6 + 41
    assert {k for k, v in ARITY.items() if v == 3 and " " not in k} == {
        "aws",
        "az",
        "doctl",
        "gcloud",
        "gh",
        "sfdx",
    }
    assert arity_prefix([]) == ()
    assert always_pattern([]) is None


_VOCABULARY = [*sorted({word for key in ARITY for word in key.split()}), "x", "-C", "", "run", "dev"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_VOCABULARY), max_size=5))
def test_prefix_is_the_longest_matching_key_of_the_table(tokens: list[str]) -> None:
    # the reference's rule, spelled out: the longest prefix that is a key decides how many tokens (default 1)
    expected = tuple(tokens[:1])
    for size in range(len(tokens), 0, -1):
        arity = ARITY.get(" ".join(tokens[:size]))
        if arity is not None:
            expected = tuple(tokens[:arity])
            break
    assert arity_prefix(tokens) == expected


# --- uncertainty: what cannot be known statically is reported, never silently skipped -----------------------------

UNCERTAIN = [
    "X=../outside; cd $X && rm victim",  # relative path after a change to an unknown directory
    "cd $X; echo hi > out.txt",
    "cd - && rm y",
    "rm $TARGET",  # dynamic operand
    "echo hi > $OUT",  # dynamic redirect target
    "rm {"
    + ",".join(f"a{i}" for i in range(2000))
    + ",../outside/victim}",  # too many alternatives to enumerate
    "rm {1..100000}",
    "rm x{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}{s,t}{u,v}",
    "sudo --frobnicate rm ../x",  # unknown wrapper option: where the command starts is unknown
    "nice -q rm ../x",
    "env -C /elsewhere rm x",  # the wrapper moves the working directory
    "env --chdir=/elsewhere rm x",
    "sudo -D /elsewhere rm x",
    "find .. -name x | xargs rm",  # operands from stdin
    "xargs -n 1 -I{} cp {} /tmp",
    "$CMD ../x",  # the command itself is unknown
    "sudo $CMD ../x",
]


@pytest.mark.parametrize("command", UNCERTAIN)
def test_what_cannot_be_known_statically_is_uncertain(command: str) -> None:
    analysis = run(command)
    assert analysis.uncertain
    assert all(len(reason) < 250 for reason in analysis.uncertain)


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "cd sub && rm x",
        "cd /abs && rm x",
        "echo $X",
        "git push origin $BRANCH",
        "rm /tmp/{a,b}",
        "sudo -u root rm /x",
        "timeout 5 make --version",
        "xargs echo",
    ],
)
def test_statically_known_commands_are_certain(command: str) -> None:
    assert run(command).uncertain == ()


def test_unknown_cwd_keeps_absolute_paths_checked() -> None:
    analysis = run("cd $X && rm /etc/y")
    assert analysis.uncertain == ()
    assert {(p.path, p.role) for p in analysis.paths} == {("/etc/y", "path")}


def test_an_unknown_wrapper_option_guesses_every_later_word_as_the_command() -> None:
    # Only ``*`` allows the text (uncertain), and a deny on the real command still applies.
    assert "rm canary" in run("env -S 'rm canary'").resources
    assert "rm x" in run("nice -q rm x").resources


def test_uncertain_wrapper_saves_nothing_for_its_command() -> None:
    analysis = run("sudo --frobnicate rm ../x")
    assert analysis.save == ()
    assert analysis.resources[-1] == "(uncertain) sudo --frobnicate rm ../x"
    assert run("nice -n 5 rm ../x").save == ("nice -n 5 rm *", "rm *")


# --- path-taking commands: which arguments are paths, and which are written ----------------------------------------

WRITES = [
    ("tee -a /etc/x out.txt", {("/etc/x", True), ("/p/w/out.txt", True)}),
    ("dd if=/dev/sda of=../disk.img bs=1M", {("/dev/sda", False), ("/p/disk.img", True)}),
    ("sed -i.bak s/a/b/ f.txt", {("/p/w/s/a/b", True), ("/p/w/f.txt", True)}),
    ("sed -n p /etc/passwd", {("/p/w/p", False), ("/etc/passwd", False)}),
    ("truncate -s 0 log.txt", {("/p/w/0", True), ("/p/w/log.txt", True)}),
    (
        "install -m 755 tool /usr/local/bin/",
        {("/usr/local/bin", True), ("/p/w/tool", False), ("/p/w/755", False)},
    ),
    ("cp -t /srv a b", {("/srv", True), ("/p/w/a", False), ("/p/w/b", False)}),
    ("mv -t /srv a", {("/srv", True), ("/p/w/a", True)}),
    ("rsync -a src/ host:/x /backup/", {("/backup", True), ("/p/w/src", False)}),
    ("tar -xzf a.tgz -C /opt", {("/p/w/a.tgz", False), ("/opt", True)}),
    ("tar czf /tmp/out.tgz src", {("/tmp/out.tgz", True), ("/p/w/src", False)}),
    ("git -C /repo status", {("/repo", False)}),
    ("git --git-dir=/g --work-tree=/w checkout .", {("/g", True), ("/w", True)}),
    ("git diff --output=../d.patch", {("/p/d.patch", True)}),
    ("git diff --no-index /etc/passwd x", {("/etc/passwd", False), ("/p/w/x", False)}),
    ("find /etc -name x -fprint ../found", {("/etc", False), ("/p/found", True)}),
    ("find build -delete", {("/p/w/build", True)}),
    ("ls /etc > ../list.txt", {("/etc", False), ("/p/list.txt", True)}),
    ("cat < /etc/passwd", {("/etc/passwd", False)}),
    ("ls 2>>err.log", {("/p/w/err.log", True)}),
]


@pytest.mark.parametrize(("command", "expected"), WRITES)
def test_path_taking_commands_report_read_and_written_paths(
    command: str, expected: set[tuple[str, bool]]
) -> None:
    assert {(p.path, p.write) for p in run(command).paths} == expected


def test_the_analysis_never_reads_the_password_database() -> None:
    analysis = run("cat ~root/.ssh/id_rsa")
    assert analysis.paths == ()
    assert analysis.uncertain  # the path is asked as unknown instead


def test_three_hundred_nested_substitutions_are_uncertain_not_a_recursion_error() -> None:
    analysis = run("$(" * 300 + "ls" + ")" * 300)
    assert analysis.uncertain_resource is not None
    assert any("nested deeper" in reason for reason in analysis.unknown)
