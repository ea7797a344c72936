"""The option syntax of wrapper commands (``sudo -u root rm x``), for :mod:`._shell_command`.

A wrapper runs another command; the path check and the "always" pattern apply to the wrapped one. Knowing which
options take an argument keeps ``nice -n 5 rm x`` from being read as the command ``5``. An option outside the table,
or one that moves the working directory or root, makes the wrapped command unknown: the analysis is then uncertain,
never wrong.

Runners are wrappers too, after their subcommand: ``uv run rm x``, ``poetry run``, ``npx``, ``npm exec`` run the command
that follows (from ``PATH`` or the project's environment), so a ``deny`` on ``rm *`` applies to ``uv run rm x`` as to
``sudo rm x``, and the wrapped command's program text (``uv run python -c ...``) is analysed as if it stood alone.
"""

from __future__ import annotations

from dataclasses import replace

from .._record import record

__all__ = ["WRAPPERS", "Wrapper", "unwrap"]


@record
class Wrapper:
    """The option syntax of a command that runs another command (``sudo -u root rm x``).

    Options outside these sets make the inner command unknown, and so do the ``unsure`` ones (they move the working
    directory or root, or carry a command string): the analysis is then uncertain rather than wrong.
    """

    flags: str = ""
    with_arg: str = ""
    long_flags: frozenset[str] = frozenset()
    long_with_arg: frozenset[str] = frozenset()
    unsure: frozenset[str] = frozenset()
    positionals: int = 0
    assignments: bool = False
    numeric: bool = False
    stdin_operands: bool = False
    lookup: str = ""
    """Flags that make the wrapper only look the command up, never run it (``command -v python3``)."""
    subcommands: frozenset[str] = frozenset()
    """A runner's subcommands that run a command (``uv run``, ``npm exec``): it wraps only after one of them, given
    first; an option before it makes the wrapped command unknown, another subcommand runs none (``uv pip``)."""


_NPX = Wrapper(
    flags="yq",
    with_arg="p",
    long_flags=frozenset({"--yes", "--no", "--quiet"}),
    long_with_arg=frozenset({"--package"}),
    unsure=frozenset({"-c", "--call"}),
)
"""``npx`` and ``npm exec``: ``-p PKG`` names a package to install first; ``-c``/``--call`` carry a command string."""

WRAPPERS: dict[str, Wrapper] = {
    "command": Wrapper(flags="pvV", lookup="vV"),
    "builtin": Wrapper(),
    "exec": Wrapper(flags="cl", with_arg="a"),
    "nohup": Wrapper(),
    "busybox": Wrapper(),
    "coproc": Wrapper(assignments=True),  # coproc A=1 rm x
    "taskset": Wrapper(flags="acp", long_flags=frozenset({"--all-tasks", "--cpu-list"}), positionals=1),
    "flock": Wrapper(
        flags="sxeunoFh",
        with_arg="wEc",
        long_flags=frozenset("--shared --exclusive --unlock --nonblock --no-fork --close --verbose".split()),
        long_with_arg=frozenset({"--timeout", "--conflict-exit-code", "--command"}),
        positionals=1,
    ),
    "sudo": Wrapper(
        flags="AbEHiKklnPSsV",
        with_arg="CDghpRrTtUu",
        long_flags=frozenset(
            "--askpass --background --preserve-env --set-home --login --remove-timestamp --reset-timestamp "
            "--non-interactive --preserve-groups --stdin --shell --bell --validate".split()
        ),
        long_with_arg=frozenset(
            "--close-from --chdir --group --host --prompt --chroot --role --type --command-timeout --other-user "
            "--user".split()
        ),
        unsure=frozenset({"-D", "--chdir", "-R", "--chroot"}),
        assignments=True,  # sudo A=1 rm x
    ),
    "doas": Wrapper(flags="ns", with_arg="uC"),
    "env": Wrapper(
        flags="i0v",
        with_arg="uC",
        long_flags=frozenset({"--ignore-environment", "--null", "--debug"}),
        long_with_arg=frozenset({"--unset", "--chdir"}),
        unsure=frozenset({"-C", "--chdir"}),
        assignments=True,
    ),
    "nice": Wrapper(with_arg="n", long_with_arg=frozenset({"--adjustment"}), numeric=True),
    "time": Wrapper(
        flags="pv",
        with_arg="fo",
        long_flags=frozenset({"--portability", "--verbose", "--append", "--quiet"}),
        long_with_arg=frozenset({"--format", "--output"}),
        unsure=frozenset({"-o", "--output"}),
        assignments=True,  # bash's ``time`` keyword: time A=1 rm x
    ),
    "timeout": Wrapper(
        flags="v",
        with_arg="sk",
        long_flags=frozenset({"--foreground", "--preserve-status", "--verbose"}),
        long_with_arg=frozenset({"--signal", "--kill-after"}),
        positionals=1,
    ),
    "stdbuf": Wrapper(with_arg="ioe", long_with_arg=frozenset({"--input", "--output", "--error"})),
    "setsid": Wrapper(flags="cfw", long_flags=frozenset({"--ctty", "--fork", "--wait"})),
    "ionice": Wrapper(flags="t", with_arg="cn", long_flags=frozenset({"--ignore"})),
    "xargs": Wrapper(
        flags="0oprtx",
        with_arg="adEILnPs",
        long_flags=frozenset(
            "--null --open-tty --interactive --no-run-if-empty --verbose --exit --show-limits".split()
        ),
        long_with_arg=frozenset(
            "--arg-file --delimiter --eof --replace --max-lines --max-args --max-procs --max-chars "
            "--process-slot-var".split()
        ),
        stdin_operands=True,
    ),
    **dict.fromkeys(
        ("poetry", "pdm", "hatch", "pipenv", "rye", "pixi"), Wrapper(subcommands=frozenset({"run"}))
    ),
    "uv": Wrapper(
        subcommands=frozenset({"run"}),
        flags="qv",
        with_arg="p",
        long_flags=frozenset(
            "--frozen --locked --no-sync --isolated --all-extras --no-dev --active --no-project --exact --offline "
            "--quiet --verbose".split()
        ),
        long_with_arg=frozenset(
            "--with --with-editable --with-requirements --python --extra --group --only-group --package "
            "--env-file --index --default-index".split()
        ),
        unsure=frozenset({"--directory", "--project", "-m", "--module", "-s", "--script"}),
    ),
    **dict.fromkeys(
        ("conda", "mamba"),
        Wrapper(
            subcommands=frozenset({"run"}),
            with_arg="np",
            long_flags=frozenset({"--no-capture-output", "--live-stream"}),
            long_with_arg=frozenset({"--name", "--prefix"}),
            unsure=frozenset({"--cwd"}),
        ),
    ),
    **dict.fromkeys(("npx", "bunx", "pnpx"), _NPX),
    "npm": replace(_NPX, subcommands=frozenset({"exec", "x"})),
    **dict.fromkeys(("pnpm", "yarn"), Wrapper(subcommands=frozenset({"exec", "dlx"}))),
    "bun": Wrapper(subcommands=frozenset({"x"})),  # ``bun x`` is bunx; ``bun run x.ts`` is program text
}


