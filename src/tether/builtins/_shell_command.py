"""One simple command as the shell will run it: its normalized forms, its "always" patterns, the paths it touches.

Normalization: the command word's path is reduced to its base name (``/bin/rm`` → ``rm``; quotes and escapes are
already gone from the word's value, so ``\\rm`` and ``'rm'`` are ``rm``), and each transparent wrapper is stripped in
turn (``sudo nice rm x`` → ``nice rm x`` → ``rm x``; the option syntax is in :mod:`._shell_wrappers`). Then the
command's own effects: the shell text it runs (:mod:`._shell_inner`), the program text of other languages it runs
(:mod:`._shell_programs`), ``find -exec``/``-delete``, a glob as the command word, its path operands
(:mod:`._shell_paths`) and ``cd``-like moves (left to the walk, :mod:`._shell_walk`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ._shell_analysis import SimpleCommand, always_pattern
from ._shell_flow import Cwds, Flow, Walk
from ._shell_inner import inner_code
from ._shell_paths import PATH_COMMANDS, option_effects, path_operands
from ._shell_programs import program_text, runs_program
from ._shell_tree import clip
from ._shell_words import GLOB, Word, expand, expand_braces
from ._shell_wrappers import WRAPPERS, unwrap

if TYPE_CHECKING:
    from ._shell_programs import Program

__all__ = ["CWD_COMMANDS", "run"]

CWD_COMMANDS = frozenset({"cd", "chdir", "pushd", "popd"})
# Builtins that take variable names: a name with a subscript holding a substitution runs it (``read 'a[$(x)]'``).
_NAME_BUILTINS = frozenset(
    "declare typeset local export readonly unset read printf mapfile readarray test [ wait getopts let".split()
)


def _pattern(lead: list[str], words: Sequence[str]) -> str:
    """The "always" pattern of ``words`` (their arity prefix and `` *``), after ``lead`` (wrappers, assignments)."""
    pattern = always_pattern(words) or ""
    return " ".join([*(w for w in lead if w), pattern])


def _form(name: str, words: Iterable[Word]) -> str:
    return " ".join([name, *(w.value if w.value is not None else w.raw for w in words)])


def run(walker: Walk, words: list[Word], text: str, cwds: Cwds, *, lead: str = "") -> Flow | None:
    """Record one simple command given as words (a real one, or one run by ``find -exec``), then check it.

    ``lead`` is the source before the command name (``FOO=1``): the text's "always" pattern starts with it. Returns
    the directories after a ``cd``-like command, ``None`` when the command leaves them as they were.
    """
    tokens = tuple(w.raw for w in words)
    clipped = clip(text)
    if words[0].value is None:
        walker.unknown.append(f"the command name is only known at run time: {clipped}")
        walker.uncertain.append(f"the command name is only known at run time: {clipped}")
        walker.commands.append(SimpleCommand(text=text, tokens=tokens))
        return None
    command_word = words[0].value
    name = posixpath.basename(command_word) or command_word
    rest = words[1:]
    _glob_name(walker, words[0], rest, text, tokens)
    levels = [(name, rest)]
    offset = 1  # index in ``words`` of the first argument of the innermost command
    fed = False
    known = True
    while name in WRAPPERS:
        spec = WRAPPERS[name]
        index, unsure = unwrap(spec, [w.value for w in rest], 0)
        if unsure is not None:
            walker.unknown.append(f"{unsure}: {clipped}")
            walker.uncertain.append(f"{unsure}: {clipped}")
            known = False
            # Where the wrapped command starts is unknown: every later word may be it. Each guess is one more
            # form, so a deny or ask on the real one still applies (only ``*`` can allow the text anyway).
            for index, word in enumerate(rest):
                if word.value is not None and word.value and not word.value.startswith("-"):
                    guess = posixpath.basename(word.value) or word.value
                    levels.append((guess, rest[index + 1 :]))
            break
        if index is None:
            break
        if rest[index].value is None:
            walker.unknown.append(f"the wrapped command is only known at run time: {clipped}")
            walker.uncertain.append(f"the wrapped command is only known at run time: {clipped}")
            known = False
            break
        fed = fed or spec.stdin_operands
        _glob_name(walker, rest[index], rest[index + 1 :], text, tokens)
        value = command_word = rest[index].value or ""
        name = posixpath.basename(value) or value
        offset += index + 1
        rest = rest[index + 1 :]
        levels.append((name, rest))
    if name == "{" and known and rest:
        # ``time { rm x; }``, ``! { rm x; }``, ``coproc { rm x; }``: the parser reads the group's first command as
        # arguments of a command named ``{`` (and ``}`` as a command of its own). Its words are a command.
        walker.nested(" ".join(w.raw for w in rest), cwds, text)
    forms = [_form(n, r) for n, r in levels]
    save: tuple[str, ...] = ()
    code = inner_code(name, rest, clipped, unknown=walker.unknown, home=walker.home) if known else None
    if known and code is None:
        inner = len(rest) + 1
        patterns = [_pattern([lead, *tokens[: offset - 1]], tokens[offset - 1 :])]
        for level_name, level_rest in levels:
            level_words = [level_name, *(w.value if w.value is not None else w.raw for w in level_rest)]
            patterns.append(_pattern(level_words[: len(level_words) - inner], level_words[-inner:]))
        save = tuple(dict.fromkeys(patterns))
    elif known:
        save = tuple(dict.fromkeys([text, *forms]))  # ``bash -c '...'``: approved only by its exact text
    if name == "find":
        forms.extend(_find_actions(walker, rest, cwds))
    walker.commands.append(
        SimpleCommand(
            text=text,
            forms=tuple(f for f in dict.fromkeys(forms) if f != text),
            tokens=tokens,
            name=name,
            save=save,
            changes_directory=name in CWD_COMMANDS,
        )
    )
    if not known:
        return None
    if code is not None:
        walker.nested(code, cwds, text)
    if fed and (name in PATH_COMMANDS or name in CWD_COMMANDS):
        walker.uncertain.append(f"the operands of {name} come from xargs' input: {clipped}")
    if name in CWD_COMMANDS:
        return walker.change_directory(name, rest, cwds, source=text)
    if name in _NAME_BUILTINS and any(
        ("[" in w.raw and w.value is None)
        or (w.value is not None and "[" in w.value and ("$(" in w.value or "`" in w.value))
        for w in rest
    ):
        walker.unknown.append(f"a variable name with a subscript is evaluated: {clipped}")
    if name in PATH_COMMANDS:
        for operand in path_operands(name, [(w.path, w.glob) for w in rest]):
            if operand.value is None:
                walker.add_path(None, cwds, role="path", source=text, write=operand.write)
                continue
            for value, pattern in expand(operand.value, operand.glob):
                if not operand.matched:
                    pattern = None
                walker.add_path(value, cwds, role="path", source=text, write=operand.write, pattern=pattern)
    if "/" in command_word or runs_program(name):
        path = command_word if "/" in command_word else None
        program = program_text(name, [w.value for w in rest], clipped, path=path)
        if program is not None:
            _program(walker, program, cwds, text)
    for effect in option_effects(name, [w.value for w in rest]):
        if effect.kind == "follows":
            walker.uncertain.append(
                f"{name} {effect.option} follows symbolic links, which may lead outside the project: {clipped}"
            )
            continue
        walker.unknown.append(f"{name} {effect.option} runs another program: {clipped}")
        if effect.program:  # the program is a command of its own: a deny on it applies
            word = Word(raw=effect.program, value=effect.program, path=effect.program, glob=False)
            run(walker, [word], effect.program, cwds)
    return None


def _program(walker: Walk, program: Program, cwds: Cwds, text: str) -> None:
    """Record what a command's program text touches: what is not known, the files it names, the shell text it runs."""
    walker.unknown.extend(program.unknown)
    walker.uncertain.extend(program.uncertain)
    for path in program.reads:
        walker.add_path(path, cwds, role="path", source=text)
    for path in program.writes:
        walker.add_path(path, cwds, role="path", source=text, write=True)
    for code in program.commands:
        walker.nested(code, cwds, text)


