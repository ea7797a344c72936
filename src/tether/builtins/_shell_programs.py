"""Program text a command runs in another language: what it means for the permission gate (for :mod:`._shell_command`).

An interpreter given program text (``python3 -c``, ``node -e``, ``perl -pe``, a script file ``python3 x.py``, a module
``python3 -m x``, a program read from its input ``python3 <<EOF``), ``make`` (the recipes of a makefile), a shell or
``source`` given a script file, and a program file run by its path (``./build.sh``) touch files this analysis cannot
name: what they touch is only known when the text runs. So their paths are uncertain, decided as ``echo x > $OUT``
is (``external_directory`` for the command's text: a deny refuses it, the default asks). Text given inline or on the
input is also an unknown command (only a ``bash`` rule of ``*`` allows it), as ``sh -c "$X"`` is.

``sed`` and ``awk`` programs are read: a ``sed`` script's ``w``/``r`` files are paths like any operand, its ``e``
command and ``s///e`` run text; an ``awk`` program's output redirections, pipes, ``getline`` and ``system()`` make it
uncertain, a plain filter (``awk '$3 > 100 {print $1}'``) is not. A script this reading cannot follow is uncertain.

Not here: a program found by its name (``pytest``, ``npm test``, ``cargo build``) is decided by its name like any
command; what it runs (a ``conftest.py``, a ``package.json`` script) is contained only by a sandbox. What only prints
(``python3 --version``, ``make --help``) is not program text.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from .._record import record

__all__ = ["Program", "program_text", "runs_program"]


@record
class Program:
    """The effects of a command's program text that the analysis records."""

    uncertain: tuple[str, ...] = ()
    """Why the paths it touches are not known (the caller asks ``external_directory`` for the command's text)."""
    unknown: tuple[str, ...] = ()
    """Why what it runs is not known (the caller adds the uncertain ``bash`` resource)."""
    reads: tuple[str, ...] = ()
    """Files it reads that its words or text name (``sed 'r FILE'``, awk's input files), relative to the working
    directory."""
    writes: tuple[str, ...] = ()
    """Files its text names that it writes (``sed 'w FILE'``)."""
    commands: tuple[str, ...] = ()
    """Shell text it runs that is known (``sed 'e rm x'``): analysed as commands of the call."""


@record
class _Interpreter:
    inline: frozenset[str] = frozenset()
    """Options whose value (or the next word) is program text."""
    cluster: str = ""
    """Letters that are an inline option inside a cluster of short options (``perl -ne``, ``python -Ic``)."""
    takes: str = ""
    """Letters of short options that take an argument: the rest of the cluster or the next word (``-I/x``, ``-W x``)."""
    rest: str = ""
    """Letters of short options whose argument is only the rest of the cluster, if any (``perl -i.bak``, ``-l``)."""
    module: str = ""
    """Letters of options that name a module to run as the program (``python3 -m pytest``)."""
    info: frozenset[str] = frozenset({"--version", "--help", "-h"})
    """Options that only print (version, help): a command of only these runs no program."""
    commands: frozenset[str] = frozenset()
    """Subcommands that run inline text (``deno eval``)."""


_NODE = _Interpreter(
    inline=frozenset({"-e", "--eval", "-p", "--print"}), info=frozenset({"-v", "--version", "-h", "--help"})
)
_INTERPRETERS: dict[str, _Interpreter] = {
    "node": _NODE,
    "nodejs": _NODE,
    "bun": _Interpreter(
        inline=_NODE.inline, info=frozenset({"-v", "--version", "-h", "--help", "--revision"})
    ),
    "tsx": _NODE,
    "ts-node": _NODE,
    "deno": _Interpreter(
        info=frozenset({"-V", "--version", "-h", "--help", "help"}), commands=frozenset({"eval"})
    ),
    "perl": _Interpreter(
        inline=frozenset({"-e", "-E"}),
        cluster="eE",
        takes="I",
        rest="ilx0dDCFmM",
        info=frozenset({"-v", "-V", "--version", "-h", "--help"}),
    ),
    "ruby": _Interpreter(inline=frozenset({"-e"}), cluster="e", takes="IrCE", rest="FixKTW0"),
    "php": _Interpreter(
        inline=frozenset({"-r", "-B", "-R", "-E"}),
        info=frozenset({"-v", "--version", "-h", "--help", "-i", "-m", "--ini"}),
    ),
    "lua": _Interpreter(inline=frozenset({"-e"}), info=frozenset({"-v"})),
    "luajit": _Interpreter(inline=frozenset({"-e"}), info=frozenset({"-v"})),
    "Rscript": _Interpreter(inline=frozenset({"-e"})),
    "julia": _Interpreter(
        inline=frozenset({"-e", "-E", "--eval", "--print"}),
        info=frozenset({"-v", "--version", "-h", "--help"}),
    ),
    "osascript": _Interpreter(inline=frozenset({"-e"})),
}
_PYTHON = _Interpreter(
    inline=frozenset({"-c"}),
    cluster="c",
    takes="WX",
    module="m",
    info=frozenset(
        {"-V", "-VV", "--version", "-h", "-?", "--help", "--help-env", "--help-xoptions", "--help-all"}
    ),
)
_PYTHON_NAME = re.compile(r"(?:python|pypy)[0-9.]*w?")
_MAKE_INFO = frozenset({"-v", "--version", "-h", "--help"})
_SYSTEM_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})
"""Directories of installed programs: a program run by its path there is decided by its name, as from ``PATH``."""
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
_NAMES = frozenset({"source", ".", "make", "gmake", "sed", *_AWKS, *_INTERPRETERS})


