"""Shell command analysis for the bash tool's permission requests (tree-sitter-bash; no shell-outs, no file access).

This module turns a command string into what the permission gate needs, and nothing else:

- one :class:`SimpleCommand` per ``command`` node anywhere in the tree (pipelines, ``&&``/``||``/``;`` lists,
  subshells, ``$(...)``, ``if``/``for``/``while`` bodies, function bodies), and per command that another command runs
  (``find -exec``, the literal text of ``sh -c``, ``eval``, ``alias``, ``trap``), with its source text (the whole
  statement when the command carries redirections), its **normalized forms** (as the shell will run it: quotes and
  escapes removed, a path reduced to its base name, each transparent wrapper stripped) and its "always" patterns
  from the prefix table (:data:`ARITY`, OpenCode's ``BashArity``);
- one resource per file redirection (``> f``, ``2>>f``, ``<> f``, ``< f``), so a statement that is only a
  redirection is asked like any other;
- the path arguments of file commands (:mod:`._shell_paths`) and of file redirections, expanded (``~``, ``$HOME``,
  quotes, braces; globs cut), marked as written or read, and made absolute against the working directory the shell
  will have at that point: ``cd`` chains move it, subshells and pipeline stages scope it, and a ``cd`` that may fail
  keeps the old directory possible (so ``cd /x; rm y`` considers both ``/x/y`` and ``./y``);
- :attr:`Analysis.unknown` when what runs cannot be known statically: a syntax error, a dynamic command word, a
  wrapper option this module does not know, ``eval``/``sh -c`` of non-literal text, ``python -c``/``node -e``,
  arithmetic on variables, ``${x@P}``, substitutions in a heredoc body, nesting past :data:`MAX_DEPTH`. The caller
  then adds the uncertain resource ``(uncertain) <text>``, which no narrow pattern matches;
- :attr:`Analysis.uncertain` when a path the shell will touch cannot be known statically (``rm $X``, ``cd $X && rm
  y``, ``~user``, an enormous brace expansion, file commands fed by ``xargs``): the caller then asks
  ``external_directory`` for the raw command text.

It deliberately does not decide containment or ask anything: paths are lexical and absolute, and the caller resolves
them against its Location (symlinks included).
"""

from __future__ import annotations

import itertools
import posixpath
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import tree_sitter
import tree_sitter_bash

from ._shell_paths import PATH_COMMANDS, option_effects, path_operands
from ._shell_wrappers import WRAPPERS, unwrap

