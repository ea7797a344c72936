"""Shell command analysis for the bash tool's permission requests (tree-sitter-bash; no shell-outs).

This module turns a command string into what the permission gate needs, and nothing else:

- one :class:`SimpleCommand` per ``command`` node anywhere in the tree (pipelines, ``&&``/``||``/``;`` lists,
  subshells, ``$(...)``, ``if``/``for``/``while`` bodies, function bodies), with its source text (the whole
  statement when the command carries redirections) and its "always" pattern from the prefix table
  (:data:`ARITY`, OpenCode's ``BashArity``);
- the path arguments of file commands (``cd rm cp mv mkdir touch chmod chown cat ln``, plus ``pushd``/``chdir``) and
  of file redirections, expanded (``~``, ``$HOME``, quotes, braces; globs cut) and made absolute against the working
  directory the shell will have at that point: ``cd`` chains move it, subshells and pipeline stages scope it, and a
  ``cd`` that may fail keeps the old directory possible (so ``cd /x; rm y`` considers both ``/x/y`` and ``./y``);
- :attr:`Analysis.opaque` when the text is not valid shell (a syntax error, an unterminated heredoc): the caller
  then asks for the raw command text, never failing open;
- :attr:`Analysis.uncertain` when a path the shell will touch cannot be known statically: a file command's operand
  or a redirect target whose value depends on the runtime (``$VAR`` other than ``$HOME``, ``$(...)``, backticks), a
  relative one after the working directory became unknown (``cd $X``), a brace expansion too large to enumerate,
  a wrapper (``sudo``, ``env``, ``timeout``, ...) with options this module does not know or that move the working
  directory (``env -C``, ``sudo -D``), and file commands fed by ``xargs``. The caller then asks
  ``external_directory`` for the raw command text, so a person decides: never failing open.

It deliberately does not decide containment or ask anything: paths are lexical and absolute, and the caller resolves
them against its Location (symlinks included). Commands run through ``eval`` or ``sh -c`` are asked with their exact
text as the "always" pattern, so approving them always cannot approve anything else. A command that holds no simple
command at all but is not empty (``> file``, ``x=1``, ``cd sub``) is asked for under ``bash`` with its raw text.
"""

from __future__ import annotations

import itertools
import os
import posixpath
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import tree_sitter
import tree_sitter_bash

from ._shell_wrappers import WRAPPERS, unwrap

__all__ = [
    "ARITY",
    "Analysis",
    "PathArg",
    "SimpleCommand",
    "always_pattern",
    "analyze",
    "arity_prefix",
]

# --- the prefix table ("BashArity", permission/arity.ts) -----------------------------------------------------------

_ARITY_1 = "cat cd chmod chown cp echo env export grep kill killall ln ls mkdir mv ps pwd rm rmdir sleep source tail touch unset which"
_ARITY_2 = (
    "bazel brew bun cargo cdk cf cmake composer consul crictl deno docker eksctl firebase flyctl git go gradle helm "
    "heroku hugo ip kind kubectl kustomize make mc minikube mongosh mysql mvn ng npm nvm nx openssl pip pipenv pnpm "
    "poetry podman psql pulumi pyenv python rake rbenv redis-cli rustup serverless skaffold sls sst swift systemctl "
    "terraform tmux turbo ufw vault vercel volta wp yarn"
)
_ARITY_3 = (
    "aws az doctl gcloud gh sfdx",
    "bun run|bun x|cargo add|cargo run|consul kv|deno task|docker builder|docker compose|docker container|"
    "docker image|docker network|docker volume|eksctl create|git config|git remote|git stash|ip addr|ip link|ip netns|"
    "ip route|kind create|kubectl kustomize|kubectl rollout|mc admin|npm exec|npm init|npm run|npm view|openssl req|"
    "openssl x509|pnpm dlx|pnpm exec|pnpm run|podman container|podman image|pulumi stack|terraform workspace|"
    "vault auth|vault kv|yarn dlx|yarn run",
)

ARITY: dict[str, int] = {
    **dict.fromkeys(_ARITY_1.split(), 1),
    **dict.fromkeys(_ARITY_2.split(), 2),
    **dict.fromkeys(_ARITY_3[0].split(), 3),
    **dict.fromkeys(_ARITY_3[1].split("|"), 3),
}
"""Command prefix → how many leading tokens make up the "human command" (longest matching prefix wins)."""

