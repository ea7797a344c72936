"""Project trust in the CLI: the one path every command loads its config through, and ``tether trust``.

Every command finds its project the same way: :func:`tether.config.find_project` walks up from the directory it runs
in (``--dir`` or the current one) to the nearest ``.tether/``, ``tether.json`` or ``tether.jsonc``, else the git root;
trust is kept for that root. A project's config file is applied in full only when the project is trusted: saved with
``tether trust`` (or by answering ``y``/``yes`` to the question ``tether run`` asks once in a terminal; ``n``/``no``,
an empty line or Ctrl-D declines, any other answer is refused and asked again), or for one command with ``--trust``
or ``TETHER_TRUST=1``. Otherwise the config package keeps only what tightens, and each key it left out is printed
once on stderr, in one line naming the file, the key and the ``tether trust`` command that applies it.

The question ``tether run`` asks names everything trusting grants: the config keys, each MCP server the file would
start (its command line) or reach (its URL), and the project's tool files (``.tether/tools/*.py``: count and paths,
Python code that runs inside tether). A project with tool files and no config file is asked about too. It stands
between two rules, after a line per answer saying what it does (``y`` applies the file in full from now on, ``n``
keeps only what tightens and is remembered).

The interactive session asks it before its prompt reads anything, and never takes a message for an answer: lines
typed before the question appeared are not read as its answer, and a line that is not ``y``/``n`` is refused and
kept; both wait at the first prompt (``project_config(kept=...)``).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..config import Config, Ignored, Instructions, TrustStore, find_project, load_config, project_root
from ..config.internal import describe, servers
from ..storable import printable
from ._console import Output, err_console, fail, out_console, stdin_is_terminal
from ._format import shown

__all__ = ["TRUST_ENV", "print_refused", "project_config", "trust_command"]

TRUST_ENV = "TETHER_TRUST"
"""``TETHER_TRUST=1``: trust the project of this command (as ``--trust``), for scripts that know it."""


def _env_trust() -> bool:
    return os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes")


def project_config(
    data_dir: Path, directory: Path, *, trust: bool = False, ask: bool = False, kept: list[str] | None = None
) -> Config:
    """Load the merged config of the project at ``directory``, deciding its trust; print what was ignored.

    Args:
        data_dir: where the trust store lives.
        directory: the directory the command runs in; the project is the one it belongs to (``find_project``).
        trust: trust the project for this command (``--trust``); not saved.
        ask: ask in a terminal, once per project, whether to trust a project whose config sets what it may not.
        kept: the interactive session's: lines typed before the question or at it that are not answers are kept
            here (the first prompt shows them), never taken as the answer nor lost.

    Raises:
        ConfigError: a config file (or the trust file) is broken.
    """
    store = TrustStore(data_dir)
    root = find_project(directory)
    trusted = trust or _env_trust() or store.is_trusted(root)
    config = load_config(root, trusted=trusted)
    for line in config.refused:  # a config file that is not the user's own: never read, trusted or not
        Output(stderr=True).line(("warning: ", "yellow"), (printable(line), ""), soft_wrap=True)
    tools = [] if trusted else _tool_files(root)
    if not config.ignored and not tools:
        return config
    if ask and stdin_is_terminal() and not store.declined(root):
        if _ask(root, config.ignored, tools, kept):
            store.trust(root)
            Output(stderr=True).line(
                (printable(f"trusted {root} (undo: tether trust --remove {root})"), "dim")
            )
            return load_config(root, trusted=True)
        store.decline(root)
    _print_ignored(config.ignored)  # tool files not loaded are reported when the project opens (its notices)
    return config


def _tool_files(root: Path) -> list[Path]:
    from ..plugins.internal import project_tool_files  # not for `tether --help`

    return project_tool_files(root)


_SHOWN_FILES = 5


def trust_question(root: Path, ignored: tuple[Ignored, ...], tools: list[Path]) -> list[str]:
    """The trust question's lines: what the config sets, the MCP servers it would start or reach, the tool files it
    runs; the last ends with ``Trust it? [y/N]``."""
    lines: list[str] = []
    if ignored:
        file = ignored[0].file
        shown_file = file.relative_to(root) if file.is_relative_to(root) else file
        lines.append(f"This project's {shown_file} sets {describe(ignored)}.")
        found = servers(ignored)
        if found:
            lines.append(f"MCP servers tether would start (as you) or connect to: {'; '.join(found)}.")
    if tools:
        names = ", ".join(p.relative_to(root).as_posix() for p in tools[:_SHOWN_FILES])
        if len(tools) > _SHOWN_FILES:
            names += f" and {len(tools) - _SHOWN_FILES} more"
        count = f"{len(tools)} tool file{'s' if len(tools) != 1 else ''} ({names})"
        what = "Python code that runs inside tether, as you, every time tether opens this project"
        lead = "Trusting it also loads its" if ignored else "This project has"
        lines.append(f"{lead} {count}: {what}.")
    lines[-1] += " Trust it? [y/N] "
    return lines


def _consequences(root: Path) -> list[str]:
    """What each answer does, said before the question."""
    return [
        f"  y  trust it: its config (and tool files) apply in full, now and in every later run (undo: tether trust "
        f"--remove {root})",
        "  n  do not trust it (an empty line too): only what tightens applies, the rest is ignored with a warning; "
        f"not asked again (trust it later: tether trust {root})",
    ]


def _ask(root: Path, ignored: tuple[Ignored, ...], tools: list[Path], kept: list[str] | None) -> bool:
    from rich.rule import Rule  # a question on a terminal, where rich draws
    from rich.text import Text

    from ._choice import Choices, ask_choice_blocking, pending_lines, yes_no

    console = err_console()
    choices = yes_no()
    if kept is not None:
        # the interactive session: text typed before the question appeared, or typed at it, is a message, not an
        # answer: it waits at the first prompt
        kept.extend(pending_lines())
        choices = Choices(
            words=choices.words,
            accepted=f"{choices.accepted} (your text is kept for the prompt)",
            empty=choices.empty,
        )
    console.print(Rule("this project is not trusted", style="yellow", align="left"))
    for line in _consequences(root):
        console.print(shown(line, "yellow"), soft_wrap=True)
    # the names are the repository's: each line shown with its escapes visible, the lines joined by us
    question = Text("\n").join(shown(line, "yellow bold") for line in trust_question(root, ignored, tools))
    # read as a whole answer (``_choice``): "yep" or "yes please" is asked again, never saved as a decline
    answer = ask_choice_blocking(
        console, question, choices, again=Text("Trust it? [y/N] ", style="yellow bold"), kept=kept
    )
    console.print(Rule(style="yellow"))
    return answer


def _print_ignored(ignored: tuple[Ignored, ...]) -> None:
    output = Output(stderr=True)
    for notice in ignored:
        output.line(("warning: ", "yellow"), (printable(str(notice)), ""), soft_wrap=True)


def print_refused(instructions: Instructions) -> None:
    """Print one warning line per refused instruction file (on stderr)."""
    if not instructions.refused:
        return
    output = Output(stderr=True)
    for line in instructions.refused:
        output.line(("warning: ", "yellow"), (printable(line), ""), soft_wrap=True)


def trust_command(*, data_dir: Path, directory: Path | None, list_: bool, remove: Path | None) -> None:
    """The body of ``tether trust``.

    Raises:
        typer.Exit: code 2 for contradicting options, a missing directory, or a broken trust file.
    """
    from rich.text import Text

    from ..errors import ConfigError

    if list_ and (remove is not None or directory is not None):
        fail("--list takes no directory; pass it alone")
    if remove is not None and directory is not None:
        fail("--remove takes the directory itself: tether trust --remove DIR")
    store = TrustStore(data_dir)
    try:
        if list_:
            roots = store.trusted()
            if not roots:
                err_console().print("no trusted projects (trust one with: tether trust DIR)")
            for root in roots:
                out_console().print(Text(str(root)), soft_wrap=True)
            return
        if remove is not None:
            # the root itself (it may be gone), else the project an existing directory belongs to, as trust found it
            root = project_root(remove)
            if not store.remove(remove):
                root = find_project(remove) if remove.is_dir() else root
                if root == project_root(remove) or not store.remove(root):
                    fail(f"{project_root(remove)} is not a trusted project (see: tether trust --list)")
            out_console().print(Text(f"removed {root}"), soft_wrap=True)
            return
        target = (directory or Path.cwd()).expanduser()
        if not target.is_dir():
            fail(f"{target} is not a directory")
        root = store.trust(find_project(target))
    except ConfigError as exc:
        fail(f"configuration: {exc.message}")
    except OSError as exc:
        fail(f"cannot write {store.path}: {exc.strerror or exc}")
    out_console().print(
        Text(f"trusted {root}: its config and instruction files now apply in full"),
        soft_wrap=True,
    )
