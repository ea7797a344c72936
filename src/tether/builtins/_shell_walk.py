"""The walk over a parsed command string: statements, lists, pipelines, loops, subshells, redirections, ``cd``.

:class:`Walker` visits every node that runs something, tracking the set of working directories the shell may have at
each point (``cd`` chains move it, subshells and pipeline stages scope it, a ``cd`` that may fail keeps the old one
possible), and collects what :func:`._shell_parse.analyze` returns: the simple commands (each recorded by
:func:`._shell_command.run`), the file redirections, the paths, and why anything is uncertain or unknown.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ._shell_analysis import PathArg, PathRole, SimpleCommand
from ._shell_command import run
from ._shell_flow import Cwds, Flow
from ._shell_inner import SHELLS, echoed
from ._shell_tree import (
    BACKTICK_ESCAPE,
    ESCAPED_IN_BACKTICKS,
    Node,
    clip,
    named,
    node_text,
    parse,
    scan_unknown,
)
from ._shell_words import DEVICES, Word, argword, expand, expand_braces, join, static, unescape, values

__all__ = ["MAX_DEPTH", "Cwds", "Flow", "Walker"]

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
MAX_DEPTH = 64
"""Nesting of statements, substitutions and ``sh -c`` texts past which the analysis stops and the text is uncertain."""
_MAX_NESTED_TEXTS = 200


@dataclass(slots=True)
class Walker:
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

    def sequence(self, nodes: Iterable[Node], cwds: Cwds) -> Flow:
        flow = Flow(cwds, cwds)
        for node in nodes:
            flow = self.walk(node, flow.any)
        return flow

    def walk(self, node: Node, cwds: Cwds) -> Flow:
        if self.depth >= MAX_DEPTH:
            self.unknown.append(f"nested deeper than {MAX_DEPTH} levels: {clip(node_text(node))}")
            self.uncertain.append(f"nested deeper than {MAX_DEPTH} levels")
            return Flow(cwds | {None}, cwds | {None})
        self.depth += 1
        try:
            return self._walk(node, cwds)
        finally:
            self.depth -= 1

    def _walk(self, node: Node, cwds: Cwds) -> Flow:
        self.seen.update(cwds)
        kind = node.type
        if kind == "command":
            return self.command(node, cwds)
        if kind == "list":
            return self.list_(node, cwds)
        if kind == "redirected_statement":
            return self.redirected(node, cwds)
        if kind == "negated_command":
            inner = self.sequence(named(node), cwds)
            return Flow(inner.fail, inner.ok)
        if kind == "pipeline":
            # Each pipeline stage runs in its own process: a ``cd`` inside one does not leak out.
            stages = named(node)
            for index, child in enumerate(stages):
                self.walk(child, cwds)
                name = child.child_by_field_name("name") if child.type == "command" else None
                if index and name is not None and node_text(name).rsplit("/", 1)[-1] in SHELLS:
                    # ``echo rm x | bash``: uncertain already (a shell reading stdin); what is echoed is known.
                    code = echoed(node_text(stages[index - 1]), self.home)
                    if code is not None:
                        self.nested(code, cwds, node_text(node))
            return Flow(cwds, cwds)
        if kind in _SCOPED:
            text = node_text(node)
            if (
                kind == "command_substitution"
                and text.startswith("`")
                and ESCAPED_IN_BACKTICKS.search(text[1:-1])
            ):
                # The shell removes ``\\`` before `` ` ``, ``$`` and ``\\`` inside backticks, then runs the text: read
                # it as the shell will (the parser saw the escapes as literal text).
                self.nested(BACKTICK_ESCAPE.sub(r"\1", text[1:-1]), cwds, text)
            self.sequence(named(node), cwds)
            return Flow(cwds, cwds)
        if kind in _LOOPS:
            return self.loop(node, cwds)
        if kind == "function_definition":
            self.sequence(named(node), cwds)
            return Flow(cwds, cwds)
        if kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            self.redirect(node, cwds)
            return Flow(cwds, cwds)
        if kind == "variable_assignment":
            self.assignment(node)
        if kind == "ERROR":
            self.brace_command(node, cwds)
        return self.sequence(named(node), cwds)

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
            alternatives = expand_braces(head) or []
            if len(alternatives) < 2:
                continue
            values = [*alternatives, *(unescape(t) for t in tail)]
            run(self, [Word(raw=v, value=v, path=v, glob=False) for v in values], segment, cwds)

    def list_(self, node: Node, cwds: Cwds) -> Flow:
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
                left = Flow(right.ok, left.fail | right.fail)
            elif op == "||":
                right = self.walk(right_node, left.fail)
                left = Flow(left.ok | right.ok, right.fail)
            else:
                left = self.walk(right_node, left.any)
        return left

    def loop(self, node: Node, cwds: Cwds) -> Flow:
        # A body may run many times: iterate to a fixed point, then give up on knowing the directory.
        current = cwds
        for _ in range(4):
            after = self.sequence(named(node), current).any | current
            if after == current:
                return Flow(current, current)
            current = after
        return Flow(current | {None}, current | {None})

    def redirected(self, node: Node, cwds: Cwds) -> Flow:
        body = node.child_by_field_name("body")
        flow = self.walk(body, cwds) if body is not None else Flow(cwds, cwds)
        # tree-sitter attaches a trailing redirect to a whole list (``cd x && cmd > f``): consider every directory
        # the body may have moved through.
        around = cwds | flow.any
        for child in named(node):
            if body is None or child.id != body.id:
                self.walk(child, around)
        return flow

    def redirect(self, node: Node, cwds: Cwds) -> None:
        operator = next((c.type for c in node.children if not c.is_named), "")
        if node.type == "file_redirect" and (operator in _FILE_REDIRECTS or operator == ""):
            self.file_redirect(node, operator, cwds)
        for child in named(node):
            if child.type not in ("file_descriptor", "heredoc_start", "heredoc_end", "heredoc_content"):
                self.walk(child, cwds)

    def file_redirect(self, node: Node, operator: str, cwds: Cwds) -> None:
        destination = node.child_by_field_name("destination")
        if destination is None:
            destination = next((c for c in named(node) if c.type in _ARG_TYPES), None)
        if destination is None or destination.type not in _ARG_TYPES:
            return
        raw = node_text(destination)
        if operator in (">&", "<&") and (raw == "-" or raw.isdigit()):
            return  # duplicating or closing a descriptor names no file
        source = node_text(node).strip()
        targets = list(values(destination, first=True, home=self.home))
        if targets and all(v is not None and (v in DEVICES or v.startswith("/dev/fd/")) for v, _ in targets):
            return  # ``2>/dev/null`` writes nothing anywhere
        # An unrecognised operator (the parser lost ``1<>``) counts as a write: never under-report.
        write = operator not in _READ_REDIRECTS or "<>" in source or self.broken
        self.redirects.append(source)
        target = static(destination, first=False, home=self.home)
        if target is not None and operator and "<>" not in source:
            descriptor = next((node_text(c) for c in node.children if c.type == "file_descriptor"), "")
            self.redirects.append(f"{descriptor}{operator} {target[0]}")
        for value, pattern in targets:
            self.add_path(value, cwds, role="path", source=source, write=write, pattern=pattern)

    def assignment(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        if name is not None and node_text(name) in _EVALUATED_VARIABLES:
            self.unknown.append(f"{node_text(name)} is expanded again later: {clip(node_text(node))}")

    # -- simple commands ---------------------------------------------------------------------------------------------

    def command(self, node: Node, cwds: Cwds) -> Flow:
        name_node = node.child_by_field_name("name")
        args: list[Node] = []
        for child in named(node):
            if child.type == "command_name" or child.type in _ARG_TYPES:
                if child.type != "command_name":
                    args.append(child)
                # Command substitutions in the name or arguments run first, from the same directory.
                self.walk(child, cwds)
            else:
                self.walk(child, cwds)
        if name_node is None:
            return Flow(cwds, cwds)
        parent = node.parent
        is_body = (
            parent is not None
            and parent.type == "redirected_statement"
            and (body := parent.child_by_field_name("body")) is not None
            and body.id == node.id
        )
        text = (node_text(parent) if is_body and parent is not None else node_text(node)).strip()
        words = [argword(name_node, self.home), *(argword(a, self.home) for a in args)]
        raw = node.text or b""
        lead = raw[: name_node.start_byte - node.start_byte].decode("utf-8", "surrogateescape").strip()
        return run(self, words, text, cwds, lead=lead) or Flow(cwds, cwds)

    def nested(self, code: str, cwds: Cwds, source: str) -> None:
        """Analyse ``code`` (the literal text of ``eval``, ``sh -c``, ...) as part of this command."""
        self.nested_texts += 1
        if self.nested_texts > _MAX_NESTED_TEXTS:
            self.unknown.append(f"too many nested shell texts: {clip(source)}")
            return
        root = parse(code)
        if root.has_error:
            self.unknown.append(f"the shell text it runs is not valid shell: {clip(source)}")
        self.unknown.extend(scan_unknown(root))
        self.depth += 1
        try:
            self.sequence(named(root), cwds)
        finally:
            self.depth -= 1

    def change_directory(self, name: str, args: list[Word], cwds: Cwds, *, source: str) -> Flow:
        operands = [a for a in args if a.value is None or not a.value.startswith("-") or a.value == "-"]
        if name == "popd" or (name == "pushd" and not operands):
            target: Cwds = frozenset(self.seen)
            return Flow(target, cwds)
        if not operands:
            values: list[str | None] = [self.home]
        elif operands[0].value == "-":
            values = [None]  # $OLDPWD
        elif operands[0].path is None:
            values = [None]
        else:
            expanded = list(expand(operands[0].path, operands[0].glob))
            if any(pattern is not None for _, pattern in expanded):
                self.uncertain.append(
                    f"a glob may name any directory, through symbolic links too: {clip(source)}"
                )
            values = [value for value, _ in expanded]
        targets: set[str | None] = set()
        for value in values:
            for cwd in cwds:
                resolved = join(cwd, value)
                targets.add(resolved)
                if resolved is not None:
                    self.paths.append(PathArg(path=resolved, role="directory", source=source))
        return Flow(frozenset(targets), cwds)

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
            self.uncertain.append(f"a path cannot be known before the command runs: {clip(source)}")
            return
        if pattern is not None:
            self.uncertain.append(
                f"a glob may match a symbolic link that leads outside the project: {clip(source)}"
            )
            if write:
                for cwd in cwds:
                    whole = join(cwd, pattern)
                    if whole is not None:
                        self.paths.append(
                            PathArg(path=whole, role=role, source=source, write=True, glob=True)
                        )
        for cwd in cwds:
            resolved = join(cwd, value)
            if resolved is None:
                self.uncertain.append(
                    f"a relative path follows a change to an unknown directory: {clip(source)}"
                )
                continue
            if resolved in DEVICES or resolved.startswith("/dev/fd/"):
                continue
            self.paths.append(PathArg(path=resolved, role=role, source=source, write=write))