_MAX_PREFIX_WORDS = max(key.count(" ") + 1 for key in ARITY)


def arity_prefix(tokens: Iterable[str]) -> tuple[str, ...]:
    """The leading tokens that name the command: the longest prefix in :data:`ARITY` decides how many (default 1).

    Flags are not skipped, as in the reference: ``git -C x status`` → ``("git", "-C")``.
    """
    words = tuple(tokens)
    for size in range(min(len(words), _MAX_PREFIX_WORDS), 0, -1):
        arity = ARITY.get(" ".join(words[:size]))
        if arity is not None:
            return words[:arity]
    return words[:1]


def always_pattern(tokens: Iterable[str]) -> str | None:
    """The "always" pattern for a command: its :func:`arity_prefix` followed by ``" *"`` (``None`` without tokens)."""
    prefix = arity_prefix(tokens)
    return " ".join(prefix) + " *" if prefix else None


# --- results -------------------------------------------------------------------------------------------------------

PathRole = Literal["path", "directory"]


@dataclass(frozen=True, kw_only=True, slots=True)
class SimpleCommand:
    """One simple command: ``text`` is the permission resource, ``always`` the pattern an "always" reply saves.

    ``always`` is ``None`` for working-directory changers (``cd``), which ask no ``bash`` permission themselves.
    """

    text: str
    tokens: tuple[str, ...]
    name: str
    always: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class PathArg:
    """An absolute, lexically normalised path a file command or redirection touches.

    ``role`` is ``"directory"`` when the path is a directory target (``cd x``); otherwise the path's own directory
    counts when it is an existing directory, else its parent.
    """

    path: str
    role: PathRole
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Analysis:
    """The permission-relevant facts of one command string."""

    command: str
    commands: tuple[SimpleCommand, ...] = ()
    paths: tuple[PathArg, ...] = ()
    opaque: str | None = None
    """Why the command could not be analysed (then ask for the raw text), or ``None``."""
    uncertain: tuple[str, ...] = ()
    """Why some touched path cannot be known statically (then ask ``external_directory`` for the raw text)."""
    empty: bool = False
    """The text holds nothing to run (only whitespace and comments)."""

    @property
    def resources(self) -> tuple[str, ...]:
        """The ``bash`` resources: one per simple command (cwd changers excluded), else the raw text.

        The raw text stands in when the command is opaque, and when it holds no simple command but is not empty
        (``> file`` truncates a file without any command): never an empty list for something that runs.
        """
        if self.opaque is not None:
            return (self.command.strip(),)
        found = tuple(dict.fromkeys(c.text for c in self.commands if c.always is not None))
        return found or (() if self.empty else (self.command.strip(),))

    @property
    def save(self) -> tuple[str, ...]:
        """The "always" patterns: one per distinct command prefix, or the raw text when the resource is raw text."""
        if self.opaque is not None:
            return (self.command.strip(),)
        found = tuple(dict.fromkeys(c.always for c in self.commands if c.always is not None))
        return found or (() if self.empty else (self.command.strip(),))


# --- parsing -------------------------------------------------------------------------------------------------------

Node = tree_sitter.Node

_PATH_COMMANDS = frozenset({"rm", "cp", "mv", "mkdir", "touch", "chmod", "chown", "cat", "ln"})
_CWD_COMMANDS = frozenset({"cd", "chdir", "pushd", "popd"})


# Short options of file commands that take an argument, which may be attached (``cp -t../dir``, ``touch -rFILE``).
_PATH_OPTION_ARGS = {"cp": "tS", "mv": "tS", "ln": "tS", "touch": "rdt", "mkdir": "m"}
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "busybox"})
_ARG_TYPES = frozenset(
    {
        "word",
        "string",
        "raw_string",
        "ansi_c_string",
        "translated_string",
        "concatenation",
        "number",
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "brace_expression",
    }
)
_SCOPED = frozenset({"subshell", "command_substitution", "process_substitution"})
_LOOPS = frozenset({"for_statement", "c_style_for_statement", "while_statement"})
_FILE_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|", ">&", "<", "<>"})
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero"})
_GLOB = "*?["
_MAX_BRACE = 1024


@cache
def _language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_bash.language())


_local = threading.local()