def _glob_name(walker: Walk, word: Word, rest: list[Word], text: str, tokens: tuple[str, ...]) -> None:
    """A command word that is a glob (``/bin/r? x``, ``/bin/[r]m x``) names a program we cannot know: unknown,
    with the pattern kept for the caller, which adds a form per program it matches on the file system."""
    if not word.glob or word.value is None or word.value in ("[", "[[", "{", "}"):
        return
    clipped = clip(text)
    walker.unknown.append(f"the command name is a pattern the shell expands: {clipped}")
    walker.uncertain.append(f"the command name is a pattern the shell expands: {clipped}")
    alternatives = expand_braces(word.value) or [word.value]
    if len(alternatives) > 1:  # ``x{a,b}`` runs ``xa xb``: the first word is the command
        expanded = [Word(raw=a, value=a, path=a, glob=False) for a in alternatives[1:]]
        first = posixpath.basename(alternatives[0]) or alternatives[0]
        walker.commands.append(
            SimpleCommand(text=text, forms=(_form(first, [*expanded, *rest]),), tokens=tokens)
        )
    for alternative in alternatives:
        if any(ch in alternative for ch in GLOB):
            guess = posixpath.basename(alternative) or alternative
            walker.commands.append(
                SimpleCommand(
                    text=text,
                    forms=(_form(guess, rest),),
                    tokens=tokens,
                    name_pattern=(alternative, _form("", rest).strip()),
                )
            )


def _find_actions(walker: Walk, rest: list[Word], cwds: Cwds) -> list[str]:
    """The commands ``find`` runs (``-exec``, ``-execdir``, ``-ok``, ``-okdir``), and ``-delete`` as ``rm``."""
    extra: list[str] = []
    index = 0
    while index < len(rest):
        value = rest[index].value
        if value in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(rest) and rest[end].value not in (";", "+"):
                end += 1
            inner = rest[index + 1 : end]
            if inner:
                run(walker, list(inner), " ".join(w.raw for w in inner), cwds)
            index = end + 1
            continue
        if value == "-delete":
            starts: list[str] = []
            for word in rest:
                if word.value in ("-H", "-L", "-P"):
                    continue
                if word.value is not None and word.value.startswith(("-", "(", "!", ")")):
                    break
                starts.append(word.value or word.raw)
            extra.append(" ".join(["rm", "-rf", *(starts or ["."])]))
        index += 1
    return extra