def runs_program(name: str) -> bool:
    """Whether command ``name`` may run program text (the cheap test before :func:`program_text`)."""
    return name in _NAMES or name.startswith(("python", "pypy"))


def program_text(
    name: str, words: Sequence[str | None], clipped: str, *, path: str | None = None
) -> Program | None:
    """The effects of the program text command ``name`` runs, given its argument ``words`` (``None``: only known at
    run time); ``None`` when it runs none (``python3 --version``) or is no interpreter.

    ``path`` is the command word's value when it names a file by its path (``./build.sh``, ``/opt/x/bin/y``). The
    shells' ``-c`` text, script files and input are :mod:`._shell_inner`'s.
    """
    found = _program(name, words, clipped)
    if path is None or "/" not in path or posixpath.dirname(posixpath.normpath(path)) in _SYSTEM_DIRS:
        return found
    reason = f"{path} is a program file that is not analysed: {clipped}"
    if found is None:
        return Program(uncertain=(reason,))
    return Program(
        uncertain=(reason, *found.uncertain),
        unknown=found.unknown,
        reads=found.reads,
        writes=found.writes,
        commands=found.commands,
    )


def _program(name: str, words: Sequence[str | None], clipped: str) -> Program | None:
    if name in ("source", "."):
        if not words or words[0] is None or words[0].startswith(("/dev/", "/proc/")):
            return None  # :mod:`._shell_inner` says so (text only known at run time)
        reason = f"{name} runs a script file that is not analysed: {clipped}"
        return Program(uncertain=(reason,), unknown=(reason,))
    if name in ("make", "gmake"):
        if words and all(w in _MAKE_INFO for w in words):
            return None
        return Program(
            uncertain=(f"{name} runs the recipes of a makefile, which are not analysed: {clipped}",)
        )
    if name in _AWKS:
        return _awk(name, words, clipped)
    if name == "sed":
        return _sed(words, clipped)
    spec = _INTERPRETERS.get(name) or (_PYTHON if _PYTHON_NAME.fullmatch(name) else None)
    if spec is None:
        return None
    return _interpreter(name, spec, words, clipped)


def _interpreter(name: str, spec: _Interpreter, words: Sequence[str | None], clipped: str) -> Program | None:
    if words and all(w in spec.info for w in words):
        return None
    inline = f"{name} runs program text given on its command line: {clipped}"
    stdin = f"{name} reads the program to run from its input: {clipped}"
    program = Program(
        uncertain=(f"{name} runs a program (a file or a module) that is not analysed: {clipped}",)
    )
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word is None:
            return Program(uncertain=(inline,), unknown=(inline,))  # it may be an inline option
        if word in spec.inline or word in spec.commands:
            return Program(uncertain=(inline,), unknown=(inline,))
        if word == "--":
            if index < len(words) and words[index] != "-":
                return program
            break
        if word == "-":
            break
        if not word.startswith("-"):
            return program  # a script file, a module, a subcommand (``deno run``)
        if word.startswith("--"):
            continue
        for position, ch in enumerate(word[1:], 1):
            if ch in spec.cluster:
                return Program(uncertain=(inline,), unknown=(inline,))
            if ch in spec.module:
                return program
            if ch in spec.takes:
                index += 0 if word[position + 1 :] else 1  # ``-W ignore`` or ``-Wignore``
                break
            if ch in spec.rest:
                break
    return Program(uncertain=(stdin,), unknown=(stdin,))


