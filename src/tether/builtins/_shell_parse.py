"""Shell command analysis for the bash tool's permission requests (tree-sitter-bash; no shell-outs, no file access).

This module turns a command string into what the permission gate needs, and nothing else:

- one :class:`SimpleCommand` per ``command`` node anywhere in the tree (pipelines, ``&&``/``||``/``;`` lists,
  subshells, ``$(...)``, ``if``/``for``/``while`` bodies, function bodies), and per command that another command runs
  (``find -exec``, the literal text of ``sh -c``, ``eval``, ``alias``, ``trap``), with its source text (the whole
  statement when the command carries redirections), its **normalized forms** (as the shell will run it: quotes and
  escapes removed, a path reduced to its base name, each transparent wrapper stripped) and its "always" patterns
  from the prefix table (``ARITY``, OpenCode's ``BashArity``);
- one resource per file redirection (``> f``, ``2>>f``, ``<> f``, ``< f``), so a statement that is only a
  redirection is asked like any other;
- the path arguments of file commands (:mod:`._shell_paths`) and of file redirections, expanded (``~``, ``$HOME``,
  quotes, braces; globs cut), marked as written or read, and made absolute against the working directory the shell
  will have at that point: ``cd`` chains move it, subshells and pipeline stages scope it, and a ``cd`` that may fail
  keeps the old directory possible (so ``cd /x; rm y`` considers both ``/x/y`` and ``./y``);
- :attr:`Analysis.unknown` when what runs cannot be known statically: a syntax error, a dynamic command word, a
  wrapper option this module does not know, ``eval``/``sh -c`` of non-literal text, ``python -c``/``node -e``,
  arithmetic on variables, ``${x@P}``, substitutions in a heredoc body, nesting past ``MAX_DEPTH`` (64). The
  caller then adds the uncertain resource ``(uncertain) <text>``, which no narrow pattern matches;
- :attr:`Analysis.uncertain` when a path the shell will touch cannot be known statically (``rm $X``, ``cd $X && rm
  y``, ``~user``, an enormous brace expansion, file commands fed by ``xargs``, program text such as ``python3 x.py``
  or ``make``, and every unknown above: what runs is not known, so neither is what it touches): the caller then asks
  ``external_directory`` for the raw command text.

It deliberately does not decide containment or ask anything: paths are lexical and absolute, and the caller resolves
them against its Location (symlinks included).

The parts, one concept each: :mod:`._shell_analysis` (the result types and the prefix table),
:mod:`._shell_tree` (tree-sitter parsing, node text, constructs no command node shows), :mod:`._shell_words` (the
static value of a word), :mod:`._shell_walk` (statements, lists, pipelines, loops, redirections, ``cd``),
:mod:`._shell_command` (one simple command: normalization, wrappers, patterns, paths), :mod:`._shell_inner`
(the text that ``eval``, ``sh -c``, ``su -c``, ``git -c`` run) and :mod:`._shell_programs` (program text of other
languages: interpreters, ``make``, ``awk``, ``sed``).
"""

from __future__ import annotations

import posixpath

from ._shell_analysis import Analysis, PathArg, SimpleCommand
from ._shell_tree import named, parse, scan_unknown
from ._shell_walk import Walker

__all__ = ["analyze"]


def analyze(command: str, *, cwd: str, home: str) -> Analysis:
    """Analyse ``command`` as the shell would run it from ``cwd`` with ``$HOME`` = ``home``.

    Pure and deterministic: no filesystem access (``~user`` is not looked up), no subprocess. Text that is not valid
    shell is still walked as far as the parser got, so a ``deny`` rule matches the commands it could read.
    """
    root = parse(command)
    statements = named(root)
    walker = Walker(home=home, cwd=posixpath.normpath(cwd), broken=root.has_error)
    opaque = "syntax" if root.has_error else None
    walker.unknown.extend(scan_unknown(root))
    walker.sequence(statements, frozenset({walker.cwd}))
    for view in _views(command):
        # Another reading of the same text where the parser and the shell disagree; every view's commands are
        # resources, so a deny matching any of them applies.
        other = parse(view)
        opaque = opaque or ("syntax" if other.has_error else None)
        walker.broken = walker.broken or other.has_error
        walker.unknown.extend(scan_unknown(other))
        walker.sequence(named(other), frozenset({walker.cwd}))
    commands: dict[tuple[str, tuple[str, ...]], SimpleCommand] = {}
    for item in walker.commands:
        commands.setdefault((item.text, item.forms), item)
    paths: dict[tuple[str, str, bool, bool], PathArg] = {}
    for arg in walker.paths:
        paths.setdefault((arg.path, arg.role, arg.write, arg.glob), arg)
    # What runs is not known, so neither is what it touches: every unknown is an uncertain path too (``eval $X``,
    # ``python3 -c``, text that does not parse), asked as ``echo x > $OUT`` is.
    uncertain = [*walker.uncertain, *walker.unknown]
    if opaque is not None:
        uncertain.append("the command is not valid shell")
    return Analysis(
        command=command,
        commands=tuple(commands.values()),
        redirects=tuple(dict.fromkeys(walker.redirects)),
        paths=tuple(paths.values()),
        opaque=opaque,
        uncertain=tuple(dict.fromkeys(uncertain)),
        unknown=tuple(dict.fromkeys(walker.unknown)),
        empty=not statements and opaque is None,
    )


def _views(command: str) -> list[str]:
    """Rewritings of ``command`` that the shell reads as the original but tree-sitter-bash reads differently.

    - The shell drops a backslash-newline before reading words (``r\\<newline>m`` is ``rm``); the parser keeps it.
    - A line that starts with a backslash (``true<newline>\\rm x``) is read by the parser as more arguments of the
      previous line; a space after the newline makes it read two commands, as the shell does.
    """
    views: list[str] = []
    joined = command.replace("\\\n", "") if "\\\n" in command else command
    if joined != command:
        views.append(joined)
    if "\n\\" in joined:
        views.append(joined.replace("\n\\", "\n \\"))
    return views
