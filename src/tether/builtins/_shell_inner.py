"""The shell text a command runs besides itself: ``eval``, ``sh -c``, ``su -c``, ``alias``, ``trap``, ``git -c``.

:func:`inner_code` returns that text when it is literal (the walk then analyses it as part of the command) and
records an unknown when it is only known at run time (``eval $X``, a shell's script file or input). Program text of
other languages (``python -c``, ``node -e``, ``awk``, ``sed``, ``make``) is :mod:`._shell_programs`'. :func:`echoed`
reads what ``echo rm x | sh`` feeds a shell.
"""

from __future__ import annotations

from ._shell_tree import named, node_text, parse
from ._shell_words import Word, static

__all__ = ["SHELLS", "echoed", "inner_code"]

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "ash", "rbash"})
# Options of a shell that take an argument (``bash -o errexit -c x``): the argument is not the script.
_SHELL_ARG_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
# Commands whose ``-c``/``--command`` option is shell text (``su -c 'rm x'``).
_COMMAND_OPTION = frozenset({"su", "runuser", "script", "flock"})
# What a shell only prints: ``bash --version`` runs no script and reads no input.
_SHELL_INFO = frozenset({"--version", "--help"})

_GIT_SAFE_KEYS = (
    "user.",
    "color.",
    "advice.",
    "column.",
    "i18n.",
    "core.quotepath",
    "core.autocrlf",
    "core.abbrev",
    "init.defaultbranch",
    "log.date",
    "log.decorate",
    "format.pretty",
)
"""``git -c`` keys (prefixes) that never name a program; every other key may (``core.fsmonitor``, ``*.textconv``)."""


def inner_code(name: str, rest: list[Word], clipped: str, *, unknown: list[str], home: str) -> str | None:
    """The shell text a command runs besides itself (``eval``, ``sh -c``, ``alias``, ``trap``), if any.

    Text only known at run time is recorded as unknown (and ``None`` returned).
    """
    values = [w.value for w in rest]
    if name == "eval":
        if any(v is None for v in values):
            unknown.append(f"eval of text only known at run time: {clipped}")
            return None
        return " ".join(v for v in values if v is not None)
    if name in ("alias", "trap"):
        if name == "trap" and (not values or values[0] in ("-", "-p", "-l", "")):
            return None
        found: list[str] = []
        for value in values if name == "alias" else values[:1]:
            if value is None:
                unknown.append(f"{name} of text only known at run time: {clipped}")
                return None
            found.append(value.partition("=")[2] if name == "alias" else value)
        return "\n".join(found) if found else None
    if name in SHELLS:
        return _shell_script(name, rest, clipped, unknown=unknown, home=home)
    if name in _COMMAND_OPTION:
        return _command_option(name, rest, clipped, unknown)
    if name in ("mapfile", "readarray"):
        values = [w.value for w in rest]
        callbacks = [values[i + 1] for i, v in enumerate(values[:-1]) if v == "-C"]
        if any(c is None for c in callbacks):
            unknown.append(f"{name} -C runs text only known at run time: {clipped}")
            return None
        return "\n".join(c for c in callbacks if c) or None
    if name == "watch":
        operands = [w for w in rest if w.value is None or not w.value.startswith("-")]
        if any(w.value is None for w in operands):
            unknown.append(f"watch runs text only known at run time: {clipped}")
            return None
        return " ".join(w.value or "" for w in operands) or None
    if name in ("source", ".") and (
        not rest or rest[0].value is None or rest[0].value.startswith(("/dev/", "/proc/"))
    ):
        unknown.append(f"{name} runs text that is only known at run time: {clipped}")
        return None
    if name == "hash" and any(
        w.value is not None and w.value.startswith("-") and "p" in w.value for w in rest
    ):
        unknown.append(f"hash -p changes which program a name runs: {clipped}")
        return None
    if name == "git":
        return _git_config(rest, clipped, unknown)
    return None