def _long(option: str, names: Sequence[str]) -> str:
    """The long option ``option`` stands for: itself, or the one name it is an unambiguous prefix of (GNU getopt)."""
    if option in names:
        return option
    found = [name for name in names if name.startswith(option)]
    return found[0] if len(found) == 1 else option


# --- sed ----------------------------------------------------------------------------------------------------------


def _sed(words: Sequence[str | None], clipped: str) -> Program | None:
    scripts: list[str | None] = []
    from_file = False
    sandbox = False
    operands: list[str | None] = []
    index = 0
    options = True
    while index < len(words):
        word = words[index]
        index += 1
        if not options or word is None or not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        if word == "--":
            options = False
        elif word.startswith("--"):
            option, eq, value = word.partition("=")
            option = _long(option, _SED_LONG)
            if option == "--sandbox":
                sandbox = True
            elif option in ("--expression", "--file"):
                found = value if eq else (words[index] if index < len(words) else None)
                index += 0 if eq else 1
                if option == "--file":
                    from_file = True
                else:
                    scripts.append(found)
            elif option == "--line-length" and not eq:
                index += 1
        else:
            for position, ch in enumerate(word[1:], 1):
                rest = word[position + 1 :]
                if ch in "ef":
                    found = rest or (words[index] if index < len(words) else None)
                    index += 0 if rest else 1
                    if ch == "f":
                        from_file = True
                    else:
                        scripts.append(found)
                    break
                if ch in "il":  # -i[SUFFIX], -l N
                    index += 1 if ch == "l" and not rest else 0
                    break
    if not scripts and not from_file and operands:
        scripts.append(operands[0])
    if sandbox:
        return None
    if from_file or any(s is None for s in scripts):
        reason = f"sed runs a script that is not known statically: {clipped}"
        return Program(uncertain=(reason,), unknown=(reason,))
    reads: list[str] = []
    writes: list[str] = []
    commands: list[str] = []
    runs = broken = False
    for script in scripts:
        assert script is not None
        scan = _SedScan(script)
        broken = broken or not scan.run()
        reads += scan.reads
        writes += scan.writes
        commands += scan.commands
        runs = runs or scan.runs
    if not (reads or writes or commands or runs or broken):
        return None
    uncertain: list[str] = []
    unknown: list[str] = []
    if broken:
        uncertain.append(f"sed's script is not read to its end here: {clipped}")
    if runs:
        reason = f"sed runs text its script builds (s///e, e): {clipped}"
        uncertain.append(reason)
        unknown.append(reason)
    return Program(
        uncertain=tuple(uncertain),
        unknown=tuple(unknown),
        reads=tuple(reads),
        writes=tuple(writes),
        commands=tuple(commands),
    )


_SED_LONG = (
    "--binary",
    "--debug",
    "--expression",
    "--file",
    "--follow-symlinks",
    "--help",
    "--in-place",
    "--line-length",
    "--null-data",
    "--posix",
    "--quiet",
    "--regexp-extended",
    "--sandbox",
    "--separate",
    "--silent",
    "--unbuffered",
    "--version",
    "--zero-terminated",
)
"""GNU sed's long options: getopt takes any unambiguous prefix (``--expr=...`` is ``--expression``)."""
_SED_PLAIN = frozenset("=dDgGhHnNpPxzF")
_SED_NUMBER = frozenset("lqQL")
_SED_LABEL = frozenset(":btTv")
_SED_LABEL_END = "; \t\n"
"""Where a label ends: at ``;``, white space or the line's end, ``:label`` too (GNU sed 4.9 runs the ``w FILE`` of
``:end w FILE``). A sed that reads the rest of the line into the label then writes nothing this reading did not see."""
_SED_TEXT = frozenset("aic")
_SED_FILE = frozenset("rRwW")
_SED_DEVICES = frozenset({"/dev/stdout", "/dev/stderr", "/dev/stdin"})