def unwrap(spec: Wrapper, words: list[str | None], start: int) -> tuple[int | None, str | None]:
    """Where the wrapped command's name is in ``words`` (from ``start``), and why that is unknown (if it is).

    Returns ``(index, None)``, ``(None, None)`` when the wrapper runs no command (``env`` alone), or
    ``(None, reason)`` when an option is unknown, dynamic, or moves the working directory.
    """
    index = start
    if spec.subcommands:
        first = words[index] if index < len(words) else ""
        if first in spec.subcommands:
            index += 1
        elif first is None or (first.startswith("-") and any(w in spec.subcommands for w in words[index:])):
            return None, "the runner's subcommand is not known statically"  # dynamic, or options before it
        else:
            return (
                None,
                None,
            )  # another subcommand (``uv pip install``, ``npm test``), or none: decided by its name
    positionals = spec.positionals
    options = True
    while index < len(words):
        word = words[index]
        if word is None:
            # A dynamic word: the wrapped command's name (the caller says so), or an option or operand we cannot read.
            return (index, None) if not positionals else (None, "an argument is only known at run time")
        if options and word == "--":
            options = False
            index += 1
            continue
        if options and word.startswith("--"):
            option, eq, _ = word.partition("=")
            if option in spec.unsure:
                return None, f"{option} changes where the wrapped command runs"
            if option in spec.long_flags or (eq and option in spec.long_with_arg):
                index += 1
            elif option in spec.long_with_arg:
                index += 2
            else:
                return None, f"unknown option {option}"
            continue
        if options and word.startswith("-") and len(word) > 1:
            if spec.numeric and word[1:].isdigit():
                index += 1
                continue
            step = 1
            for position, ch in enumerate(word[1:], 1):
                if ch in spec.lookup:
                    return None, None  # ``command -v x`` prints where x is; it runs nothing
                if f"-{ch}" in spec.unsure:
                    return None, f"-{ch} changes where the wrapped command runs"
                if ch in spec.with_arg:
                    step = 2 if position == len(word) - 1 else 1
                    break
                if ch not in spec.flags:
                    return None, f"unknown option -{ch}"
            index += step
            continue
        if spec.assignments and (word == "-" or _is_assignment(word)):
            index += 1
            continue
        if positionals:
            positionals -= 1
            index += 1
            continue
        return index, None
    return None, None


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.replace("_", "a").isalnum() and not name[0].isdigit()