def _parser() -> tree_sitter.Parser:
    # A parser is not safe to share between threads, and analysis runs in worker threads: one per thread.
    parser: tree_sitter.Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = tree_sitter.Parser(_language())
    return parser


def analyze(command: str, *, cwd: str, home: str) -> Analysis:
    """Analyse ``command`` as the shell would run it from ``cwd`` with ``$HOME`` = ``home``.

    Pure and deterministic: no filesystem access, no subprocess.
    """
    tree = _parser().parse(command.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    if root.has_error:
        return Analysis(command=command, opaque="syntax")
    statements = _named(root)
    walker = _Walker(home=home, cwd=posixpath.normpath(cwd))
    walker.sequence(statements, frozenset({walker.cwd}))
    commands: dict[str, SimpleCommand] = {}
    for item in walker.commands:
        commands.setdefault(item.text, item)
    paths: dict[tuple[str, str], PathArg] = {}
    for arg in walker.paths:
        paths.setdefault((arg.path, arg.role), arg)
    return Analysis(
        command=command,
        commands=tuple(commands.values()),
        paths=tuple(paths.values()),
        uncertain=tuple(dict.fromkeys(walker.uncertain)),
        empty=not statements,
    )


def _named(node: Node) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"]


def _text(node: Node) -> str:
    raw = node.text
    if raw is None:
        return ""
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # a node boundary inside an encoded (lone) surrogate
        return raw.decode("utf-8", "surrogateescape")


# A set of the working directories the shell may have; ``None`` stands for one we cannot know (``cd $X``).
Cwds = frozenset[str | None]


@dataclass(frozen=True, slots=True)
class _Flow:
    ok: Cwds
    fail: Cwds

    @property
    def any(self) -> Cwds:
        return self.ok | self.fail


@dataclass(slots=True)
class _Walker:
    home: str
    cwd: str
    commands: list[SimpleCommand] = field(default_factory=list[SimpleCommand])
    paths: list[PathArg] = field(default_factory=list[PathArg])
    seen: set[str | None] = field(default_factory=set[str | None])
    uncertain: list[str] = field(default_factory=list[str])

    # -- control flow ------------------------------------------------------------------------------------------------

    def sequence(self, nodes: Iterable[Node], cwds: Cwds) -> _Flow:
        flow = _Flow(cwds, cwds)
        for node in nodes:
            flow = self.walk(node, flow.any)
        return flow

    def walk(self, node: Node, cwds: Cwds) -> _Flow:
        self.seen.update(cwds)
        kind = node.type
        if kind == "command":
            return self.command(node, cwds)
        if kind == "list":
            return self.list_(node, cwds)
        if kind == "redirected_statement":
            return self.redirected(node, cwds)
        if kind == "negated_command":
            inner = self.sequence(_named(node), cwds)
            return _Flow(inner.fail, inner.ok)
        if kind == "pipeline":
            # Each pipeline stage runs in its own process: a ``cd`` inside one does not leak out.
            for child in _named(node):
                self.walk(child, cwds)
            return _Flow(cwds, cwds)
        if kind in _SCOPED:
            self.sequence(_named(node), cwds)
            return _Flow(cwds, cwds)
        if kind in _LOOPS:
            return self.loop(node, cwds)
        if kind == "function_definition":
            self.sequence(_named(node), cwds)
            return _Flow(cwds, cwds)
        if kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            self.redirect(node, cwds)
            return _Flow(cwds, cwds)
        return self.sequence(_named(node), cwds)

    def list_(self, node: Node, cwds: Cwds) -> _Flow:
        children = node.children
        left = self.walk(children[0], cwds)
        for index in range(1, len(children) - 1, 2):
            op = children[index].type
            if op == "&&":
                right = self.walk(children[index + 1], left.ok)
                left = _Flow(right.ok, left.fail | right.fail)
            elif op == "||":
                right = self.walk(children[index + 1], left.fail)
                left = _Flow(left.ok | right.ok, right.fail)
            else:
                left = self.walk(children[index + 1], left.any)
        return left

    def loop(self, node: Node, cwds: Cwds) -> _Flow:
        # A body may run many times: iterate to a fixed point, then give up on knowing the directory.
        current = cwds
        for _ in range(4):
            after = self.sequence(_named(node), current).any | current
            if after == current:
                return _Flow(current, current)
            current = after
        return _Flow(current | {None}, current | {None})

    def redirected(self, node: Node, cwds: Cwds) -> _Flow:
        body = node.child_by_field_name("body")
        flow = self.walk(body, cwds) if body is not None else _Flow(cwds, cwds)
        # tree-sitter attaches a trailing redirect to a whole list (``cd x && cmd > f``): consider every directory
        # the body may have moved through.
        around = cwds | flow.any
        for child in _named(node):
            if body is None or child.id != body.id:
                self.walk(child, around)
        return flow

    def redirect(self, node: Node, cwds: Cwds) -> None:
        operator = next((c.type for c in node.children if not c.is_named), "")
        for child in _named(node):
            if child.type in ("file_descriptor", "heredoc_start", "heredoc_end", "heredoc_content"):
                continue
            if (
                operator in _FILE_REDIRECTS
                and child.type in _ARG_TYPES
                and child.type != "number"
                and _text(child) != "-"
            ):
                for value in self.values(child, first=True):
                    self.add_path(value, cwds, role="path", source=_text(node).strip())
            self.walk(child, cwds)

    # -- simple commands ---------------------------------------------------------------------------------------------

    def command(self, node: Node, cwds: Cwds) -> _Flow:
        name_node = node.child_by_field_name("name")
        args: list[Node] = []
        for child in _named(node):
            if child.type == "command_name" or child.type in _ARG_TYPES:
                if child.type != "command_name":
                    args.append(child)
                # Command substitutions in the name or arguments run first, from the same directory.
                self.sequence(_named(child), cwds)
            else:
                self.walk(child, cwds)
        if name_node is None:
            return _Flow(cwds, cwds)
        tokens = (_text(name_node), *(_text(a) for a in args))
        name = _command_name(tokens[0])
        parent = node.parent
        is_body = (
            parent is not None
            and parent.type == "redirected_statement"
            and (body := parent.child_by_field_name("body")) is not None
            and body.id == node.id
        )
        text = (_text(parent) if is_body and parent is not None else _text(node)).strip()
        # Look through wrappers (``sudo rm``, ``command cd``): the path check applies to the wrapped command, and
        # the "always" pattern extends to its prefix, so approving ``sudo rm *`` is not approving ``sudo *``.
        words = [self.word(a) for a in args]
        inner_name, start = name, 0
        unsure = (
            None
            if self.word(name_node) is not None
            else f"the command name is only known at run time: {_clip(text)}"
        )
        fed = False
        while unsure is None and inner_name in WRAPPERS:
            spec = WRAPPERS[inner_name]
            index, unsure = unwrap(spec, words, start)
            if index is None:
                break
            fed = fed or spec.stdin_operands
            word = words[index]
            if word is None:
                unsure = f"the wrapped command is only known at run time: {_clip(text)}"
                break
            inner_name, start = _command_name(word), index + 1
        if unsure is not None:
            self.uncertain.append(f"{unsure}: {_clip(text)}" if not unsure.endswith(_clip(text)) else unsure)
        elif fed and inner_name in _PATH_COMMANDS | _CWD_COMMANDS:
            self.uncertain.append(f"the operands of {inner_name} come from xargs' input: {_clip(text)}")
        inner_args = args[start:]
        opaque = name == "eval" or inner_name == "eval" or (inner_name in _SHELLS and _has_c_flag(inner_args))
        if name in _CWD_COMMANDS:
            always = None
        elif opaque or unsure is not None:
            # Where the wrapped command starts is unknown: only the exact text may be approved "always".
            always = text
        else:
            split = len(tokens) - len(inner_args) - 1 if start else 0
            always = always_pattern(tokens[split:])
            if split and always is not None:
                always = " ".join(tokens[:split]) + " " + always
        self.commands.append(SimpleCommand(text=text, tokens=tokens, name=name, always=always))
        if unsure is not None:
            return _Flow(cwds, cwds)
        if inner_name in _CWD_COMMANDS:
            return self.change_directory(inner_name, inner_args, cwds, source=text)
        if inner_name in _PATH_COMMANDS:
            for value in self.path_operands(inner_name, inner_args):
                self.add_path(value, cwds, role="path", source=text)
        return _Flow(cwds, cwds)

    def word(self, node: Node) -> str | None:
        """The static text of a word with quotes removed (no ``~`` expansion), ``None`` when dynamic."""
        if node.type == "command_name":
            names = _named(node)
            return self.word(names[0]) if len(names) == 1 else None
        static = self.static(node, first=False)
        return static[0] if static is not None else None

    def path_operands(self, name: str, args: list[Node]) -> Iterator[str | None]:
        """Every value that may name a path: operands, ``--opt=value`` values, attached short option arguments.

        Over-reporting is harmless (a non-path such as ``--preserve=mode`` resolves inside the project and asks
        nothing); under-reporting is not.
        """
        operands_only = False
        attached = _PATH_OPTION_ARGS.get(name, "")
        for arg in args:
            static = self.static(arg, first=True)
            if static is None:
                yield None
                continue
            text, specials = static
            if not operands_only:
                if text == "--":
                    operands_only = True
                    continue
                if text.startswith("--"):
                    option, eq, value = text.partition("=")
                    if eq and option != "--":
                        yield from self.expand(self.tilde(value), specials)
                    continue
                if text.startswith("-") or (name == "chmod" and text.startswith("+")):
                    for position, ch in enumerate(text[1:-1], 1):
                        if ch in attached:
                            yield from self.expand(text[position + 1 :], specials)
                            break
                    continue
            yield from self.expand(text, specials)

    def change_directory(self, name: str, args: list[Node], cwds: Cwds, *, source: str) -> _Flow:
        operands = [a for a in args if not _text(a).startswith("-") or _text(a) == "-"]
        if name == "popd" or (name == "pushd" and not operands):
            target: Cwds = frozenset(self.seen)
            return _Flow(target, cwds)
        if not operands:
            values: list[str | None] = [self.home]
        elif _text(operands[0]) == "-":
            values = [None]  # $OLDPWD
        else:
            values = list(self.values(operands[0], first=True))
        targets: set[str | None] = set()
        for value in values:
            for cwd in cwds:
                resolved = _join(cwd, value)
                targets.add(resolved)
                if resolved is not None:
                    self.paths.append(PathArg(path=resolved, role="directory", source=source))
        return _Flow(frozenset(targets), cwds)

    def add_path(self, value: str | None, cwds: Cwds, *, role: PathRole, source: str) -> None:
        if value is None:
            self.uncertain.append(f"a path cannot be known before the command runs: {_clip(source)}")
            return
        for cwd in cwds:
            resolved = _join(cwd, value)
            if resolved is None:
                self.uncertain.append(
                    f"a relative path follows a change to an unknown directory: {_clip(source)}"
                )
                continue
            if resolved in _DEVICES or resolved.startswith("/dev/fd/"):
                continue
            self.paths.append(PathArg(path=resolved, role=role, source=source))

    # -- word values -------------------------------------------------------------------------------------------------

    def values(self, node: Node, *, first: bool) -> Iterator[str | None]:
        """The static values of an argument after expansion (``None`` for a dynamic value), globs cut."""
        static = self.static(node, first=first)
        if static is None:
            yield None
            return
        yield from self.expand(*static)

    def expand(self, text: str, unquoted_glob: bool) -> Iterator[str | None]:
        """Brace-expand ``text`` and cut globs; ``None`` (unknown) when the expansion is too large to enumerate."""
        if unquoted_glob:
            alternatives = _expand_braces(text)
            if alternatives is None:
                yield None
                return
        else:
            alternatives = [text]
        for expanded in alternatives:
            cut = min((i for i in (expanded.find(ch) for ch in _GLOB) if i >= 0), default=-1)
            if unquoted_glob and cut >= 0:
                expanded = expanded[:cut] or "."
                if not expanded.endswith("/"):
                    expanded = posixpath.dirname(expanded) or "."
            yield expanded

    def tilde(self, value: str) -> str:
        """``~`` expansion of an option value (``--target-directory=~/x``): bash expands it after ``=``."""
        return self.home + value[1:] if value == "~" or value.startswith("~/") else value

    def static(self, node: Node, *, first: bool) -> tuple[str, bool] | None:
        """``(value, has_unquoted_specials)`` for a statically known word, else ``None``."""
        kind = node.type
        if kind in ("word", "number"):
            raw = _text(node)
            if first and (raw == "~" or raw.startswith("~/")):
                raw = self.home + raw[1:]
            elif first and raw.startswith("~"):
                user = raw[1:].split("/", 1)[0]
                expanded = os.path.expanduser("~" + user)
                raw = expanded + raw[1 + len(user) :] if not expanded.startswith("~") else raw
            specials = any(ch in raw for ch in "*?[{")
            return _unescape(raw), specials
        if kind == "raw_string":
            return _text(node)[1:-1], False
        if kind == "brace_expression":  # ``{1..3}``: expanded by :meth:`expand`
            return _text(node), True
        if kind == "string":
            parts: list[str] = []
            for child in _named(node):
                if child.type == "string_content":
                    parts.append(_unescape_dquoted(_text(child)))
                elif _is_home(child):
                    parts.append(self.home)
                else:
                    return None
            return "".join(parts), False
        if kind in ("simple_expansion", "expansion") and _is_home(node):
            return self.home, False
        if kind == "concatenation":
            out: list[str] = []
            specials = False
            for index, child in enumerate(_named(node)):
                part = self.static(child, first=first and index == 0)
                if part is None:
                    return None
                out.append(part[0])
                specials = specials or part[1]
            return "".join(out), specials
        return None


def _clip(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 120 and "\n" not in text.strip() else line[:120] + "..."


def _is_home(node: Node) -> bool:
    if node.type not in ("simple_expansion", "expansion"):
        return False
    names = _named(node)
    return len(names) == 1 and names[0].type == "variable_name" and _text(names[0]) == "HOME"


def _command_name(token: str) -> str:
    name = token
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"":
        name = name[1:-1]
    return posixpath.basename(name.lstrip("\\"))


def _has_c_flag(args: list[Node]) -> bool:
    for arg in args:
        raw = _text(arg)
        if not raw.startswith("-"):
            return False
        if not raw.startswith("--") and "c" in raw[1:]:
            return True
    return False


def _join(cwd: str | None, value: str | None) -> str | None:
    if value is None:
        return None
    if value.startswith("/"):
        return posixpath.normpath(value)
    if cwd is None:
        return None
    return posixpath.normpath(posixpath.join(cwd, value))


def _unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    chars = iter(raw)
    for ch in chars:
        out.append(next(chars, "") if ch == "\\" else ch)
    return "".join(out)


def _unescape_dquoted(raw: str) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    index = 0
    while index < len(raw):
        ch = raw[index]
        if ch == "\\" and index + 1 < len(raw) and raw[index + 1] in '$`"\\\n':
            out.append(raw[index + 1])
            index += 2
            continue
        out.append(ch)
        index += 1
    return "".join(out)


def _expand_braces(text: str) -> list[str] | None:
    """Bash brace expansion of ``a{b,c}d`` and ``{1..3}`` style words; unmatched braces stay literal.

    ``None`` when the expansion would exceed :data:`_MAX_BRACE` words: never a truncated list, whose missing words
    would go unchecked.
    """
    results = [text]
    while True:
        changed = False
        expanded: list[str] = []
        for item in results:
            try:
                parts = _split_brace(item)
            except _BraceOverflow:
                return None
            if parts is None:
                expanded.append(item)
            else:
                changed = True
                expanded.extend(parts)
            if len(expanded) > _MAX_BRACE:
                return None
        results = expanded
        if not changed:
            return results


class _BraceOverflow(Exception):
    pass


def _split_brace(text: str) -> list[str] | None:
    start = text.find("{")
    while start >= 0:
        depth, commas, end = 0, list[int](), -1
        for index in range(start, len(text)):
            ch = text[index]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = index
                    break
            elif ch == "," and depth == 1:
                commas.append(index)
        if end < 0:
            return None
        head, body, tail = text[:start], text[start + 1 : end], text[end + 1 :]
        if commas:
            bounds = [start, *commas, end]
            return [head + text[a + 1 : b] + tail for a, b in itertools.pairwise(bounds)]
        if ".." in body:
            lo, _, hi = body.partition("..")
            if lo.lstrip("-").isdigit() and hi.lstrip("-").isdigit():
                a, b = int(lo), int(hi)
                step = 1 if b >= a else -1
                if abs(b - a) >= _MAX_BRACE:
                    raise _BraceOverflow
                return [head + str(n) + tail for n in range(a, b + step, step)]
            return [head + body + tail]
        start = text.find("{", start + 1)
    return None