class _SedScan:
    """GNU sed's script grammar, as far as files and commands go: addresses, ``{}``/``!``, each command's arguments.

    :meth:`run` returns ``False`` where the text leaves the grammar this reading knows (the caller is then uncertain).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.commands: list[str] = []
        self.runs = False

    def run(self) -> bool:
        text = self.text
        while True:
            self._skip(" \t\n;")
            if self.pos >= len(text):
                return True
            if text[self.pos] == "#":
                self._to_line_end()
                continue
            if not self._address():
                return False
            if self._peek() == ",":
                self.pos += 1
                self._skip(" \t")
                if self._peek() in ("+", "~"):
                    self.pos += 1
                if not self._address():
                    return False
            self._skip(" \t")
            while self._peek() == "!":
                self.pos += 1
                self._skip(" \t")
            if self.pos >= len(text):
                return False
            command = text[self.pos]
            self.pos += 1
            if not self._command(command):
                return False

    def _command(self, command: str) -> bool:
        if command in "{}" or command in _SED_PLAIN:
            return True
        if command in _SED_NUMBER:
            self._skip(" \t")
            while self._peek().isdigit():
                self.pos += 1
            return True
        if command in _SED_LABEL:
            self._skip(" \t")
            while self.pos < len(self.text) and self.text[self.pos] not in _SED_LABEL_END:
                self.pos += 1
            return True
        if command in _SED_TEXT:
            self._text_argument()
            return True
        if command in _SED_FILE:
            self._file(command in "wW")
            return True
        if command == "e":
            line = self._to_line_end().strip()
            if line:
                self.commands.append(line)
            else:
                self.runs = True  # runs the pattern space
            return True
        if command in "sy":
            return self._substitute(command == "s")
        return False

    def _address(self) -> bool:
        text = self.text
        char = self._peek()
        if char.isdigit():
            while self._peek().isdigit():
                self.pos += 1
            if self._peek() == "~":
                self.pos += 1
                while self._peek().isdigit():
                    self.pos += 1
            return True
        if char == "$":
            self.pos += 1
            return True
        if char in ("/", "\\"):
            if char == "\\":
                self.pos += 1
                if self.pos >= len(text):
                    return False
            delimiter = text[self.pos]
            self.pos += 1
            if not self._delimited(delimiter, regex=True):
                return False
            while self._peek() in ("I", "M"):
                self.pos += 1
        return True

    def _substitute(self, substitute: bool) -> bool:
        if self.pos >= len(self.text) or self.text[self.pos] in "\n\\":
            return False
        delimiter = self.text[self.pos]
        self.pos += 1
        if not (self._delimited(delimiter, regex=substitute) and self._delimited(delimiter, regex=False)):
            return False
        if not substitute:
            return True
        while self.pos < len(self.text):
            flag = self.text[self.pos]
            if flag in "gpiImM" or flag.isdigit():
                self.pos += 1
            elif flag == "e":
                self.runs = True
                self.pos += 1
            elif flag in "wW":
                self.pos += 1
                self._file(True)
                return True
            else:
                break
        return True

    def _delimited(self, delimiter: str, *, regex: bool) -> bool:
        """Skip to after the next ``delimiter`` not escaped by a backslash; in a regex, not inside a bracket expression
        (``s/[/]/x/``: GNU sed reads brackets there). A bracket holding the delimiter or a backslash is read
        differently by different seds: not followed here."""
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\":
                self.pos += 2
                continue
            if char == "[" and regex:
                end = _bracket_end(text, self.pos)
                if end is None or delimiter in text[self.pos + 1 : end] or "\\" in text[self.pos : end]:
                    return False
                self.pos = end
                continue
            self.pos += 1
            if char == delimiter:
                return True
            if char == "\n" and delimiter != "\n":
                return False
        return False

    def _file(self, write: bool) -> None:
        self._skip(" \t")
        name = self._to_line_end()
        if name in _SED_DEVICES or not name:
            return
        (self.writes if write else self.reads).append(name)

    def _text_argument(self) -> None:
        # ``a text``, ``a\`` followed by lines each ending in a backslash but the last
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\":
                self.pos += 2
                continue
            self.pos += 1
            if char == "\n":
                return

    def _to_line_end(self) -> str:
        end = self.text.find("\n", self.pos)
        end = len(self.text) if end < 0 else end
        line = self.text[self.pos : end]
        self.pos = end
        return line

    def _skip(self, chars: str) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in chars:
            self.pos += 1

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""


# --- awk ----------------------------------------------------------------------------------------------------------

_AWK_ARG = frozenset("Fv")
_AWK_FILES = frozenset({"-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec"})
"""Options naming a file of program text (or an extension) that is not read here."""
_AWK_WRITES = frozenset({"-d", "--dump-variables", "-o", "--pretty-print", "-p", "--profile"})
"""gawk options that write a file (``awkvars.out``, ``awkprof.out`` or the one named)."""
_AWK_FLAGS = frozenset("bcCDgLMnNOPrstV")
_AWK_LONG = (
    "--assign",
    "--bignum",
    "--characters-as-bytes",
    "--copyright",
    "--csv",
    "--debug",
    "--dump-variables",
    "--exec",
    "--field-separator",
    "--file",
    "--gen-pot",
    "--help",
    "--include",
    "--lint",
    "--lint-old",
    "--load",
    "--no-optimize",
    "--non-decimal-data",
    "--optimize",
    "--posix",
    "--pretty-print",
    "--profile",
    "--re-interval",
    "--sandbox",
    "--source",
    "--trace",
    "--traditional",
    "--use-lc-numeric",
    "--version",
)
"""gawk's long options (any unambiguous prefix is one, as for sed)."""
_AWK_SANDBOX = frozenset({"-S", "--sandbox"})
_AWK_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
"""An operand awk reads as an assignment, not a file (``FS=, data``)."""
_AWK_TOKEN = re.compile(
    r"""(?P<space>[ \t\r]+|\\\n)|(?P<comment>\#[^\n]*)|(?P<string>"(?:[^"\\\n]|\\.)*")|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"""
    r"""|(?P<number>[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+)|(?P<op>\|\||&&|>>|\|&|[<>!=]=|\+\+|--|.|\n)""",
    re.DOTALL,
)
_AWK_KEYWORDS = frozenset(
    "BEGIN END BEGINFILE ENDFILE print printf return in if else while for do break continue next nextfile exit "
    "delete function func case default switch".split()
)