__all__ = [
    "ARITY",
    "MAX_DEPTH",
    "UNCERTAIN_PREFIX",
    "Analysis",
    "PathArg",
    "SimpleCommand",
    "always_pattern",
    "analyze",
    "arity_prefix",
    "scan_unknown",
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

UNCERTAIN_PREFIX = "(uncertain) "
"""Starts the ``bash`` resource of text whose effect cannot be known statically: no narrow pattern matches it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SimpleCommand:
    """One simple command: its source ``text`` and its normalized ``forms``, each a ``bash`` resource.

    ``forms`` are the command as the shell will run it (quotes and escapes removed, a path reduced to its base name,
    each transparent wrapper stripped in turn: ``sudo nice rm -rf x`` gives ``nice rm -rf x`` and ``rm -rf x``), minus
    the ones equal to ``text``. ``save`` holds the "always" patterns (empty when the command is not known
    statically). ``changes_directory`` marks ``cd``-like commands, which ask no ``bash`` permission themselves.
    """

    text: str
    forms: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()
    name: str = ""
    save: tuple[str, ...] = ()
    changes_directory: bool = False
    name_pattern: tuple[str, str] | None = None
    """``(pattern, arguments)`` when the command word is a glob (``/bin/r? x``): the caller, which may look at the
    file system, adds a form per name the pattern matches there."""

    @property
    def resources(self) -> tuple[str, ...]:
        return () if self.changes_directory else (self.text, *self.forms)


@dataclass(frozen=True, kw_only=True, slots=True)
class PathArg:
    """An absolute, lexically normalised path a file command or redirection touches.

    ``role`` is ``"directory"`` when the path is a directory target (``cd x``); otherwise the path's own directory
    counts when it is an existing directory, else its parent. ``write`` is set when the command or redirection may
    create, change or delete it.
    """

    path: str
    role: PathRole
    source: str
    write: bool = False
    glob: bool = False
    """``path`` is a written glob pattern (unexpanded): it may match any name, a protected one included."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Analysis:
    """The permission-relevant facts of one command string."""

    command: str
    commands: tuple[SimpleCommand, ...] = ()
    redirects: tuple[str, ...] = ()
    """One ``bash`` resource per file redirection (its text and, if different, its normalized ``OP TARGET``)."""
    paths: tuple[PathArg, ...] = ()
    opaque: str | None = None
    """Why the command could not be parsed (``"syntax"``), or ``None``."""
    uncertain: tuple[str, ...] = ()
    """Why some touched path cannot be known statically (then ask ``external_directory`` for the raw text)."""
    unknown: tuple[str, ...] = ()
    """Why what runs cannot be known statically (then the ``bash`` request holds an uncertain resource)."""
    empty: bool = False
    """The text holds nothing to run (only whitespace and comments)."""

    @property
    def uncertain_resource(self) -> str | None:
        """``(uncertain) <raw text>`` when the text is opaque or runs something unknown, else ``None``."""
        if self.opaque is None and not self.unknown:
            return None
        return UNCERTAIN_PREFIX + self.command.strip()

    @property
    def resources(self) -> tuple[str, ...]:
        """The ``bash`` resources: each simple command's text and forms, each redirect, the uncertain resource.

        The raw text stands in when none of these exist but the text is not empty (``x=1``, ``cd sub``): never an
        empty list for something that runs.
        """
        found = [r for c in self.commands for r in c.resources]
        found.extend(self.redirects)
        uncertain = self.uncertain_resource
        if uncertain is not None:
            found.append(uncertain)
        out = tuple(dict.fromkeys(found))
        return out or (() if self.empty else (self.command.strip(),))

    @property
    def save(self) -> tuple[str, ...]:
        """The "always" patterns: the certain commands' prefix patterns and the redirects' exact texts.

        Nothing is saved for an uncertain resource (an "always" reply acts as "once" for it), and nothing at all when
        the text cannot be parsed.
        """
        if self.opaque is not None:
            return ()
        found = [p for c in self.commands if not c.changes_directory for p in c.save]
        found.extend(self.redirects)
        out = tuple(dict.fromkeys(found))
        if out or self.unknown or self.empty or any(not c.changes_directory for c in self.commands):
            return out
        return (self.command.strip(),)


# --- parsing -------------------------------------------------------------------------------------------------------

Node = tree_sitter.Node

_CWD_COMMANDS = frozenset({"cd", "chdir", "pushd", "popd"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "ash", "rbash"})
# Options of a shell that take an argument (``bash -o errexit -c x``): the argument is not the script.
_SHELL_ARG_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
# Commands whose ``-c``/``--command`` option is shell text (``su -c 'rm x'``).
_COMMAND_OPTION = frozenset({"su", "runuser", "script", "flock"})
# Interpreters that run program text given on the command line: that text is code we do not analyse.
_INLINE_CODE = {
    "node": frozenset({"-e", "--eval", "-p", "--print"}),
    "nodejs": frozenset({"-e", "--eval", "-p", "--print"}),
    "deno": frozenset({"eval"}),
    "perl": frozenset({"-e", "-E"}),
    "ruby": frozenset({"-e"}),
    "php": frozenset({"-r"}),
    "lua": frozenset({"-e"}),
}
# Builtins that take variable names: a name with a subscript holding a substitution runs it (``read 'a[$(x)]'``).
_NAME_BUILTINS = frozenset(
    "declare typeset local export readonly unset read printf mapfile readarray test [ wait getopts let".split()
)
# Variables whose value the shell expands again later (prompts, xtrace) or sources.
_EVALUATED_VARIABLES = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV"})
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
_READ_REDIRECTS = frozenset({"<"})
_FILE_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|", ">&", "<", "<>", "&>|"})
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero"})
_GLOB = "*?["
_MAX_BRACE = 1024
MAX_DEPTH = 64
"""Nesting of statements, substitutions and ``sh -c`` texts past which the analysis stops and the text is uncertain."""
_MAX_NESTED_TEXTS = 200


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


def _parse(text: str) -> Node:
    return _parser().parse(text.encode("utf-8", "surrogatepass")).root_node


def analyze(command: str, *, cwd: str, home: str) -> Analysis:
    """Analyse ``command`` as the shell would run it from ``cwd`` with ``$HOME`` = ``home``.

    Pure and deterministic: no filesystem access (``~user`` is not looked up), no subprocess. Text that is not valid
    shell is still walked as far as the parser got, so a ``deny`` rule matches the commands it could read.
    """
    root = _parse(command)
    statements = _named(root)
    walker = _Walker(home=home, cwd=posixpath.normpath(cwd), broken=root.has_error)
    opaque = "syntax" if root.has_error else None
    walker.unknown.extend(scan_unknown(root))
    walker.sequence(statements, frozenset({walker.cwd}))
    for view in _views(command):
        # Another reading of the same text where the parser and the shell disagree; every view's commands are
        # resources, so a deny matching any of them applies.
        other = _parse(view)
        opaque = opaque or ("syntax" if other.has_error else None)
        walker.broken = walker.broken or other.has_error
        walker.unknown.extend(scan_unknown(other))
        walker.sequence(_named(other), frozenset({walker.cwd}))
    commands: dict[tuple[str, tuple[str, ...]], SimpleCommand] = {}
    for item in walker.commands:
        commands.setdefault((item.text, item.forms), item)
    paths: dict[tuple[str, str, bool, bool], PathArg] = {}
    for arg in walker.paths:
        paths.setdefault((arg.path, arg.role, arg.write, arg.glob), arg)
    return Analysis(
        command=command,
        commands=tuple(commands.values()),
        redirects=tuple(dict.fromkeys(walker.redirects)),
        paths=tuple(paths.values()),
        opaque=opaque,
        uncertain=tuple(dict.fromkeys(walker.uncertain)),
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


def scan_unknown(root: Node) -> list[str]:
    """Why the tree under ``root`` may run code that no command node shows, one reason per construct found.

    Arithmetic on variables (``$((x))``, ``$[x]``, ``((x))``, ``${a[x]}``, ``a[x]=``, ``[[ $x -eq 1 ]]``) evaluates
    the variable's value as an expression, and an expression can hold ``a[$(cmd)]``; ``${x@P}`` and ``${!x}`` expand a
    value again; an unquoted heredoc body runs its ``$(...)`` and backticks, which the parser does not always see.
    Iterative, so no input depth can exhaust the interpreter's stack.
    """
    reasons: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        reason: str | None = None
        if kind == "arithmetic_expansion" or kind == "c_style_for_statement":
            if _has_variable(node):
                reason = "arithmetic on a variable evaluates its value"
        elif kind == "compound_statement" and _text(node).startswith("(("):
            if _has_variable(node):
                reason = "arithmetic on a variable evaluates its value"
        elif kind == "subscript":
            index = node.child_by_field_name("index")
            value = "" if index is None else _text(index).strip()
            if index is not None and value not in ("@", "*") and not value.lstrip("-").isdigit():
                reason = "an array index is evaluated as arithmetic"
        elif kind == "expansion":
            text = _text(node)
            if text.startswith("${!") or "@P" in text:
                reason = "an indirect or prompt expansion evaluates a value"
            elif _substring_evaluates(text):
                reason = "a substring offset or length is evaluated as arithmetic"
        elif (
            kind == "command_substitution"
            and _text(node).startswith("`")
            and _ESCAPED_IN_BACKTICKS.search(_text(node)[1:-1])
        ):
            # Inside backticks, ``\``` and ``\$`` lose their backslash before the text is run: the parser sees an
            # escaped argument where the shell sees a nested substitution.
            reason = "a substitution nested in backticks"
        elif (
            kind == "binary_expression"
            and node.parent is not None
            and node.parent.type == "test_command"
            and _text(node.parent).startswith("[[")
        ):
            operator = node.child_by_field_name("operator")
            if operator is not None and _text(operator) in _ARITH_TESTS and _has_variable(node):
                reason = "an arithmetic test evaluates its operands"
        elif kind == "heredoc_redirect":
            reason = _heredoc_reason(node)
        elif kind in ("word", "regex", "string_content") and _UNREAD_SUBSTITUTION.search(_text(node)):
            reason = "a substitution the parser did not read"
        if reason is not None:
            reasons.append(f"{reason}: {_clip(_text(node))}")
        stack.extend(node.children)
    return reasons


_BACKTICK_ESCAPE = re.compile(r"\\([\\`$])")
_ESCAPED_IN_BACKTICKS = re.compile(r"\\(?:`|\$[({\[])")
_PARAMETER = re.compile(r"\$\{#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:\[[^\]]*\])?")
_LITERAL_SUBSTRING = re.compile(r"\s*-?\d+\s*(?::\s*-?\d+\s*)?")


def _substring_evaluates(text: str) -> bool:
    """Whether ``${x:OFFSET:LENGTH}`` has an offset or length other than a literal number (evaluated as arithmetic,
    so ``${x:y}`` with ``y='a[$(cmd)]'`` runs ``cmd``). ``${x:-w}``, ``${x:=w}``, ``${x:?w}``, ``${x:+w}`` are not
    substrings."""
    head = _PARAMETER.match(text)
    if head is None:
        return False
    rest = text[head.end() : -1] if text.endswith("}") else text[head.end() :]
    if not rest.startswith(":") or rest[1:2] in ("-", "=", "?", "+"):
        return False
    return _LITERAL_SUBSTRING.fullmatch(rest[1:]) is None


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

_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_UNREAD_SUBSTITUTION = re.compile(r"(?<!\\)(?:`|\$\()")
_VARIABLE_TYPES = frozenset(
    {"variable_name", "simple_expansion", "expansion", "word", "command_substitution"}
)


def _has_variable(node: Node) -> bool:
    stack = list(node.named_children)
    while stack:
        child = stack.pop()
        if child.type in _VARIABLE_TYPES:
            if child.type == "word" and _text(child).lstrip("-").isdigit():
                continue
            return True
        stack.extend(child.named_children)
    return False


def _heredoc_reason(node: Node) -> str | None:
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    if start is None or any(q in _text(start) for q in "'\"\\"):
        return None  # a quoted delimiter: the body is literal
    body = "".join(_text(c) for c in node.children if c.type == "heredoc_body")
    if "`" in body or "$(" in body or "$[" in body or re.search(r"\$\{(?:!|[^}]*(?:\[|@P))", body):
        return "a heredoc body runs substitutions"
    return None


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


@dataclass(frozen=True, slots=True)
class _Word:
    """One word of a simple command: source text, static value (quotes removed), path value (``~`` expanded)."""

    raw: str
    value: str | None
    path: str | None
    glob: bool


def _pattern(lead: list[str], words: Sequence[str]) -> str:
    """The "always" pattern of ``words`` (their arity prefix and `` *``), after ``lead`` (wrappers, assignments)."""
    pattern = always_pattern(words) or ""
    return " ".join([*(w for w in lead if w), pattern])


def _form(name: str, words: Iterable[_Word]) -> str:
    return " ".join([name, *(w.value if w.value is not None else w.raw for w in words)])


@dataclass(slots=True)
class _Walker:
    home: str
    cwd: str
    commands: list[SimpleCommand] = field(default_factory=list[SimpleCommand])
    redirects: list[str] = field(default_factory=list[str])
    paths: list[PathArg] = field(default_factory=list[PathArg])
    seen: set[str | None] = field(default_factory=set[str | None])
    uncertain: list[str] = field(default_factory=list[str])
    unknown: list[str] = field(default_factory=list[str])
    depth: int = 0
    nested_texts: int = 0
    broken: bool = False
    """The text did not parse: every redirection counts as a write (the parser may have lost ``1<>``)."""

    # -- control flow ------------------------------------------------------------------------------------------------

    def sequence(self, nodes: Iterable[Node], cwds: Cwds) -> _Flow:
        flow = _Flow(cwds, cwds)
        for node in nodes:
            flow = self.walk(node, flow.any)
        return flow

    def walk(self, node: Node, cwds: Cwds) -> _Flow:
        if self.depth >= MAX_DEPTH:
            self.unknown.append(f"nested deeper than {MAX_DEPTH} levels: {_clip(_text(node))}")
            self.uncertain.append(f"nested deeper than {MAX_DEPTH} levels")
            return _Flow(cwds | {None}, cwds | {None})
        self.depth += 1
        try:
            return self._walk(node, cwds)
        finally:
            self.depth -= 1

    def _walk(self, node: Node, cwds: Cwds) -> _Flow:
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
            stages = _named(node)
            for index, child in enumerate(stages):
                self.walk(child, cwds)
                name = child.child_by_field_name("name") if child.type == "command" else None
                if index and name is not None and _text(name).rsplit("/", 1)[-1] in _SHELLS:
                    # ``echo rm x | bash``: uncertain already (a shell reading stdin); what is echoed is known.
                    code = self.echoed(_text(stages[index - 1]))
                    if code is not None:
                        self.nested(code, cwds, _text(node))
            return _Flow(cwds, cwds)
        if kind in _SCOPED:
            text = _text(node)
            if (
                kind == "command_substitution"
                and text.startswith("`")
                and _ESCAPED_IN_BACKTICKS.search(text[1:-1])
            ):
                # The shell removes ``\\`` before `` ` ``, ``$`` and ``\\`` inside backticks, then runs the text: read
                # it as the shell will (the parser saw the escapes as literal text).
                self.nested(_BACKTICK_ESCAPE.sub(r"\1", text[1:-1]), cwds, text)
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
        if kind == "variable_assignment":
            self.assignment(node)
        if kind == "ERROR":
            self.brace_command(node, cwds)
        return self.sequence(_named(node), cwds)

    def brace_command(self, node: Node, cwds: Cwds) -> None:
        """``{rm,x}``: a brace expansion as the first word is a command for the shell and a syntax error for the
        parser. Its expansion is analysed as a command (the text is already uncertain: it does not parse)."""
        children = node.children
        raw = node.text or b""
        for child, after in itertools.pairwise(children):
            if child.type != "{" or after.start_byte != child.end_byte:
                continue
            segment = raw[child.start_byte - node.start_byte :].decode("utf-8", "surrogateescape")
            segment = re.split(r"[;&|\n]", segment, maxsplit=1)[0].strip()
            head, *tail = segment.split()
            alternatives = _expand_braces(head) or []
            if len(alternatives) < 2:
                continue
            values = [*alternatives, *(_unescape(t) for t in tail)]
            self.run([_Word(raw=v, value=v, path=v, glob=False) for v in values], segment, cwds)

    def list_(self, node: Node, cwds: Cwds) -> _Flow:
        # ``a && b && c`` nests to the left: flatten it, so a long chain costs no stack depth.
        chain: list[tuple[str, Node]] = []
        current = node
        while current.type == "list" and len(current.children) >= 3:
            children = current.children
            for index in range(len(children) - 2, 0, -2):
                chain.append((children[index].type, children[index + 1]))
            current = children[0]
        chain.reverse()
        left = self.walk(current, cwds)
        for op, right_node in chain:
            if op == "&&":
                right = self.walk(right_node, left.ok)
                left = _Flow(right.ok, left.fail | right.fail)
            elif op == "||":
                right = self.walk(right_node, left.fail)
                left = _Flow(left.ok | right.ok, right.fail)
            else:
                left = self.walk(right_node, left.any)
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
        if node.type == "file_redirect" and (operator in _FILE_REDIRECTS or operator == ""):
            self.file_redirect(node, operator, cwds)
        for child in _named(node):
            if child.type not in ("file_descriptor", "heredoc_start", "heredoc_end", "heredoc_content"):
                self.walk(child, cwds)

    def file_redirect(self, node: Node, operator: str, cwds: Cwds) -> None:
        destination = node.child_by_field_name("destination")
        if destination is None:
            destination = next((c for c in _named(node) if c.type in _ARG_TYPES), None)
        if destination is None or destination.type not in _ARG_TYPES:
            return
        raw = _text(destination)
        if operator in (">&", "<&") and (raw == "-" or raw.isdigit()):
            return  # duplicating or closing a descriptor names no file
        source = _text(node).strip()
        values = list(self.values(destination, first=True))
        if values and all(v is not None and (v in _DEVICES or v.startswith("/dev/fd/")) for v, _ in values):
            return  # ``2>/dev/null`` writes nothing anywhere
        # An unrecognised operator (the parser lost ``1<>``) counts as a write: never under-report.
        write = operator not in _READ_REDIRECTS or "<>" in source or self.broken
        self.redirects.append(source)
        static = self.static(destination, first=False)
        if static is not None and operator and "<>" not in source:
            descriptor = next((_text(c) for c in node.children if c.type == "file_descriptor"), "")
            self.redirects.append(f"{descriptor}{operator} {static[0]}")
        for value, pattern in values:
            self.add_path(value, cwds, role="path", source=source, write=write, pattern=pattern)

    def assignment(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        if name is not None and _text(name) in _EVALUATED_VARIABLES:
            self.unknown.append(f"{_text(name)} is expanded again later: {_clip(_text(node))}")

    # -- simple commands ---------------------------------------------------------------------------------------------

    def command(self, node: Node, cwds: Cwds) -> _Flow:
        name_node = node.child_by_field_name("name")
        args: list[Node] = []
        for child in _named(node):
            if child.type == "command_name" or child.type in _ARG_TYPES:
                if child.type != "command_name":
                    args.append(child)
                # Command substitutions in the name or arguments run first, from the same directory.
                self.walk(child, cwds)
            else:
                self.walk(child, cwds)
        if name_node is None:
            return _Flow(cwds, cwds)
        parent = node.parent
        is_body = (
            parent is not None
            and parent.type == "redirected_statement"
            and (body := parent.child_by_field_name("body")) is not None
            and body.id == node.id
        )
        text = (_text(parent) if is_body and parent is not None else _text(node)).strip()
        words = [self.argword(name_node), *(self.argword(a) for a in args)]
        raw = node.text or b""
        lead = raw[: name_node.start_byte - node.start_byte].decode("utf-8", "surrogateescape").strip()
        return self.run(words, text, cwds, lead=lead)

    def argword(self, node: Node) -> _Word:
        if node.type == "command_name":
            names = _named(node)
            if len(names) != 1:
                return _Word(raw=_text(node), value=None, path=None, glob=False)
            node = names[0]
        raw = _text(node)
        plain = self.static(node, first=False)
        # The path value differs only by ``~`` expansion at the word's start or after ``--opt=``.
        path = self.static(node, first=True) if raw.startswith("~") or "=~" in raw else plain
        return _Word(
            raw=raw,
            value=None if plain is None else plain[0],
            path=None if path is None else path[0],
            glob=path is not None and path[1],
        )

    def run(self, words: list[_Word], text: str, cwds: Cwds, *, lead: str = "") -> _Flow:
        """Record one simple command given as words (a real one, or one run by ``find -exec``), then check it.

        ``lead`` is the source before the command name (``FOO=1``): the text's "always" pattern starts with it.
        """
        tokens = tuple(w.raw for w in words)
        clipped = _clip(text)
        if words[0].value is None:
            self.unknown.append(f"the command name is only known at run time: {clipped}")
            self.uncertain.append(f"the command name is only known at run time: {clipped}")
            self.commands.append(SimpleCommand(text=text, tokens=tokens))
            return _Flow(cwds, cwds)
        name = posixpath.basename(words[0].value) or words[0].value
        rest = words[1:]
        self.glob_name(words[0], rest, text, tokens)
        levels = [(name, rest)]
        offset = 1  # index in ``words`` of the first argument of the innermost command
        fed = False
        known = True
        while name in WRAPPERS:
            spec = WRAPPERS[name]
            index, unsure = unwrap(spec, [w.value for w in rest], 0)
            if unsure is not None:
                self.unknown.append(f"{unsure}: {clipped}")
                self.uncertain.append(f"{unsure}: {clipped}")
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
                self.unknown.append(f"the wrapped command is only known at run time: {clipped}")
                self.uncertain.append(f"the wrapped command is only known at run time: {clipped}")
                known = False
                break
            fed = fed or spec.stdin_operands
            self.glob_name(rest[index], rest[index + 1 :], text, tokens)
            value = rest[index].value or ""
            name = posixpath.basename(value) or value
            offset += index + 1
            rest = rest[index + 1 :]
            levels.append((name, rest))
        if name == "{" and known and rest:
            # ``time { rm x; }``, ``! { rm x; }``, ``coproc { rm x; }``: the parser reads the group's first command as
            # arguments of a command named ``{`` (and ``}`` as a command of its own). Its words are a command.
            self.nested(" ".join(w.raw for w in rest), cwds, text)
        forms = [_form(n, r) for n, r in levels]
        save: tuple[str, ...] = ()
        code = self.inner_code(name, rest, clipped) if known else None
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
            forms.extend(self.find_actions(rest, cwds))
        self.commands.append(
            SimpleCommand(
                text=text,
                forms=tuple(f for f in dict.fromkeys(forms) if f != text),
                tokens=tokens,
                name=name,
                save=save,
                changes_directory=name in _CWD_COMMANDS,
            )
        )
        if not known:
            return _Flow(cwds, cwds)
        if code is not None:
            self.nested(code, cwds, text)
        if fed and (name in PATH_COMMANDS or name in _CWD_COMMANDS):
            self.uncertain.append(f"the operands of {name} come from xargs' input: {clipped}")
        if name in _CWD_COMMANDS:
            return self.change_directory(name, rest, cwds, source=text)
        if name in _NAME_BUILTINS and any(
            ("[" in w.raw and w.value is None)
            or (w.value is not None and "[" in w.value and ("$(" in w.value or "`" in w.value))
            for w in rest
        ):
            self.unknown.append(f"a variable name with a subscript is evaluated: {clipped}")
        if name in PATH_COMMANDS:
            for operand in path_operands(name, [(w.path, w.glob) for w in rest]):
                if operand.value is None:
                    self.add_path(None, cwds, role="path", source=text, write=operand.write)
                    continue
                for value, pattern in self.expand(operand.value, operand.glob):
                    if not operand.matched:
                        pattern = None
                    self.add_path(value, cwds, role="path", source=text, write=operand.write, pattern=pattern)
        for effect in option_effects(name, [w.value for w in rest]):
            if effect.kind == "follows":
                self.uncertain.append(
                    f"{name} {effect.option} follows symbolic links, which may lead outside the project: {clipped}"
                )
                continue
            self.unknown.append(f"{name} {effect.option} runs another program: {clipped}")
            if effect.program:  # the program is a command of its own: a deny on it applies
                word = _Word(raw=effect.program, value=effect.program, path=effect.program, glob=False)
                self.run([word], effect.program, cwds)
        return _Flow(cwds, cwds)

    def glob_name(self, word: _Word, rest: list[_Word], text: str, tokens: tuple[str, ...]) -> None:
        """A command word that is a glob (``/bin/r? x``, ``/bin/[r]m x``) names a program we cannot know: unknown,
        with the pattern kept for the caller, which adds a form per program it matches on the file system."""
        if not word.glob or word.value is None or word.value in ("[", "[[", "{", "}"):
            return
        clipped = _clip(text)
        self.unknown.append(f"the command name is a pattern the shell expands: {clipped}")
        self.uncertain.append(f"the command name is a pattern the shell expands: {clipped}")
        alternatives = _expand_braces(word.value) or [word.value]
        if len(alternatives) > 1:  # ``x{a,b}`` runs ``xa xb``: the first word is the command
            expanded = [_Word(raw=a, value=a, path=a, glob=False) for a in alternatives[1:]]
            first = posixpath.basename(alternatives[0]) or alternatives[0]
            self.commands.append(
                SimpleCommand(text=text, forms=(_form(first, [*expanded, *rest]),), tokens=tokens)
            )
        for alternative in alternatives:
            if any(ch in alternative for ch in _GLOB):
                guess = posixpath.basename(alternative) or alternative
                self.commands.append(
                    SimpleCommand(
                        text=text,
                        forms=(_form(guess, rest),),
                        tokens=tokens,
                        name_pattern=(alternative, _form("", rest).strip()),
                    )
                )

    def inner_code(self, name: str, rest: list[_Word], clipped: str) -> str | None:
        """The shell text a command runs besides itself (``eval``, ``sh -c``, ``alias``, ``trap``), if any.

        Text only known at run time is recorded as unknown (and ``None`` returned).
        """
        values = [w.value for w in rest]
        if name == "eval":
            if any(v is None for v in values):
                self.unknown.append(f"eval of text only known at run time: {clipped}")
                return None
            return " ".join(v for v in values if v is not None)
        if name in ("alias", "trap"):
            if name == "trap" and (not values or values[0] in ("-", "-p", "-l", "")):
                return None
            found: list[str] = []
            for value in values if name == "alias" else values[:1]:
                if value is None:
                    self.unknown.append(f"{name} of text only known at run time: {clipped}")
                    return None
                found.append(value.partition("=")[2] if name == "alias" else value)
            return "\n".join(found) if found else None
        if name in _SHELLS:
            return self.shell_script(name, rest, clipped)
        if name in _COMMAND_OPTION:
            return self.command_option(name, rest, clipped)
        if name in ("mapfile", "readarray"):
            values = [w.value for w in rest]
            callbacks = [values[i + 1] for i, v in enumerate(values[:-1]) if v == "-C"]
            if any(c is None for c in callbacks):
                self.unknown.append(f"{name} -C runs text only known at run time: {clipped}")
                return None
            return "\n".join(c for c in callbacks if c) or None
        if name == "watch":
            operands = [w for w in rest if w.value is None or not w.value.startswith("-")]
            if any(w.value is None for w in operands):
                self.unknown.append(f"watch runs text only known at run time: {clipped}")
                return None
            return " ".join(w.value or "" for w in operands) or None
        if name in ("source", ".") and (
            not rest or rest[0].value is None or rest[0].value.startswith(("/dev/", "/proc/"))
        ):
            self.unknown.append(f"{name} runs text that is only known at run time: {clipped}")
            return None
        if name == "hash" and any(
            w.value is not None and w.value.startswith("-") and "p" in w.value for w in rest
        ):
            self.unknown.append(f"hash -p changes which program a name runs: {clipped}")
            return None
        if name == "git":
            return self.git_config(rest, clipped)
        python = name.startswith(("python", "pypy"))
        inline = _INLINE_CODE.get(name, frozenset({"-c"}) if python else None)
        if inline is None:
            return None
        for value in values:
            if value is None or value == "--":
                break
            clustered = python and value.startswith("-") and not value.startswith("--") and "c" in value[1:]
            if value in inline or clustered:
                self.unknown.append(f"{name} runs program text given on its command line: {clipped}")
                return None
        return None

    def git_config(self, rest: list[_Word], clipped: str) -> str | None:
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
                    self.unknown.append(f"git -c sets a configuration only known at run time: {clipped}")
                    return None
            elif value.startswith("--config-env"):
                self.unknown.append(
                    f"git --config-env takes a configuration value from the environment: {clipped}"
                )
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
            self.unknown.append(f"git -c {key} may name a command that git runs: {clipped}")
            if command:
                found.append(command)
        return "\n".join(found) or None

    def command_option(self, name: str, rest: list[_Word], clipped: str) -> str | None:
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
                    self.unknown.append(f"{name} -c runs text only known at run time: {clipped}")
                    return None
                return following.value
        return None

    def shell_script(self, name: str, rest: list[_Word], clipped: str) -> str | None:
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
            self.unknown.append(f"{name} runs a script file that is not analysed: {clipped}")
            raw = operand.raw
            if raw.startswith("<(") and raw.endswith(")"):
                return self.echoed(
                    raw[2:-1]
                )  # ``bash <(echo rm x)``: what is echoed is known, so a deny applies
            return None
        if has_c:
            if operand is None or operand.value is None:
                self.unknown.append(f"{name} -c runs text only known at run time: {clipped}")
                return None
            return operand.value
        if operand is None:
            self.unknown.append(f"{name} reads the commands to run from its input: {clipped}")
        return None

    def echoed(self, text: str) -> str | None:
        """The output of ``text`` when it is one ``echo`` or ``printf`` of static words (``echo rm x`` → ``rm x``)."""
        statements = _named(_parse(text))
        if len(statements) != 1 or statements[0].type != "command":
            return None
        command = statements[0]
        name = command.child_by_field_name("name")
        if name is None or _text(name) not in ("echo", "printf"):
            return None
        values: list[str] = []
        for child in _named(command):
            if child.type == "command_name":
                continue
            static = self.static(child, first=False)
            if static is None:
                return None
            values.append(static[0])
        while values and _text(name) == "echo" and values[0] in ("-n", "-e", "-E"):
            values.pop(0)
        return " ".join(values).replace("\\n", "\n") or None

    def nested(self, code: str, cwds: Cwds, source: str) -> None:
        """Analyse ``code`` (the literal text of ``eval``, ``sh -c``, ...) as part of this command."""
        self.nested_texts += 1
        if self.nested_texts > _MAX_NESTED_TEXTS:
            self.unknown.append(f"too many nested shell texts: {_clip(source)}")
            return
        root = _parse(code)
        if root.has_error:
            self.unknown.append(f"the shell text it runs is not valid shell: {_clip(source)}")
        self.unknown.extend(scan_unknown(root))
        self.depth += 1
        try:
            self.sequence(_named(root), cwds)
        finally:
            self.depth -= 1

    def find_actions(self, rest: list[_Word], cwds: Cwds) -> list[str]:
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
                    self.run(list(inner), " ".join(w.raw for w in inner), cwds)
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

    def change_directory(self, name: str, args: list[_Word], cwds: Cwds, *, source: str) -> _Flow:
        operands = [a for a in args if a.value is None or not a.value.startswith("-") or a.value == "-"]
        if name == "popd" or (name == "pushd" and not operands):
            target: Cwds = frozenset(self.seen)
            return _Flow(target, cwds)
        if not operands:
            values: list[str | None] = [self.home]
        elif operands[0].value == "-":
            values = [None]  # $OLDPWD
        elif operands[0].path is None:
            values = [None]
        else:
            expanded = list(self.expand(operands[0].path, operands[0].glob))
            if any(pattern is not None for _, pattern in expanded):
                self.uncertain.append(
                    f"a glob may name any directory, through symbolic links too: {_clip(source)}"
                )
            values = [value for value, _ in expanded]
        targets: set[str | None] = set()
        for value in values:
            for cwd in cwds:
                resolved = _join(cwd, value)
                targets.add(resolved)
                if resolved is not None:
                    self.paths.append(PathArg(path=resolved, role="directory", source=source))
        return _Flow(frozenset(targets), cwds)

    def add_path(
        self,
        value: str | None,
        cwds: Cwds,
        *,
        role: PathRole,
        source: str,
        write: bool = False,
        pattern: str | None = None,
    ) -> None:
        """Record ``value`` resolved from each of ``cwds``; ``pattern`` is the glob it was cut from, if any.

        A glob is not expanded (the analysis does not read the file system): any name it matches may be a symbolic
        link leading outside the project, so the path is uncertain; a written glob is also recorded whole (a
        :attr:`PathArg.glob`), which the caller asks as a protected write, since it may match ``.git/config``.
        """
        if value is None:
            self.uncertain.append(f"a path cannot be known before the command runs: {_clip(source)}")
            return
        if pattern is not None:
            self.uncertain.append(
                f"a glob may match a symbolic link that leads outside the project: {_clip(source)}"
            )
            if write:
                for cwd in cwds:
                    whole = _join(cwd, pattern)
                    if whole is not None:
                        self.paths.append(
                            PathArg(path=whole, role=role, source=source, write=True, glob=True)
                        )
        for cwd in cwds:
            resolved = _join(cwd, value)
            if resolved is None:
                self.uncertain.append(
                    f"a relative path follows a change to an unknown directory: {_clip(source)}"
                )
                continue
            if resolved in _DEVICES or resolved.startswith("/dev/fd/"):
                continue
            self.paths.append(PathArg(path=resolved, role=role, source=source, write=write))

    # -- word values -------------------------------------------------------------------------------------------------

    def values(self, node: Node, *, first: bool) -> Iterator[tuple[str | None, str | None]]:
        """The static values of an argument after expansion (``None`` for a dynamic value), globs cut (see
        :meth:`expand`)."""
        static = self.static(node, first=first)
        if static is None:
            yield None, None
            return
        yield from self.expand(*static)

    def expand(self, text: str, unquoted_glob: bool) -> Iterator[tuple[str | None, str | None]]:
        """Brace-expand ``text`` and cut globs: ``(value, pattern)`` pairs, ``pattern`` the uncut glob (or ``None``).

        The value is ``None`` (unknown) when the expansion is too large to enumerate.
        """
        if unquoted_glob:
            alternatives = _expand_braces(text)
            if alternatives is None:
                yield None, None
                return
        else:
            alternatives = [text]
        for expanded in alternatives:
            cut = min((i for i in (expanded.find(ch) for ch in _GLOB) if i >= 0), default=-1)
            if unquoted_glob and cut >= 0:
                pattern = expanded
                expanded = expanded[:cut] or "."
                if not expanded.endswith("/"):
                    expanded = posixpath.dirname(expanded) or "."
                yield expanded, pattern
            else:
                yield expanded, None

    def static(self, node: Node, *, first: bool) -> tuple[str, bool] | None:
        """``(value, has_unquoted_specials)`` for a statically known word, else ``None``.

        With ``first`` (a word's start, as a path), ``~`` and ``~/x`` expand to the home directory and ``~user`` is
        unknown: looking it up would read the password database, and the analysis stays pure.
        """
        kind = node.type
        if kind in ("word", "number"):
            raw = _text(node)
            if first and (raw == "~" or raw.startswith("~/")):
                raw = self.home + raw[1:]
            elif first and raw.startswith("~"):
                return None
            elif first and raw.startswith("-") and "=~" in raw:
                option, _, value = raw.partition("=~")
                if not value or value.startswith(
                    "/"
                ):  # ``--target-directory=~/x``: bash expands it after ``=``
                    raw = f"{option}={self.home}{value}"
            specials = any(ch in raw for ch in "*?[{")
            return _unescape(raw), specials
        if kind == "raw_string":
            return _text(node)[1:-1], False
        if kind == "ansi_c_string":
            decoded = _ansi_c(_text(node)[2:-1])
            return None if decoded is None else (decoded, False)
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


_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ANSI_SIMPLE.update({"v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"})


def _ansi_c(body: str) -> str | None:
    """The value of a ``$'...'`` string: C escapes, ``\\xHH`` and octal; ``None`` for what this does not decode.

    ``\\xHH`` and octal escapes are bytes, as bash makes them: the value is decoded with ``surrogateescape``, so a
    byte that is not UTF-8 (``$'\\xff'``) names the same file (``os.fsencode``) as the one bash opens.
    """
    out = bytearray()
    index = 0
    while index < len(body):
        ch = body[index]
        if ch != "\\":
            try:
                out += ch.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a lone surrogate in the text itself: uncertain rather than wrong
                return None
            index += 1
            continue
        nxt = body[index + 1 : index + 2]
        if nxt in _ANSI_SIMPLE:
            out += _ANSI_SIMPLE[nxt].encode()
            index += 2
        elif nxt == "x":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[index + 2 :])
            if digits is None:
                return None
            out.append(int(digits.group(), 16))
            index += 2 + len(digits.group())
        elif nxt.isdigit() and nxt < "8":
            digits = re.match(r"[0-7]{1,3}", body[index + 1 :])
            assert digits is not None
            out.append(int(digits.group(), 8) & 0xFF)
            index += 1 + len(digits.group())
        else:
            return None  # \\u, \\c and others: uncertain rather than wrong
    return out.decode("utf-8", "surrogateescape")


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
