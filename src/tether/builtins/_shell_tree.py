"""The tree-sitter-bash side of the analysis: parsing, node text, and what the tree may run that no command shows.

One parser per thread (analysis runs in worker threads). :func:`scan_unknown` finds the constructs whose effect the
command nodes do not show (arithmetic on variables, indirect expansions, unquoted heredoc bodies, substitutions the
parser did not read); :mod:`._shell_walk` walks the commands themselves.
"""

from __future__ import annotations

import re
import threading
from functools import cache

import tree_sitter
import tree_sitter_bash

__all__ = [
    "BACKTICK_ESCAPE",
    "ESCAPED_IN_BACKTICKS",
    "Node",
    "clip",
    "named",
    "node_text",
    "parse",
    "scan_unknown",
]

Node = tree_sitter.Node


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


def parse(text: str) -> Node:
    return _parser().parse(text.encode("utf-8", "surrogatepass")).root_node


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
        elif kind == "compound_statement" and node_text(node).startswith("(("):
            if _has_variable(node):
                reason = "arithmetic on a variable evaluates its value"
        elif kind == "subscript":
            index = node.child_by_field_name("index")
            value = "" if index is None else node_text(index).strip()
            if index is not None and value not in ("@", "*") and not value.lstrip("-").isdigit():
                reason = "an array index is evaluated as arithmetic"
        elif kind == "expansion":
            text = node_text(node)
            if text.startswith("${!") or "@P" in text:
                reason = "an indirect or prompt expansion evaluates a value"
            elif _substring_evaluates(text):
                reason = "a substring offset or length is evaluated as arithmetic"
        elif (
            kind == "command_substitution"
            and node_text(node).startswith("`")
            and ESCAPED_IN_BACKTICKS.search(node_text(node)[1:-1])
        ):
            # Inside backticks, ``\``` and ``\$`` lose their backslash before the text is run: the parser sees an
            # escaped argument where the shell sees a nested substitution.
            reason = "a substitution nested in backticks"
        elif (
            kind == "binary_expression"
            and node.parent is not None
            and node.parent.type == "test_command"
            and node_text(node.parent).startswith("[[")
        ):
            operator = node.child_by_field_name("operator")
            if operator is not None and node_text(operator) in _ARITH_TESTS and _has_variable(node):
                reason = "an arithmetic test evaluates its operands"
        elif kind == "heredoc_redirect":
            reason = _heredoc_reason(node)
        elif kind in ("word", "regex", "string_content") and _UNREAD_SUBSTITUTION.search(node_text(node)):
            reason = "a substitution the parser did not read"
        if reason is not None:
            reasons.append(f"{reason}: {clip(node_text(node))}")
        stack.extend(node.children)
    return reasons


BACKTICK_ESCAPE = re.compile(r"\\([\\`$])")
ESCAPED_IN_BACKTICKS = re.compile(r"\\(?:`|\$[({\[])")
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
            if child.type == "word" and node_text(child).lstrip("-").isdigit():
                continue
            return True
        stack.extend(child.named_children)
    return False


def _heredoc_reason(node: Node) -> str | None:
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    if start is None or any(q in node_text(start) for q in "'\"\\"):
        return None  # a quoted delimiter: the body is literal
    body = "".join(node_text(c) for c in node.children if c.type == "heredoc_body")
    if "`" in body or "$(" in body or "$[" in body or re.search(r"\$\{(?:!|[^}]*(?:\[|@P))", body):
        return "a heredoc body runs substitutions"
    return None


def named(node: Node) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"]


def node_text(node: Node) -> str:
    raw = node.text
    if raw is None:
        return ""
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # a node boundary inside an encoded (lone) surrogate
        return raw.decode("utf-8", "surrogateescape")


def clip(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 120 and "\n" not in text.strip() else line[:120] + "..."
