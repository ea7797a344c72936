"""A corpus of real edits, perturbed the way models perturb ``old_string``, run through the real edit tool.

The files are real sources from the Python standard library on this machine (a fixed list, fixed seeds). Each case
replaces a block of a file with a modified block (``new_string``) after perturbing ``old_string`` (and, where a model
works in a shifted frame, ``new_string`` alike): the first line's indentation lost, the block dedented, its
indentation doubled, tabs for spaces, trailing whitespace, CRLF, the last line's trailing whitespace trimmed, a similar
block elsewhere in the file. A case is **right** when the file equals the intended result, **refused** when the tool
failed and left the file unchanged, **wrong** otherwise. The law is ``wrong == 0``; ``right`` must not fall under the
floor measured on the previous matcher (OpenCode's replacer chain) for the same corpus.

``bench/edits.py`` loads :func:`build_corpus` from this file to print the same figures for both matchers.
"""

from __future__ import annotations

import random
import re
import sysconfig
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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
# (OpenCode's chain, commit 8be1b57) made 160 right, 40 refused, 140 wrong; the current one 284 right, 56 refused,
# 0 wrong. The floor is the previous matcher's figure.
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


async def test_corpus_edits_are_right_or_refused_never_wrong(project, root: Path) -> None:
    corpus = build_corpus()
    counts: Counter[str] = Counter()
    wrong: list[str] = []
    target = root / "corpus.py"
    for case in corpus:
        target.write_bytes(case.before.encode())
        outcome = await project.call(
            "edit", path="corpus.py", old_string=case.old_string, new_string=case.new_string
        )
        verdict = classify(case, target.read_bytes().decode(), failed=isinstance(outcome, Failed))
        counts[verdict] += 1
        if verdict == "wrong":
            wrong.append(case.name)
    print(
        f"\nedit corpus: {len(corpus)} cases: {counts['right']} right, {counts['refused']} refused, "
        f"{counts['wrong']} wrong"
    )
    assert wrong == []
    assert counts["right"] >= RIGHT_FLOOR
