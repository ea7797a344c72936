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
  then asks for the raw command text, never failing open.

It deliberately does not decide containment or ask anything: paths are lexical and absolute, and the caller resolves
them against its Location (symlinks included). Arguments whose value depends on the runtime (``$VAR`` other than
``$HOME``, ``$(...)``, backticks) cannot be resolved statically and are not path-checked, as in the reference; the
command text that contains them is still asked for under ``bash``. Commands run through ``eval`` or ``sh -c`` are
asked with their exact text as the "always" pattern, so approving them always cannot approve anything else.
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

    @property
    def resources(self) -> tuple[str, ...]:
        """The ``bash`` resources: one per simple command (cwd changers excluded), or the raw text when opaque."""
        if self.opaque is not None:
            return (self.command.strip(),)
        return tuple(dict.fromkeys(c.text for c in self.commands if c.always is not None))

    @property
    def save(self) -> tuple[str, ...]:
        """The "always" patterns: one per distinct command prefix, or the raw text when opaque."""
        if self.opaque is not None:
            return (self.command.strip(),)
        return tuple(dict.fromkeys(c.always for c in self.commands if c.always is not None))


# --- parsing -------------------------------------------------------------------------------------------------------

Node = tree_sitter.Node

_PATH_COMMANDS = frozenset({"rm", "cp", "mv", "mkdir", "touch", "chmod", "chown", "cat", "ln"})
_CWD_COMMANDS = frozenset({"cd", "chdir", "pushd", "popd"})
_WRAPPERS = frozenset({"command", "builtin", "exec", "nohup", "sudo", "env", "nice", "time", "doas", "xargs"})
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
    }
)
_SCOPED = frozenset({"subshell", "command_substitution", "process_substitution"})
_LOOPS = frozenset({"for_statement", "c_style_for_statement", "while_statement"})
_FILE_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|", ">&", "<", "<>"})
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero"})
_GLOB = "*?["
_MAX_BRACE = 64


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
    walker = _Walker(home=home, cwd=posixpath.normpath(cwd))
    walker.sequence(_named(root), frozenset({walker.cwd}))
    commands: dict[str, SimpleCommand] = {}
    for item in walker.commands:
        commands.setdefault(item.text, item)
    paths: dict[tuple[str, str], PathArg] = {}
    for arg in walker.paths:
        paths.setdefault((arg.path, arg.role), arg)
    return Analysis(command=command, commands=tuple(commands.values()), paths=tuple(paths.values()))


def _named(node: Node) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"]


def _text(node: Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "surrogatepass") if raw is not None else ""


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
                    self.add_path(value, cwds, role="path", source=_text(node))
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
        inner_name, start = name, 0
        while inner_name in _WRAPPERS:
            index = start
            while index < len(args) and (
                _text(args[index]).startswith("-") or (inner_name == "env" and "=" in _text(args[index]))
            ):
                index += 1
            if index >= len(args):
                break
            inner_name, start = _command_name(_text(args[index])), index + 1
        inner_args = args[start:]
        opaque = name == "eval" or inner_name == "eval" or (inner_name in _SHELLS and _has_c_flag(inner_args))
        if name in _CWD_COMMANDS:
            always = None
        elif opaque:
            always = text
        else:
            split = len(tokens) - len(inner_args) - 1 if start else 0
            always = always_pattern(tokens[split:])
            if split and always is not None:
                always = " ".join(tokens[:split]) + " " + always
        self.commands.append(SimpleCommand(text=text, tokens=tokens, name=name, always=always))
        if inner_name in _CWD_COMMANDS:
            return self.change_directory(inner_name, inner_args, cwds, source=text)
        if inner_name in _PATH_COMMANDS:
            for value in self.path_operands(inner_name, inner_args):
                self.add_path(value, cwds, role="path", source=text)
        return _Flow(cwds, cwds)

    def path_operands(self, name: str, args: list[Node]) -> Iterator[str | None]:
        operands_only = False
        for arg in args:
            raw = _text(arg)
            if not operands_only:
                if raw == "--":
                    operands_only = True
                    continue
                if raw.startswith("-") or (name == "chmod" and raw.startswith("+")):
                    continue
            yield from self.values(arg, first=True)

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
            return
        for cwd in cwds:
            resolved = _join(cwd, value)
            if resolved is None or resolved in _DEVICES or resolved.startswith("/dev/fd/"):
                continue
            self.paths.append(PathArg(path=resolved, role=role, source=source))

    # -- word values -------------------------------------------------------------------------------------------------

    def values(self, node: Node, *, first: bool) -> Iterator[str | None]:
        """The static values of an argument after expansion (``None`` for a dynamic value), globs cut."""
        static = self.static(node, first=first)
        if static is None:
            yield None
            return
        text, unquoted_glob = static
        for expanded in _expand_braces(text) if unquoted_glob else [text]:
            cut = min((i for i in (expanded.find(ch) for ch in _GLOB) if i >= 0), default=-1)
            if unquoted_glob and cut >= 0:
                expanded = expanded[:cut] or "."
                if not expanded.endswith("/"):
                    expanded = posixpath.dirname(expanded) or "."
            yield expanded

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


def _expand_braces(text: str) -> list[str]:
    """Bash brace expansion of ``a{b,c}d`` and ``{1..3}`` style words (bounded; unmatched braces stay literal)."""
    results = [text]
    for _ in range(_MAX_BRACE):
        changed = False
        expanded: list[str] = []
        for item in results:
            parts = _split_brace(item)
            if parts is None:
                expanded.append(item)
            else:
                changed = True
                expanded.extend(parts)
        results = expanded[:_MAX_BRACE]
        if not changed:
            break
    return results


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
                return [head + str(n) + tail for n in range(a, b + step, step)][:_MAX_BRACE]
            return [head + body + tail]
        start = text.find("{", start + 1)
    return None
