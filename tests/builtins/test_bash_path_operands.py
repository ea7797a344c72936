"""Which paths ``ln``, ``dd``, ``sed``, ``tar``, ``git`` and ``find`` touch, and which of them they write.

The bash tool asks ``external_directory`` for a path outside the project and ``edit`` for a write: an operand that is
missed here is a file touched without its question, so each option spelling that names a file is checked.
"""

from __future__ import annotations

import pytest

from tether.builtins._shell_parse import analyze


def touched(command: str) -> set[tuple[str, bool]]:
    """``(path relative to the cwd, written)`` for each path the command touches."""
    analysis = analyze(command, cwd="/p/w", home="/home/u")
    return {(p.path.replace("/p/w", ".", 1), p.write) for p in analysis.paths}


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("ln -t dir a b", {("./dir", True), ("./a", False), ("./b", False)}),
        ("ln -tdir a", {("./dir", True), ("./a", False)}),
        ("ln --target-directory=d a", {("./d", True), ("./a", False)}),
        ("ln -s ../t link", {("./link", True), ("./t", False), ("/p/t", False)}),
        ("ln -s target", {("./target", False)}),
        ("dd if=a of=b bs=1", {("./a", False), ("./b", True)}),
        ("sed --file=s.sed x", {("./s.sed", False), ("./x", False)}),
        ("tar --file=x.tar --create a", {("./x.tar", True), ("./a", False)}),
        ("tar -cfx.tar a", {("./x.tar", True), ("./a", False)}),
        ("tar czf a.tgz src", {("./a.tgz", True), ("./src", False)}),
        ("tar xf a.tar -C out", {("./a.tar", False), ("./out", True)}),
        ("tar --directory out -xf a.tar", {("./a.tar", False), ("./out", True)}),
        ("tar -T list -cf a.tar", {("./a.tar", True), ("./list", False)}),
        ("git --git-dir=.g status", {("./.g", True)}),
        ("git --work-tree w status", {("./w", True)}),
        ("git -C sub status", {("./sub", False)}),
        ("git --exec-path=/x status", {("/x", False)}),
        ("git -c k=v diff --no-index a b", {("./a", False), ("./b", False)}),
        ("git diff --no-index -- a b", {("./a", False), ("./b", False)}),
        ("git diff --output=o.txt", {("./o.txt", True)}),
        ("git diff --output o.txt", {("./o.txt", True)}),
        ("find . -fprint out.txt", {(".", False), ("./out.txt", True)}),
        ("find -L src -name x", {("./src", False)}),
    ],
)
def test_every_file_an_option_names_is_touched_and_writes_are_marked(
    command: str, paths: set[tuple[str, bool]]
) -> None:
    assert touched(command) == paths


def test_sed_in_place_writes_its_file_and_plain_sed_only_reads_it() -> None:
    assert ("./f", True) in touched("sed -i s/a/b/ f")
    assert ("./f", False) in touched("sed -n p f")


def test_an_operand_only_known_at_run_time_is_uncertain_not_skipped() -> None:
    for command in ("dd of=$X", "git diff --no-index $A b"):
        analysis = analyze(command, cwd="/p/w", home="/home/u")
        assert analysis.uncertain == (f"a path cannot be known before the command runs: {command}",)
