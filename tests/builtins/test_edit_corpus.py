"""Corpora of real edits, mis-indented the way models mis-indent them, run through the real edit tool.

Two corpora, each case classified the same way: **right** when the file equals the intended result, **refused** when the
tool failed and left the file unchanged, **wrong** otherwise. The law is ``wrong == 0``.

- :func:`build_corpus`: real sources from the Python standard library on this machine (a fixed list, fixed seeds). Each
  case replaces a block with a modified block after perturbing ``old_string`` (and, where a model works in a shifted
  frame, ``new_string`` alike): the first line's indentation lost, the block dedented, its indentation doubled, tabs
  for spaces, trailing whitespace, CRLF, the last line's trailing whitespace trimmed, a similar block elsewhere in the
  file. ``right`` must not fall under the floor measured on the previous matcher (OpenCode's chain).
- :func:`build_realistic_corpus`: 160 realistic changes of real files of installed packages (Python, JavaScript,
  Rust, Go, C), each sent with one indentation mistake in ``old_string`` alone or in both strings alike (issue 34,
  item 7: ``edit`` moved correct code when only ``old_string`` was mis-indented). ``right`` must be at least 150.

``bench/edits.py`` loads :func:`build_corpus` from this file to print the same figures for both matchers.
"""

from __future__ import annotations

import importlib.util
import itertools
import random
import re
import sysconfig
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tether.tools import Failed

pytestmark = pytest.mark.anyio

FILES = (
    "textwrap.py",
    "shlex.py",
    "difflib.py",
    "json/decoder.py",
    "csv.py",
    "fractions.py",
    "heapq.py",
    "calendar.py",
    "configparser.py",
    "tokenize.py",
)
BLOCKS_PER_FILE = 2
SEED = 13
# Measured through the edit tool on this machine (Python 3.11 standard library), 340 cases: the previous matcher
# (OpenCode's chain, commit 8be1b57) made 160 right, 40 refused, 140 wrong; the current one 291 right, 49 refused,
# 0 wrong (284 / 56 / 0 before new_string's indentation was decided from evidence). The floor is the previous
# matcher's figure.
RIGHT_FLOOR = 160


@dataclass(frozen=True, kw_only=True, slots=True)
class Case:
    """One edit: the file before, the tool's input, and the file the edit was meant to produce."""

    name: str
    before: str
    old_string: str
    new_string: str
    intended: str


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _map_lines(text: str, fn: Callable[[str], str]) -> str:
    return "\n".join(fn(line) for line in text.split("\n"))


def _pick_block(lines: list[str], rng: random.Random, text: str) -> tuple[int, int] | None:
    for _ in range(200):
        start = rng.randrange(len(lines) - 8)
        size = rng.randint(2, 6)
        block = lines[start : start + size]
        if not _indent(block[0]) or not block[0].strip() or not block[-1].strip():
            continue
        if any("\t" in _indent(line) for line in block):
            continue
        old = "\n".join(block)
        if text.count(old) == 1 and all(line.strip() for line in block[:1]):
            return start, size
    return None


def _modified(block: list[str], k: int) -> list[str]:
    """The intended new block: the first line changed, a line inserted before the last one."""
    new = [*block]
    new[0] = block[0] + f"  # edited {k}"
    new.insert(len(block) - 1, _indent(block[-1]) + f"_edited_{k} = None")
    return new


def _double(line: str) -> str:
    return _indent(line) * 2 + line.lstrip(" \t")