def _awk(name: str, words: Sequence[str | None], clipped: str) -> Program | None:
    programs: list[str | None] = []
    from_file = False
    script_file = False  # -f, -E or -W exec: the program is a file, so every operand is input
    writes_file = False
    sandbox = False
    operands: list[str | None] = []
    index = 0
    options = True
    while index < len(words):
        word = words[index]
        index += 1
        if not options or word is None or not word.startswith("-") or word == "-":
            operands.append(word)
            options = options and not operands  # the program ends the options
            continue
        if word == "--":
            options = False
            continue
        option, eq, value = word.partition("=")
        if word.startswith("--"):
            option = _long(option, _AWK_LONG)
            if option in _AWK_FILES:
                from_file = True
                script_file = script_file or option in ("--file", "--exec")
            elif option in _AWK_WRITES:
                writes_file = True
            elif option in _AWK_SANDBOX:
                sandbox = True
            elif option == "--source":
                programs.append(value if eq else (words[index] if index < len(words) else None))
            if not eq and option in (*_AWK_FILES, "--source", "--assign", "--field-separator"):
                index += 1
            continue
        head = word[:2]
        if head in _AWK_SANDBOX:
            sandbox = True
        elif head in _AWK_FILES:
            from_file = True
            script_file = script_file or head in ("-f", "-E")
        elif head in _AWK_WRITES:
            writes_file = True  # -d[FILE], -o[FILE], -p[FILE]: an attached name only
            continue
        elif head == "-e":
            programs.append(word[2:] or (words[index] if index < len(words) else None))
        elif head == "-W":  # mawk: -W exec FILE reads the program from a file; other -W options print or tune
            value = word[2:] or (words[index] if index < len(words) else None)
            from_file = from_file or value is None or value.startswith("e")
            script_file = script_file or value is None or value.startswith("e")
        elif word[1] in _AWK_FLAGS:
            continue
        if word[1] in "fiElWvFe" and len(word) == 2:
            index += 1
    # the operands after the program are the files it reads (``var=value`` assigns, ``-`` is the input)
    files = operands if programs or script_file else operands[1:]
    reads = tuple(
        dict.fromkeys(f for f in files if f is not None and f != "-" and not _AWK_ASSIGNMENT.match(f))
    )
    uncertain: list[str] = []
    if any(f is None for f in files):
        uncertain.append(f"{name} reads a file only known at run time: {clipped}")
    if not programs and not from_file and operands:
        programs.append(operands[0])
    if sandbox:
        return Program(uncertain=tuple(uncertain), reads=reads) if reads or uncertain else None
    if from_file or any(p is None for p in programs):
        reason = f"{name} runs a program that is not known statically: {clipped}"
        return Program(uncertain=(*uncertain, reason), unknown=(reason,), reads=reads)
    unknown: list[str] = []
    if writes_file:
        uncertain.append(f"{name} writes a file of its own (a dump or profile): {clipped}")
    for program in programs:
        assert program is not None
        effects = _awk_effects(program)
        if effects is None:
            reason = f"{name}'s program is not read to its end here (a regex this reading does not follow): {clipped}"
            uncertain.append(reason)
            unknown.append(reason)
        elif effects[0]:
            reason = f"{name}'s program runs commands (system, a pipe, an indirect call): {clipped}"
            uncertain.append(reason)
            unknown.append(reason)
        elif effects[1]:
            uncertain.append(
                f"{name}'s program reads or writes files it names itself (getline, >): {clipped}"
            )
    if not (uncertain or reads):
        return None
    return Program(
        uncertain=tuple(dict.fromkeys(uncertain)), unknown=tuple(dict.fromkeys(unknown)), reads=reads
    )


