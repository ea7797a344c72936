"""Which arguments of a command are paths, and whether the command writes them (for :mod:`._shell_command`).

Word level only: the caller hands over the words after the command name (quotes removed, ``None`` for a word only
known at run time) and gets back :class:`Operand` values to expand and resolve. Over-reporting is harmless (a value
that is not a path resolves inside the project and, at worst, asks ``edit`` where ``edit`` is allowed);
under-reporting is not. Writes matter because a write inside the project is asked as ``edit`` (so an agent that may
not edit cannot write through the shell either) and a write to a protected path is always asked.

Covered: file commands that read (``cat head tail wc grep rg ls find ...``) or write (``rm mkdir touch chmod tee
truncate mv ...``) their operands; ``cp``/``install``/``rsync`` (the last operand or ``-t DIR`` is written, the rest
read); ``ln`` (a relative target is resolved from the link's directory); ``dd`` (``if=``, ``of=``); ``sed`` (``-i``
writes); ``tar`` (``-f``, ``-C``); ``git`` (``-C``, ``--git-dir``, ``--work-tree``, ``--output``, ``--no-index``);
``find`` (start paths, ``-fprint``/``-fls`` files, ``-delete``); ``uniq``, ``sort -o``, ``split``, ``patch``, ``zip``,
``ed``, ``curl -o``, ``wget -O``; git's writing subcommands (``config``, ``archive -o``, ``clone``, ...). Also
:func:`option_effects`: options that run a program (``rg --pre``) or follow symlinks (``grep -R``). Not covered: files a program's own language writes
(``sed 's/x/y/w FILE'``, ``awk '{print > "f"}'``, ``python -c``); such commands are asked by name, and a person who
allows them allows what they do.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

from .._record import record

__all__ = ["PATH_COMMANDS", "Operand", "OptionEffect", "option_effects", "path_operands"]


@record
class Operand:
    """A value naming a path, relative to the working directory (before brace expansion and glob cutting)."""

    value: str | None
    """``None`` when the word is only known at run time."""
    glob: bool = False
    """The value holds unquoted glob or brace characters."""
    write: bool = False
    matched: bool = True
    """A glob in the value is matched against file names. Not for an option's value (``--include=*.py``): the
    shell matches the whole word, which names no file unless one starts with ``--include=``."""


@record
class _Spec:
    write: bool = False
    attached: str = ""
    """Short options whose attached value (``-tDIR``) is a path."""
    target: bool = False
    """The last operand (or ``-t DIR``) is written and the others are read (``cp``, ``install``, ``rsync``)."""


_READ = _Spec()
_WRITE = _Spec(write=True)

_SPECS: dict[str, _Spec] = {
    **dict.fromkeys(
        "cat head tail wc grep egrep fgrep rg ls stat du file less more diff cmp nl od xxd hexdump strings "
        "md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum realpath readlink source . bat "
        "tac rev base64 base32 fold fmt expand unexpand shuf pr look zcat bzcat xzcat zstdcat zless zmore".split(),
        _READ,
    ),
    **dict.fromkeys("rm rmdir unlink shred chmod chown chgrp tee ed ex".split(), _WRITE),
    "mkdir": _Spec(write=True, attached="m"),
    "touch": _Spec(write=True, attached="rdt"),
    "truncate": _Spec(write=True, attached="rs"),
    "mv": _Spec(write=True, attached="tS"),
    "cp": _Spec(target=True, attached="tS"),
    "install": _Spec(target=True, attached="tSm"),
    "rsync": _Spec(target=True),
}

PATH_COMMANDS = frozenset(
    {
        *_SPECS,
        "ln",
        "dd",
        "sed",
        "tar",
        "git",
        "find",
        "uniq",
        "sort",
        "split",
        "csplit",
        "patch",
        "zip",
        "curl",
        "wget",
    }
)
"""Commands whose path arguments are checked (besides the working-directory changers ``cd pushd popd chdir``)."""


class _Word:
    """One argument: its value (quotes removed, ``~`` expanded) and whether it holds unquoted glob characters."""

    __slots__ = ("glob", "value")

    def __init__(self, value: str | None, glob: bool) -> None:
        self.value = value
        self.glob = glob


Words = Sequence[tuple[str | None, bool]]
"""``(value, has_unquoted_glob)`` per argument; ``value`` is ``None`` when only known at run time."""


def path_operands(name: str, words: Words) -> Iterator[Operand]:
    """The path operands of command ``name`` (a normalized command name) given its argument ``words``."""
    args = [_Word(v, g) for v, g in words]
    special = _SPECIAL.get(name)
    if special is not None:
        yield from special(args)
        return
    spec = _SPECS.get(name)
    if spec is not None:
        yield from _generic(name, spec, args)


def _op(word: _Word, write: bool, value: str | None = None) -> Operand:
    return Operand(value=word.value if value is None else value, glob=word.glob, write=write)


def _generic(name: str, spec: _Spec, args: list[_Word]) -> Iterator[Operand]:
    operands: list[_Word] = []
    target: _Word | None = None
    operands_only = False
    take_target = False
    for word in args:
        value = word.value
        if value is None:
            operands.append(word)
            continue
        if take_target:
            target, take_target = word, False
            continue
        if not operands_only:
            if value == "--":
                operands_only = True
                continue
            if value.startswith("--"):
                option, eq, rest = value.partition("=")
                if eq:
                    write = spec.write or (spec.target and option == "--target-directory")
                    yield Operand(value=rest, glob=word.glob, write=write, matched=False)
                continue
            if (value.startswith("-") and len(value) > 1) or (name == "chmod" and value.startswith("+")):
                if spec.target and value == "-t":
                    take_target = True
                    continue
                for position, ch in enumerate(value[1:-1], 1):
                    if ch in spec.attached:
                        yield _op(word, spec.write or (spec.target and ch == "t"), value[position + 1 :])
                        break
                continue
        operands.append(word)
    if spec.target and target is None and operands:
        target = operands.pop()
    if target is not None:
        yield _op(target, True)
    for word in operands:
        if name == "rsync" and word.value is not None and _remote(word.value):
            continue
        yield _op(word, spec.write)


def _remote(value: str) -> bool:
    head, colon, _ = value.partition(":")
    return bool(colon) and "/" not in head


def _options_and_operands(args: list[_Word]) -> tuple[list[_Word], list[_Word]]:
    options: list[_Word] = []
    operands: list[_Word] = []
    only = False
    for word in args:
        value = word.value
        if not only and value == "--":
            only = True
        elif not only and value is not None and value.startswith("-") and len(value) > 1:
            options.append(word)
        else:
            operands.append(word)
    return options, operands


def _ln(args: list[_Word]) -> Iterator[Operand]:
    options, operands = _options_and_operands(args)
    symbolic = any(
        w.value is not None and (w.value == "--symbolic" or (not w.value.startswith("--") and "s" in w.value))
        for w in options
    )
    directory: str | None = None
    separated = False
    for word in options:
        value = word.value or ""
        if value.startswith("--target-directory="):
            directory = value.partition("=")[2]
        elif not value.startswith("--") and "t" in value:
            rest = value[value.index("t") + 1 :]
            directory, separated = (rest, False) if rest else (directory, True)
    if directory is None and separated:
        directory = operands.pop(0).value if operands else None
    if directory is not None:
        yield Operand(value=directory, write=True)
        targets, bases = operands, [directory]
    elif len(operands) >= 2:
        link = operands[-1]
        yield _op(link, True)
        targets = operands[:-1]
        # The link may be a new name (its directory holds the link) or an existing directory (the link goes inside).
        bases = [] if link.value is None else [posixpath.dirname(link.value), link.value]
    else:
        targets, bases = operands, ["."]
    for word in targets:
        value = word.value
        if not symbolic or value is None or value.startswith("/"):
            yield _op(word, False)
            continue
        for base in bases or ["."]:
            yield _op(word, False, posixpath.join(base, value) if base else value)


def _dd(args: list[_Word]) -> Iterator[Operand]:
    for word in args:
        value = word.value
        if value is None:
            yield _op(word, True)
        elif value.startswith(("if=", "of=")):
            yield _op(word, value.startswith("of="), value[3:])


def _sed(args: list[_Word]) -> Iterator[Operand]:
    options, operands = _options_and_operands(args)
    in_place = any(
        w.value is not None
        and (
            w.value.startswith("--in-place")
            or (not w.value.startswith("--") and "i" in w.value.split("=")[0])
        )
        for w in options
    )
    for word in options:
        value = word.value or ""
        if value.startswith("--file="):
            yield _op(word, False, value.partition("=")[2])
    for word in operands:
        yield _op(word, in_place)


_TAR_ARG = "fCTXgKLNVbH"


def _tar(args: list[_Word]) -> Iterator[Operand]:
    pending: list[str] = []
    found: dict[str, list[_Word]] = {}
    mode = ""
    operands: list[_Word] = []
    for index, word in enumerate(args):
        value = word.value
        if pending:
            found.setdefault(pending.pop(0), []).append(word)
            continue
        if value is None:
            operands.append(word)
            continue
        if value.startswith("--"):
            option, eq, rest = value.partition("=")
            long_mode = {"--create": "c", "--append": "r", "--update": "u", "--extract": "x", "--get": "x"}
            mode += long_mode.get(option, "")
            if option in ("--file", "--directory"):
                key = "f" if option == "--file" else "C"
                if eq:
                    found.setdefault(key, []).append(_Word(rest, word.glob))
                else:
                    pending.append(key)
            continue
        if value.startswith("-") or index == 0:
            letters = value[1:] if value.startswith("-") else value
            for position, ch in enumerate(letters):
                if ch in "crtuxA":
                    mode += ch
                if ch in _TAR_ARG:
                    rest = letters[position + 1 :]
                    if value.startswith("-") and rest:
                        found.setdefault(ch, []).append(_Word(rest, word.glob))
                        break
                    pending.append(ch)
            continue
        operands.append(word)
    writes_archive = any(ch in mode for ch in "cruA")
    extracts = "x" in mode
    for word in found.get("f", []):
        yield _op(word, writes_archive)
    for word in found.get("C", []):
        yield _op(word, extracts)
    for key in "TX":
        for word in found.get(key, []):
            yield _op(word, False)
    for word in operands:
        yield _op(word, extracts)


_GIT_GLOBAL_ARG = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}
)


def _git(args: list[_Word]) -> Iterator[Operand]:
    index = 0
    while index < len(args):
        word = args[index]
        value = word.value
        if value is None or not value.startswith("-"):
            break
        option, eq, rest = value.partition("=")
        if option in ("--git-dir", "--work-tree", "--exec-path"):
            if eq:
                yield _op(word, option != "--exec-path", rest)
            elif index + 1 < len(args):
                yield _op(args[index + 1], option != "--exec-path")
                index += 1
        elif option == "-C" and index + 1 < len(args):
            yield _op(args[index + 1], False)
            index += 1
        elif option in _GIT_GLOBAL_ARG and not eq:
            index += 1
        index += 1
    rest_args = args[index + 1 :]
    subcommand = args[index].value if index < len(args) else None
    yield from _git_subcommand(subcommand, rest_args)
    no_index = any(w.value == "--no-index" for w in rest_args)
    operands_only = False
    take_output = False
    for word in rest_args:
        value = word.value
        if take_output:
            yield _op(word, True)
            take_output = False
            continue
        if value is None:
            if no_index:
                yield _op(word, False)
            continue
        if not operands_only and value == "--":
            operands_only = True
            continue
        if not operands_only and value.startswith("--output"):
            option, eq, out = value.partition("=")
            if option == "--output":
                if eq:
                    yield _op(word, True, out)
                else:
                    take_output = True
            continue
        if not operands_only and value.startswith("-"):
            continue
        if no_index:
            yield _op(word, False)


_GIT_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool"}
)
_GIT_CONFIG_READ_VERBS = frozenset({"get", "list"})


def _git_subcommand(subcommand: str | None, args: list[_Word]) -> Iterator[Operand]:
    """The paths a git subcommand writes besides ``--output``: ``config`` (the repository's ``.git/config`` unless
    only reading), ``archive -o``, ``format-patch -o``, ``bundle create``, the directory of ``clone``, ``init``,
    ``worktree add`` and ``--separate-git-dir``."""
    values = [w.value for w in args]
    operands = [w for w in args if w.value is None or not w.value.startswith("-")]
    for position, word in enumerate(args):
        value = word.value or ""
        if value == "--separate-git-dir" and position + 1 < len(args):
            yield _op(args[position + 1], True)
        elif value.startswith("--separate-git-dir="):
            yield _op(word, True, value.partition("=")[2])
        elif value == "-o" and subcommand in ("archive", "format-patch") and position + 1 < len(args):
            yield _op(args[position + 1], True)
        elif value.startswith("-o") and len(value) > 2 and subcommand in ("archive", "format-patch"):
            yield _op(word, True, value[2:])
        elif value == "--output-directory" and position + 1 < len(args):
            yield _op(args[position + 1], True)
        elif value.startswith("--output-directory="):
            yield _op(word, True, value.partition("=")[2])
    if subcommand == "config":
        if any(v in _GIT_CONFIG_READS for v in values) or (
            operands and operands[0].value in _GIT_CONFIG_READ_VERBS
        ):
            return
        for position, word in enumerate(args):
            if word.value in ("-f", "--file") and position + 1 < len(args):
                yield _op(args[position + 1], True)
                return
            if word.value is not None and word.value.startswith("--file="):
                yield _op(word, True, word.value.partition("=")[2])
                return
        if any(v in ("--global", "--system") for v in values):
            yield Operand(
                value=None, write=True
            )  # the user's or the system's config: outside, not known here
            return
        yield Operand(value=".git/config", write=True)
    elif subcommand in ("clone", "init") and operands:
        yield _op(operands[-1], True)
    elif subcommand == "worktree" and len(operands) >= 2 and operands[0].value == "add":
        yield _op(operands[1], True)
    elif subcommand == "bundle" and len(operands) >= 2 and operands[0].value == "create":
        yield _op(operands[1], True)


_FIND_START_END = ("-", "(", "!", ")")
_FIND_FILE_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})


def _find(args: list[_Word]) -> Iterator[Operand]:
    starts: list[_Word] = []
    index = 0
    # Leading options (-H -L -P -D debug -Olevel) come before the start paths.
    while index < len(args) and (args[index].value or "") in ("-H", "-L", "-P"):
        index += 1
    while index < len(args):
        value = args[index].value
        if value is not None and value.startswith(_FIND_START_END):
            break
        starts.append(args[index])
        index += 1
    expression = args[index:]
    deletes = any(w.value == "-delete" for w in expression)
    for position, word in enumerate(expression):
        if word.value in _FIND_FILE_WRITES and position + 1 < len(expression):
            yield _op(expression[position + 1], True)
    for word in starts or [_Word(".", False)]:
        yield _op(word, deletes)


def _valued(args: list[_Word], short: str, long: tuple[str, ...]) -> tuple[list[_Word], list[_Word]]:
    """Split ``args`` into the values of the given options (``-oF``, ``-o F``, ``--output=F``, ``--output F``) and
    the operands; other options are skipped (their values, if any, count as operands: over-reported, harmless)."""
    values: list[_Word] = []
    operands: list[_Word] = []
    index = 0
    only = False
    while index < len(args):
        word = args[index]
        value = word.value
        index += 1
        if value is None or only or not value.startswith("-") or value == "-":
            operands.append(word)
            continue
        if value == "--":
            only = True
            continue
        option, eq, rest = value.partition("=")
        if value.startswith("--"):
            # GNU getopt takes any unambiguous prefix (``sort --out=F``): match prefixes, over-reporting is harmless.
            if len(option) > 3 and any(name.startswith(option) for name in long):
                if eq:
                    values.append(_Word(rest, word.glob))
                elif index < len(args):
                    values.append(args[index])
                    index += 1
            continue
        for position, ch in enumerate(value[1:], 1):
            if ch in short:
                if position + 1 < len(value):
                    values.append(_Word(value[position + 1 :], word.glob))
                elif index < len(args):
                    values.append(args[index])
                    index += 1
                break
    return values, operands


def _uniq(args: list[_Word]) -> Iterator[Operand]:
    _, operands = _valued(args, "fsw", ())
    for position, word in enumerate(operands[:2]):
        yield _op(word, position == 1)


def _sort(args: list[_Word]) -> Iterator[Operand]:
    outputs, operands = _valued(args, "o", ("--output",))
    files, _ = _valued(args, "", ("--files0-from", "--temporary-directory"))
    for word in outputs:
        yield _op(word, True)
    for word in (*files, *operands):
        yield _op(word, False)


def _split(args: list[_Word]) -> Iterator[Operand]:
    _, operands = _valued(args, "abClnt", ())
    for position, word in enumerate(operands[:2]):
        yield _op(word, position == 1)  # the prefix of the pieces
    if len(operands) < 2:
        yield Operand(value="x", write=True)  # the default prefix, in the working directory


def _downloader(
    short: str, long: tuple[str, ...], remote_name: bool
) -> Callable[[list[_Word]], Iterator[Operand]]:
    """``curl -o F``/``--output``, ``wget -O F``/``-o LOG``/``-P DIR``: the written files. ``curl -O`` writes a name
    taken from the URL into the working directory (asked as a write there)."""

    def operands(args: list[_Word]) -> Iterator[Operand]:
        outputs, _ = _valued(args, short, long)
        for word in outputs:
            yield _op(word, True)
        if remote_name and any(
            w.value is not None
            and (
                w.value in ("--remote-name", "--remote-name-all")
                or (w.value.startswith("-") and not w.value.startswith("--") and "O" in w.value)
            )
            for w in args
        ):
            yield Operand(value=".", write=True)

    return operands


def _patch(args: list[_Word]) -> Iterator[Operand]:
    outputs, operands = _valued(args, "oidrBp", ("--output", "--input", "--directory", "--reject-file"))
    for word in outputs:
        yield _op(word, True)
    for word in operands:
        yield _op(word, True)
    # The files a patch changes are named inside it: not known here.
    yield Operand(value=None, write=True)


def _first_written(args: list[_Word]) -> Iterator[Operand]:
    _, operands = _valued(args, "bnPtx", ())
    for position, word in enumerate(operands):
        yield _op(word, position == 0)


_SPECIAL: dict[str, Callable[[list[_Word]], Iterator[Operand]]] = {
    "ln": _ln,
    "dd": _dd,
    "sed": _sed,
    "tar": _tar,
    "git": _git,
    "find": _find,
    "uniq": _uniq,
    "sort": _sort,
    "split": _split,
    "csplit": _split,
    "patch": _patch,
    "zip": _first_written,
    "curl": _downloader("o", ("--output",), remote_name=True),
    "wget": _downloader(
        "OoP", ("--output-document", "--output-file", "--directory-prefix"), remote_name=False
    ),
}


# --- options that run programs or follow symbolic links ------------------------------------------------------------


@record
class OptionEffect:
    """What an option of a read-only-looking command does besides reading its operands.

    ``runs``: the option runs a program (``rg --pre=PROG``, ``sort --compress-program=PROG``); ``program`` is its
    value when given (``None`` for programs the command picks itself, ``rg -z``'s decompressors, or a dynamic word).
    ``follows``: the command follows symbolic links it meets while recursing (``grep -R``, ``rg -L``, ``find -L``),
    so it may read anywhere a committed symlink points.
    """

    kind: Literal["runs", "follows"]
    option: str
    program: str | None = None


@record
class _OptionTable:
    short_values: str
    """Short options that take a value: the rest of a cluster after one of them is that value."""
    runs: frozenset[str] = frozenset()
    """Long options (and ``-x`` short ones) whose value is a program to run."""
    runs_itself: frozenset[str] = frozenset()
    """Options that make the command run programs of its own choosing (decompressors)."""
    follows: frozenset[str] = frozenset()
    abbreviations: bool = False
    """GNU getopt: any unambiguous prefix of a long option is that option (``grep --deref``)."""

    def long(self, option: str, names: frozenset[str]) -> bool:
        if option in names:
            return True
        return (
            self.abbreviations and len(option) > 3 and any(n.startswith(option) for n in names if n[1] == "-")
        )


_OPTION_TABLES: dict[str, _OptionTable] = {
    "rg": _OptionTable(
        short_values="ABCEMTdefgjmrt",
        runs=frozenset({"--pre", "--hostname-bin"}),
        runs_itself=frozenset({"-z", "--search-zip"}),
        follows=frozenset({"-L", "--follow"}),
    ),
    **dict.fromkeys(
        ("grep", "egrep", "fgrep"),
        _OptionTable(
            short_values="ABCDdefm", follows=frozenset({"-R", "--dereference-recursive"}), abbreviations=True
        ),
    ),
    "sort": _OptionTable(short_values="kotST", runs=frozenset({"--compress-program"}), abbreviations=True),
    "diff": _OptionTable(
        short_values="CUFIDSLWXx", follows=frozenset({"-r", "--recursive"}), abbreviations=True
    ),
    "find": _OptionTable(short_values="", follows=frozenset({"-L", "-follow"})),
}


def option_effects(name: str, values: Sequence[str | None]) -> Iterator[OptionEffect]:
    """The :class:`OptionEffect` of each option of command ``name`` (a normalized name) in ``values``."""
    table = _OPTION_TABLES.get(name)
    if table is None:
        return
    if name == "find":  # single-dash words anywhere in the expression: ``find -L .``, ``find . -follow``
        for value in values:
            if value in table.follows:
                yield OptionEffect(kind="follows", option=value)
        return
    index = 0
    while index < len(values):
        value = values[index]
        index += 1
        if value is None or not value.startswith("-") or value == "-":
            continue
        if value == "--":
            return
        if value.startswith("--"):
            option, eq, rest = value.partition("=")
            # a unique prefix of a long option is that option (``--pre`` of ``--pre-glob`` aside, rg is strict)
            if table.long(option, table.runs):
                program = rest if eq else (values[index] if index < len(values) else None)
                index += 0 if eq else 1
                yield OptionEffect(kind="runs", option=option, program=program or None)
            elif table.long(option, table.runs_itself):
                yield OptionEffect(kind="runs", option=option)
            elif table.long(option, table.follows):
                yield OptionEffect(kind="follows", option=option)
            continue
        for position, ch in enumerate(value[1:], 1):
            short = "-" + ch
            if short in table.runs_itself:
                yield OptionEffect(kind="runs", option=short)
            if short in table.follows:
                yield OptionEffect(kind="follows", option=short)
            if ch in table.short_values:
                if position == len(value) - 1:
                    index += 1  # the next word is the value
                break