def _tabs(line: str) -> str:
    indent = _indent(line)
    return "\t" * (len(indent) // 4) + " " * (len(indent) % 4) + line.lstrip(" \t")


def _dedent_by(prefix: str) -> Callable[[str], str]:
    return lambda line: line[len(prefix) :] if line.startswith(prefix) else line.lstrip(" \t")


def _cases_for(name: str, text: str, rng: random.Random) -> list[Case]:
    lines = text.split("\n")
    cases: list[Case] = []
    for b in range(BLOCKS_PER_FILE):
        picked = _pick_block(lines, rng, text)
        if picked is None:
            continue
        start, size = picked
        block = lines[start : start + size]
        new_block = _modified(block, b)
        old, new = "\n".join(block), "\n".join(new_block)
        intended = text.replace(old, new, 1)
        common = min((_indent(line) for line in block if line.strip()), key=len)
        tag = f"{name}:{start + 1}"

        def case(
            kind: str,
            old_string: str,
            new_string: str,
            before: str = text,
            goal: str = intended,
            tag: str = tag,
        ) -> None:
            cases.append(
                Case(
                    name=f"{tag}:{kind}",
                    before=before,
                    old_string=old_string,
                    new_string=new_string,
                    intended=goal,
                )
            )

        first_lost = [block[0].lstrip(), *block[1:]]
        case("exact", old, new)
        case("first_indent_lost", "\n".join(first_lost), new)
        case(
            "first_indent_lost_both",
            "\n".join(first_lost),
            "\n".join([new_block[0].lstrip(), *new_block[1:]]),
        )
        case("dedented", _map_lines(old, _dedent_by(common)), _map_lines(new, _dedent_by(common)))
        case("indent_doubled", _map_lines(old, _double), _map_lines(new, _double))
        case("tabs", _map_lines(old, _tabs), _map_lines(new, _tabs))
        case(
            "trailing_ws",
            "\n".join(line + "   " if i % 2 == 0 else line for i, line in enumerate(block)),
            new,
        )
        trailing_first_lost = [line + "  " for line in first_lost]
        case("first_indent_lost_trailing_ws", "\n".join(trailing_first_lost), new)
        # new_string nests a line deeper than any line of old_string, in the model's frame.
        deeper_new = [*new_block, _indent(block[-1]) + "    " + f"pass  # deeper {b}"]
        deeper_text = "\n".join(deeper_new)
        deeper_goal = text.replace(old, deeper_text, 1)
        case(
            "dedented_deeper",
            _map_lines(old, _dedent_by(common)),
            _map_lines(deeper_text, _dedent_by(common)),
            goal=deeper_goal,
        )
        case("tabs_deeper", _map_lines(old, _tabs), _map_lines(deeper_text, _tabs), goal=deeper_goal)
        case(
            "indent_doubled_deeper",
            _map_lines(old, _double),
            _map_lines(deeper_text, _double),
            goal=deeper_goal,
        )
        case("crlf_old", old.replace("\n", "\r\n"), new)
        case("crlf_file", old, new, text.replace("\n", "\r\n"), intended.replace("\n", "\r\n"))
        # The file's last block line carries trailing whitespace the model did not copy: it stays (an exact match
        # touches nothing outside itself; trailing spaces can be meaningful, as a Markdown line break).
        spaced = [*block[:-1], block[-1] + "  "]
        spaced_text = text.replace(old, "\n".join(spaced), 1)
        case(
            "last_line_trimmed", old, new, spaced_text, spaced_text.replace("\n".join(spaced), new + "  ", 1)
        )
        # A copy of the block one level deeper at the end of the file, and old_string with trailing whitespace: only
        # the original matches without changing indentation.
        deeper = "\n".join("    " + line if line.strip() else line for line in block)
        similar = text + "\n\nclass _Similar:\n" + deeper + "\n"
        trailing = "\n".join(line + " " for line in block)
        case("similar_deeper_elsewhere", trailing, new, similar, similar.replace(old, new, 1))
        # A copy with a different last line elsewhere, and the first line's indentation lost.
        changed = "\n".join([*block[:-1], block[-1] + "  # other"])
        near = text + "\n\n" + changed + "\n"
        twice = text + "\n\n" + old + "\n"
        case("duplicate_elsewhere", old, new, twice, twice.replace(old, new, 1))
        case("similar_changed_elsewhere", "\n".join(first_lost), new, near, near.replace(old, new, 1))
    return cases


def build_corpus() -> list[Case]:
    """The corpus: a fixed list of standard-library files, fixed seeds, every perturbation per picked block."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    cases: list[Case] = []
    for i, name in enumerate(FILES):
        text = (stdlib / name).read_text(encoding="utf-8")
        text = re.sub(r"[ \t]+\n", "\n", text)  # a clean start: trailing whitespace only where a case adds it
        cases.extend(_cases_for(name, text, random.Random(SEED * 1000 + i)))
    return cases


def classify(case: Case, after: str, failed: bool) -> str:
    """``right``, ``refused`` or ``wrong`` for a finished edit."""
    if failed:
        return "refused" if after == case.before else "wrong"
    return "right" if after == case.intended else "wrong"


async def _run(project: Any, root: Path, corpus: list[Case], label: str) -> tuple[Counter[str], list[str]]:
    """Each case through the edit tool; the verdicts counted, the wrong ones named. Prints the figures."""
    counts: Counter[str] = Counter()
    wrong: list[str] = []
    target = root / "corpus.txt"
    for case in corpus:
        target.write_bytes(case.before.encode())
        outcome = await project.call(
            "edit", path="corpus.txt", old_string=case.old_string, new_string=case.new_string
        )
        verdict = classify(case, target.read_bytes().decode(), failed=isinstance(outcome, Failed))
        counts[verdict] += 1
        if verdict == "wrong":
            wrong.append(case.name)
    print(
        f"\n{label}: {len(corpus)} cases: {counts['right']} right, {counts['refused']} refused, "
        f"{counts['wrong']} wrong"
    )
    return counts, wrong


async def test_corpus_edits_are_right_or_refused_never_wrong(project, root: Path) -> None:
    counts, wrong = await _run(project, root, build_corpus(), "edit corpus")
    assert wrong == []
    assert counts["right"] >= RIGHT_FLOOR


# --- Realistic edits on installed packages' sources ------------------------------------------------------------------
#
# Issue 34, item 7: a model that gets only old_string's indentation wrong writes new_string in the file's indentation;
# one that works in a shifted frame writes both strings in it. Each case below is a realistic change of a real block
# (rename, change a line, insert or delete a statement, wrap lines in a block or unwrap them, add a statement after, a
# comment before, rewrite a block, change or wrap a single line) in a real source file (Python, JavaScript with 2 and 4
# spaces, Rust, and Go and C indented with tabs), sent with one indentation mistake: old_string only ("old") or both
# strings alike ("both"), the mistake being the block dedented to column 0, dedented by one level, its first line's
# indentation lost, indented one level deeper, or written with tabs for the file's spaces (spaces for its tabs).

SOURCES = (
    ("starlette", "routing.py"),
    ("starlette", "datastructures.py"),
    ("rich", "table.py"),
    ("httpx2", "_auth.py"),
    ("httpx2", "_urls.py"),
    ("psycopg", "cursor.py"),
    ("docstring_parser", "google.py"),
    ("coverage", "htmlfiles/coverage_html.js"),
    ("werkzeug", "debug/shared/debugger.js"),
    ("temporalio", "bridge/src/runtime.rs"),
    (
        "temporalio",
        "bridge/sdk-core/crates/protos/protos/api_upstream/cmd/protoc-gen-nexus-rpc-yaml/generator.go",
    ),
    ("markupsafe", "_speedups.c"),
)
CHANGES = (
    "rename",
    "change_line",
    "insert",
    "delete",
    "wrap",
    "unwrap",
    "add_after",
    "comment_above",
    "rewrite",
    "single_line",
    "single_wrap",
)
# A line starting with one of these continues something (a bracket, a chain, an expression) or is a comment.
CONTINUED = (
    "}",
    ")",
    "]",
    "#",
    "//",
    "/*",
    "*",
    ".",
    "?",
    ":",
    "+",
    "-",
    "&&",
    "||",
    "else",
    "elif",
    "except",
)
MISTAKES = ("dedent_all", "dedent_one", "first_lost", "indent_one", "tabs")
REALISTIC_BLOCKS = 32  # x 5 mistakes = 160 cases
REALISTIC_SEED = 34
KEYWORDS = frozenset(
    "and as assert async await break case class const continue def del elif else except false finally fn for from "
    "func function if impl import in is let match mod mut not null or pass pub raise return self static struct "
    "super this true try type var while with yield none".split()
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Source:
    """A real file and how it is written: its language and one indentation level."""

    name: str
    text: str
    lang: str  # "py", "js", "rs", "go", "c"
    unit: str  # "    ", "  " or "\t"


def _source(package: str, path: str) -> Source | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    file = Path(next(iter(spec.submodule_search_locations))) / path
    if not file.is_file():
        return None
    text = re.sub(r"[ \t]+\n", "\n", file.read_text(encoding="utf-8"))
    lang = file.suffix.lstrip(".")
    widths = Counter(
        len(_indent(b)) - len(_indent(a))
        for a, b in itertools.pairwise(line for line in text.split("\n") if line.strip())
        if not _indent(b).startswith("\t")
    )
    tabs = sum(line.startswith("\t") for line in text.split("\n"))
    spaced = sum(line.startswith(" ") for line in text.split("\n"))
    unit = "\t" if tabs > spaced else " " * max((w for w in (2, 4) if widths[w]), key=lambda w: widths[w])
    return Source(name=f"{package}/{path}", text=text, lang=lang, unit=unit)


def _width(indent: str) -> int:
    return len(indent.expandtabs(4))


_STRING = re.compile(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|`[^`]*`")


def _depth(lines: list[str], brackets: str = "([{") -> int:
    """Open ``brackets`` at the end of ``lines`` (strings and comments ignored, roughly)."""
    closing = {"(": ")", "[": "]", "{": "}"}
    depth = 0
    for line in lines:
        code = _STRING.sub('""', line)
        code = re.split(r"#|//", code, maxsplit=1)[0] if not code.lstrip().startswith("#include") else ""
        depth += sum(code.count(c) for c in brackets) - sum(code.count(closing[c]) for c in brackets)
    return depth


def _python_string_lines(text: str) -> set[int]:
    """0-based lines inside (or continuing) a multi-line string of a Python file."""
    import io
    import tokenize

    inside: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            inside.update(range(token.start[0] - 1, token.end[0]))
    return inside


def _statement_end(line: str, lang: str) -> bool:
    code = line.rstrip()
    if lang == "py":
        return not code.endswith((",", "(", "[", "{", "\\", ":")) and not code.lstrip().startswith("@")
    if lang == "go":
        return not code.endswith((",", "(", "[", "{", "\\", "+", "&&", "||", "="))
    return code.endswith((";", "}")) and not code.lstrip().startswith("}")


def _opener(line: str, lang: str) -> bool:
    return line.rstrip().endswith(":" if lang == "py" else "{")


def _statement(lang: str, text: str) -> str:
    return {
        "py": f'logger.debug("{text}")',
        "js": f'console.debug("{text}");',
        "rs": f'tracing::debug!("{text}");',
        "go": f'log.Printf("{text}")',
        "c": f'DEBUG_LOG("{text}");',
    }[lang]


def _comment(lang: str, text: str) -> str:
    return f"# {text}" if lang == "py" else f"// {text}"


def _wrapped(lang: str, base: str, unit: str, run: list[str], k: int) -> list[str]:
    inner = [unit + line if line.strip() else line for line in run]
    if lang == "py":
        if k % 2:
            return [
                f"{base}try:",
                *inner,
                f"{base}except Exception:",
                f"{base}{unit}logger.exception('edit {k}')",
                f"{base}{unit}raise",
            ]
        return [f"{base}if self_check_{k}:", *inner]
    condition = {"js": f"(enabled{k})", "c": f"(enabled{k})"}.get(lang, f"enabled{k}")
    return [f"{base}if {condition} {{", *inner, f"{base}}}"]


def _change(
    kind: str, block: list[str], src: Source, rng: random.Random, k: int, after: str | None = None
) -> list[str] | None:
    """``block`` (in the file's indentation) after a realistic change of ``kind``, or ``None`` when it does not apply."""
    lang, unit, base = src.lang, src.unit, _indent(block[0])
    text = "\n".join(block)
    if kind in ("single_line", "single_wrap") and len(block) != 1:
        return None
    if kind not in ("single_line", "single_wrap") and len(block) < 2:
        return None
    if kind == "rename":
        # A local name the block assigns (a variable renamed where it is set and used).
        code = _STRING.sub('""', text)
        names = sorted(
            {
                m.group(1)
                for m in re.finditer(
                    r"(?:^|\s|\bfor |let (?:mut )?)([a-z_][a-z0-9_]{2,})\s*(?::=|=[^=]|:[^=\n]*=[^=]| in )",
                    code,
                )
            }
            - KEYWORDS
        )
        if not names:
            return None
        name = rng.choice(names)
        return [re.sub(rf"(?<![.\w]){name}\b", f"{name}_v{k}", line) for line in block]
    if kind in ("change_line", "single_line"):
        options = [i for i, line in enumerate(block) if re.search(r"\b[a-z_][a-z0-9_]{2,}\b", line)]
        if not options:
            return None
        i = rng.choice(options)
        line = block[i]
        # A string's text, a number, or else the last name in the line (a call, an attribute, a variable) changed.
        literal = re.search(r"\"[^\"\\]{2,}\"|'[^'\\]{2,}'", line) or re.search(
            r"(?<![\w.])\d+(?![\w.])", line
        )
        if literal is not None:
            text_ = literal.group()
            changed = text_[:-1] + f" (v{k})" + text_[-1] if text_[0] in "\"'" else str(int(text_) + k + 1)
            return [*block[:i], line[: literal.start()] + changed + line[literal.end() :], *block[i + 1 :]]
        words = [m for m in re.finditer(r"\b[a-z_][a-z0-9_]{2,}\b", line) if m.group() not in KEYWORDS]
        if not words:
            return None
        m = words[-1]
        return [*block[:i], line[: m.start()] + f"{m.group()}_{k}" + line[m.end() :], *block[i + 1 :]]
    if kind == "insert":
        spots = [
            p
            for p in range(1, len(block))
            if block[p - 1].strip()
            and _depth(block[:p]) == 0
            and (_statement_end(block[p - 1], lang) or _opener(block[p - 1], lang))
        ]
        if not spots:
            return None
        p = rng.choice(spots)
        indent = _indent(block[p - 1]) + (unit if _opener(block[p - 1], lang) else "")
        return [*block[:p], indent + _statement(lang, f"edit {k}"), *block[p:]]
    if kind == "delete":
        spots = [
            i
            for i in range(len(block))
            if block[i].strip()
            and _depth(block[:i]) == 0
            and _depth([block[i]]) == 0
            and _statement_end(block[i], lang)
            and not _opener(block[i], lang)
            and (i + 1 == len(block) or _width(_indent(block[i + 1])) <= _width(_indent(block[i])))
            and (
                i == 0
                or not _opener(block[i - 1], lang)
                or (i + 1 < len(block) and _indent(block[i + 1]) == _indent(block[i]))
            )
        ]
        if not spots:
            return None
        i = rng.choice(spots)
        return [*block[:i], *block[i + 1 :]]
    if kind in ("wrap", "single_wrap"):
        starts = [i for i, line in enumerate(block) if _indent(line) == base and _depth(block[:i]) == 0]
        runs = [
            (i, j)
            for i in starts
            for j in range(i + 1, len(block) + 1)
            if (j == len(block) or (_indent(block[j]) == base and _depth(block[:j]) == 0))
            and block[j - 1].strip()
            and _statement_end(block[j - 1], lang)
            and not re.match(
                r"\s*(elif|else|except|finally|case|default|def|class|fn|func|pub|impl|async def)\b|\s*[}@]",
                block[i],
            )
            and not (i > 0 and block[i - 1].lstrip().startswith("@"))
            and (j == len(block) or not re.match(r"\s*(elif|else|except|finally)\b|\s*}", block[j]))
        ]
        if not runs:
            return None
        i, j = rng.choice(runs)
        return [*block[:i], *_wrapped(lang, base, unit, block[i:j], k), *block[j:]]
    if kind == "unwrap":
        head = block[0].strip()
        if (
            not _opener(block[0], lang)
            or not re.match(r"(if|for|while|with)\b", head)
            or head.startswith("if let")
        ):
            return None
        body = block[1:-1] if lang != "py" else block[1:]
        if lang != "py" and block[-1] != base + "}":
            return None
        if not body or not all(line.startswith(base + unit) or not line.strip() for line in body):
            return None
        if after is not None and re.match(r"\s*(elif|else|except|finally)\b", after):
            return None  # the opener has further branches: unwrapping it alone breaks the code
        return [line[len(unit) :] if line.strip() else line for line in body]
    if kind == "add_after":
        if not _statement_end(block[-1], lang) or _depth(block) != 0:
            return None
        return [*block, base + _statement(lang, f"edit {k}")]
    if kind == "comment_above":
        return [base + _comment(lang, f"edit {k}: explain the next lines"), *block]
    if kind == "rewrite":
        if _depth(block) != 0 or not _statement_end(block[-1], lang):
            return None
        return [
            base + _statement(lang, f"rewritten {k}"),
            base + _statement(lang, f"rewritten {k}, continued"),
        ]
    raise AssertionError(kind)


def _pick(src: Source, kind: str, rng: random.Random, taken: set[int]) -> tuple[int, int] | None:
    """A block of ``src`` for a change of ``kind``: whole statements at one level, unique even without indentation."""
    lines = src.text.split("\n")
    strings = _python_string_lines(src.text) if src.lang == "py" else set()
    stripped = [line.strip() for line in lines]
    for _ in range(4000):
        start = rng.randrange(1, len(lines) - 2)
        if kind == "unwrap":
            opener = lines[start]
            if not _opener(opener, src.lang) or not opener.strip():
                continue
            size = 1
            while start + size < len(lines) and (
                not lines[start + size].strip()
                or _width(_indent(lines[start + size])) > _width(_indent(opener))
            ):
                size += 1
            if src.lang != "py":
                size += 1  # the closing brace
            while not lines[start + size - 1].strip():
                size -= 1
        else:
            size = 1 if kind.startswith("single") else rng.randint(2, 7)
        block = lines[start : start + size]
        base = _indent(block[0])
        if (
            not base
            or any(start <= t < start + size + 1 for t in taken)
            or any(i in strings for i in range(start - 1, start + size + 1))
        ):
            continue
        if not block[0].strip() or not block[-1].strip() or block[0].strip().startswith(CONTINUED):
            continue
        if any(
            line.strip() and (not line.startswith(base) or (src.unit != "\t") != (line[0] == " "))
            for line in block
        ):
            continue
        if (
            any(line.rstrip().endswith("\\") for line in block)
            or _depth(block) != 0
            or len(max(block, key=len)) > 110
        ):
            continue
        after = next((line for line in lines[start + size :] if line.strip()), "")
        if after and _width(_indent(after)) > _width(base):
            continue
        before = next((line for line in reversed(lines[:start]) if line.strip()), "")
        if before.rstrip().endswith((",", "(", "[", "\\", "=", "+", "-", "*", "&&", "||", "?", "=>")):
            continue  # the block would start inside an expression
        if _depth(lines[:start], "([" if src.lang != "py" else "([{") > 0:
            continue  # inside a call, a list, an import group: not statements
        key = stripped[start : start + size]
        if sum(stripped[i : i + size] == key for i in range(len(lines) - size + 1)) != 1:
            continue
        taken.update(range(start - 1, start + size + 1))
        return start, size
    return None


def _mistake(kind: str, lines: list[str], frame: list[str], unit: str) -> list[str]:
    """``lines`` with the indentation mistake ``kind`` made on ``frame`` (old_string's lines, in the file)."""
    common = min((_indent(line) for line in frame if line.strip()), key=len)

    def each(fn: Callable[[str], str]) -> list[str]:
        return [fn(line) if line.strip() else line for line in lines]

    if kind == "dedent_all":
        return each(lambda line: line[len(common) :] if line.startswith(common) else line.lstrip(" \t"))
    if kind == "dedent_one":
        return each(lambda line: line[len(unit) :] if line.startswith(unit) else line.lstrip(" \t"))
    if kind == "first_lost":
        first = next(i for i, line in enumerate(lines) if line.strip())
        return [*lines[:first], lines[first].lstrip(" \t"), *lines[first + 1 :]]
    if kind == "indent_one":
        return each(lambda line: unit + line)
    if kind == "tabs":
        if unit == "\t":
            return each(lambda line: _indent(line).replace("\t", "    ") + line.lstrip(" \t"))
        return each(lambda line: _indent(line).replace(unit, "\t") + line.lstrip(" \t"))
    raise AssertionError(kind)


def _occurrences(text: str, find: str) -> list[int]:
    found: list[int] = []
    index = text.find(find)
    while index >= 0:
        found.append(index)
        index = text.find(find, index + 1)
    return found


def _realistic_block(src: Source, kind: str, rng: random.Random, taken: set[int], k: int) -> list[Case]:
    """The five cases of one block of ``src`` changed by ``kind`` (none if no block fits in a few tries)."""
    lines = src.text.split("\n")
    for _ in range(8):
        picked = _pick(src, kind, rng, taken)
        if picked is None:
            return []
        start, size = picked
        block = lines[start : start + size]
        after = next((line for line in lines[start + size :] if line.strip()), None)
        changed = _change(kind, block, src, rng, k, after)
        if changed is None or changed == block:
            continue
        olds = ["\n".join(_mistake(mistake, block, block, src.unit)) for mistake in MISTAKES]
        first, last = len("\n".join(lines[:start])), len("\n".join(lines[: start + size]))
        if any(not first <= i <= last for old in olds for i in _occurrences(src.text, old)):
            continue  # the mistaken old_string is somewhere else verbatim: no matcher could know which was meant
        intended = "\n".join([*lines[:start], *changed, *lines[start + size :]])
        cases: list[Case] = []
        for m, (mistake, old) in enumerate(zip(MISTAKES, olds, strict=True)):
            family = "old" if (k + m) % 2 == 0 else "both"
            new = changed if family == "old" else _mistake(mistake, changed, block, src.unit)
            cases.append(
                Case(
                    name=f"{src.name}:{start + 1}:{kind}:{family}:{mistake}",
                    before=src.text,
                    old_string=old,
                    new_string="\n".join(new),
                    intended=intended,
                )
            )
        return cases
    return []


def build_realistic_corpus() -> list[Case]:
    """160 realistic edits: 32 blocks of real files (a fixed list, a fixed seed), each with 5 indentation mistakes.

    Blocks go round the files, their changes round :data:`CHANGES`. A block's five cases alternate between the two
    families: old_string mis-indented alone ("old", new_string in the file's indentation) and both strings
    mis-indented alike ("both").
    """
    rng = random.Random(REALISTIC_SEED)
    sources = [s for s in (_source(p, f) for p, f in SOURCES) if s is not None]
    taken: dict[str, set[int]] = {s.name: set() for s in sources}
    cases: list[Case] = []
    b = attempt = 0
    while b < REALISTIC_BLOCKS and attempt < 20 * REALISTIC_BLOCKS:
        src = sources[attempt % len(sources)]
        attempt += 1
        block = _realistic_block(src, CHANGES[b % len(CHANGES)], rng, taken[src.name], b)
        if block:
            cases += block
            b += 1
    return cases


async def test_realistic_edits_with_mis_indented_strings_are_never_wrong(project, root: Path) -> None:
    # Before new_string's indentation was decided from evidence: 91 right, 53 refused, 16 wrong.
    corpus = build_realistic_corpus()
    assert len(corpus) == REALISTIC_BLOCKS * len(MISTAKES) == 160
    assert {c.name.split(":")[-2] for c in corpus} == {"old", "both"}
    counts, wrong = await _run(project, root, corpus, "realistic edit corpus")
    assert wrong == []
    assert counts["right"] >= 150