def _awk_effects(program: str) -> tuple[bool, bool] | None:
    """Whether an awk program runs commands (``system()``, a ``|`` pipe, a gawk ``@`` call or directive) and
    whether it opens files itself (``getline``, ``print > FILE``); a ``>`` outside ``print``/``printf`` compares.
    ``None`` when a regex literal is not followed here (unterminated, or a bracket holding ``/`` or a backslash)."""
    runs = touches = False
    operand = False  # the last token ends an operand: a ``/`` next divides, else it starts a regex
    printing: int | None = None  # the parenthesis depth of the print statement being read
    conditions: list[bool] = []  # per open parenthesis: whether it holds an if/while/for condition
    last = ""  # the last name read, when it was the last token
    counted = False  # the last token was ``++`` or ``--``: gawk divides by a ``/`` next (``x++ / 2``), mawk reads a regex
    position = 0
    while position < len(program):
        match = _AWK_TOKEN.match(program, position)
        assert match is not None  # the last alternative takes any character
        kind, token = match.lastgroup, match[0]
        position = match.end()
        if kind in ("space", "comment"):
            continue
        if kind == "op" and token == "/" and counted:
            return None
        counted = token in ("++", "--")
        if kind == "op" and token == "/" and not operand:
            end = _regex_end(program, position)
            if end is None:
                return None  # not a program this reading follows
            position = end
            operand, last = True, ""
            continue
        if kind == "name":
            if token == "system" or token == "getline":
                runs = runs or token == "system"
                touches = True
            if token in ("print", "printf"):
                printing = len(conditions)
            operand, last = token not in _AWK_KEYWORDS, token
            continue
        if counted:
            continue  # an operand stays one (``x++``), a prefix (``++x``) is followed by one
        opened = token == "(" and last in ("if", "while", "for")
        operand, last = kind in ("string", "number") or token in (")", "]", "$"), ""
        if token in ("|", "|&", "@"):
            runs = True
        elif token in ("(", "["):
            conditions.append(opened)
        elif token in (")", "]"):
            # after ``if (x)`` a statement starts (``/re/`` is a regex to gawk; mawk refuses the program); after
            # ``f(x)`` an operand ended
            operand = not (conditions.pop() if conditions else False)
        elif token in (";", "\n", "{", "}"):
            printing = None
        elif token in (">", ">>") and printing is not None and len(conditions) <= printing:
            touches = True
    return runs, touches


def _regex_end(program: str, start: int) -> int | None:
    """The index after the regex literal that starts at ``start`` (after its ``/``), or ``None`` if unterminated or
    holding a bracket expression with a ``/`` or a backslash (awks differ on those)."""
    position = start
    while position < len(program):
        char = program[position]
        if char == "\\":
            position += 2
            continue
        if char == "\n":
            return None
        if char == "[":
            end = _bracket_end(program, position)
            if end is None or "/" in program[position + 1 : end] or "\\" in program[position:end]:
                return None
            position = end
            continue
        if char == "/":
            return position + 1
        position += 1
    return None


def _bracket_end(text: str, start: int) -> int | None:
    """The index after the bracket expression whose ``[`` is at ``start`` (POSIX: a ``]`` first is literal, ``[:x:]``,
    ``[.x.]`` and ``[=x=]`` inside), or ``None`` when it does not end on its line."""
    position = start + 1
    if text.startswith("^", position):
        position += 1
    if text.startswith("]", position):
        position += 1
    while position < len(text):
        char = text[position]
        if char == "\n":
            return None
        if char == "[" and text[position + 1 : position + 2] in (":", ".", "="):
            close = text.find(text[position + 1] + "]", position + 2)
            if close < 0:
                return None
            position = close + 2
            continue
        if char == "]":
            return position + 1
        position += 1
    return None