def _git_config(rest: list[Word], clipped: str, unknown: list[str]) -> str | None:
    """The shell text of ``git -c KEY=VALUE`` settings that name a command (``core.fsmonitor``, ``core.pager``,
    ``alias.x=!...``, ...), each one also an unknown: git runs it at a time and with arguments of its choosing.

    Only the global options before the subcommand are settings; a key outside :data:`_GIT_SAFE_KEYS` is treated
    as running its value (git has many such keys, and more with each release).
    """
    found: list[str] = []
    index = 0
    while index < len(rest):
        value = rest[index].value
        if value is None or not value.startswith("-"):
            break
        setting: str | None = None
        if value == "-c" and index + 1 < len(rest):
            index += 1
            setting = rest[index].value
            if setting is None:
                unknown.append(f"git -c sets a configuration only known at run time: {clipped}")
                return None
        elif value.startswith("--config-env"):
            unknown.append(f"git --config-env takes a configuration value from the environment: {clipped}")
        elif value in ("-C", "--git-dir", "--work-tree", "--namespace", "--exec-path"):
            index += 1
        index += 1
        if setting is None:
            continue
        key, _, command = setting.partition("=")
        folded = key.lower()
        if folded.startswith(_GIT_SAFE_KEYS) or folded in _GIT_SAFE_KEYS:
            continue
        if folded.startswith("alias.") and command.startswith("!"):
            found.append(command[1:])  # a shell alias: its text is analysed like ``sh -c``
            continue
        # Other aliases expand into git arguments (``-c`` included); other keys may name a program.
        unknown.append(f"git -c {key} may name a command that git runs: {clipped}")
        if command:
            found.append(command)
    return "\n".join(found) or None


def _command_option(name: str, rest: list[Word], clipped: str, unknown: list[str]) -> str | None:
    """The shell text of ``su -c TEXT``, ``script -c TEXT``, ``flock -c TEXT``, ``runuser -c TEXT``, if any."""
    for index, word in enumerate(rest):
        value = word.value
        if value is None:
            continue
        if value.startswith("--command="):
            return value.partition("=")[2]
        if value == "--command" or (
            value.startswith("-") and not value.startswith("--") and value.endswith("c")
        ):
            following = rest[index + 1] if index + 1 < len(rest) else None
            if following is None or following.value is None:
                unknown.append(f"{name} -c runs text only known at run time: {clipped}")
                return None
            return following.value
    return None


def _shell_script(name: str, rest: list[Word], clipped: str, *, unknown: list[str], home: str) -> str | None:
    if rest and all(w.value in _SHELL_INFO for w in rest):
        return None
    has_c = False
    index = 0
    while index < len(rest):
        value = rest[index].value
        if value is None:
            break
        if value == "--" or value == "-":
            index += 1
            break
        if value in _SHELL_ARG_OPTIONS:
            index += 2
            continue
        if value.startswith(("-", "+")) and len(value) > 1:
            if not value.startswith("--") and "c" in value[1:]:
                has_c = True
            index += 1
            continue
        break
    operand = rest[index] if index < len(rest) else None
    if operand is not None and not has_c:
        # ``bash script.sh``, ``bash <(echo rm x)``: the script is a file (or a pipe) this analysis does not read.
        unknown.append(f"{name} runs a script file that is not analysed: {clipped}")
        raw = operand.raw
        if raw.startswith("<(") and raw.endswith(")"):
            return echoed(raw[2:-1], home)  # what is echoed is known, so a deny applies
        return None
    if has_c:
        if operand is None or operand.value is None:
            unknown.append(f"{name} -c runs text only known at run time: {clipped}")
            return None
        return operand.value
    if operand is None:
        unknown.append(f"{name} reads the commands to run from its input: {clipped}")
    return None


def echoed(text: str, home: str) -> str | None:
    """The output of ``text`` when it is one ``echo`` or ``printf`` of static words (``echo rm x`` → ``rm x``)."""
    statements = named(parse(text))
    if len(statements) != 1 or statements[0].type != "command":
        return None
    command = statements[0]
    name = command.child_by_field_name("name")
    if name is None or node_text(name) not in ("echo", "printf"):
        return None
    values: list[str] = []
    for child in named(command):
        if child.type == "command_name":
            continue
        static_value = static(child, first=False, home=home)
        if static_value is None:
            return None
        values.append(static_value[0])
    while values and node_text(name) == "echo" and values[0] in ("-n", "-e", "-E"):
        values.pop(0)
    return " ".join(values).replace("\\n", "\n") or None
