"""The edit corpus as a figure: right / refused / wrong edits for the current matcher and the previous one.

Run: .venv/bin/python bench/edits.py [--previous 8be1b57]

The corpus is ``tests/builtins/test_edit_corpus.py``'s (real standard-library files, perturbed ``old_string``s). Each
case runs through the matching core the way the edit tool does (``old_string``/``new_string`` converted to the file's
line endings, then ``replace``): **right** when the result equals the intended file, **refused** when the matcher
raises, **wrong** otherwise. The previous matcher is ``src/tether/builtins/_replacers.py`` at the ``--previous``
commit (OpenCode's replacer chain), read with ``git show``; it is skipped when git cannot provide it. Not a timing.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tether.builtins import _replacers

ROOT = Path(__file__).resolve().parent.parent
Replace = Callable[..., tuple[str, int]]


def _load_corpus() -> types.ModuleType:
    path = ROOT / "tests" / "builtins" / "test_edit_corpus.py"
    spec = importlib.util.spec_from_file_location("edit_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["edit_corpus"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _previous(commit: str) -> Replace | None:
    shown = subprocess.run(
        ["git", "show", f"{commit}:src/tether/builtins/_replacers.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if shown.returncode != 0:
        return None
    module = types.ModuleType("previous_replacers")
    exec(compile(shown.stdout, f"{commit}:_replacers.py", "exec"), module.__dict__)
    return module.replace


def _run(replace: Replace, case: Any, classify: Callable[..., str]) -> str:
    text: str = case.before
    old = case.old_string.replace("\r\n", "\n")
    new = case.new_string.replace("\r\n", "\n")
    if "\r\n" in text:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    try:
        after, _ = replace(text, old, new)
    except Exception:  # every matcher failure is a refusal, whatever its class
        return "refused"
    return classify(case, after, False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--previous", default="8be1b57", help="the commit of the previous matcher")
    opts = parser.parse_args()
    corpus_module = _load_corpus()
    corpus = corpus_module.build_corpus()
    matchers: list[tuple[str, Replace]] = [("current", _replacers.replace)]
    previous = _previous(opts.previous)
    if previous is None:
        print(f"(previous matcher at {opts.previous} unavailable: git show failed)")
    else:
        matchers.append((f"previous ({opts.previous})", previous))
    kinds = sorted({case.name.rsplit(":", 1)[1] for case in corpus})
    print(f"{len(corpus)} cases from {len(corpus_module.FILES)} standard-library files\n")
    print(f"{'matcher':<22} {'right':>6} {'refused':>8} {'wrong':>6}")
    per_kind: dict[str, Counter[tuple[str, str]]] = {}
    for label, replace in matchers:
        counts: Counter[str] = Counter()
        by_kind: Counter[tuple[str, str]] = Counter()
        for case in corpus:
            verdict = _run(replace, case, corpus_module.classify)
            counts[verdict] += 1
            by_kind[case.name.rsplit(":", 1)[1], verdict] += 1
        per_kind[label] = by_kind
        print(f"{label:<22} {counts['right']:>6} {counts['refused']:>8} {counts['wrong']:>6}")
    print(f"\n{'perturbation':<32}" + "".join(f" {label[:22]:>22}" for label, _ in matchers))
    for kind in kinds:
        cells = [
            "{}/{}/{}".format(*(per_kind[label][kind, v] for v in ("right", "refused", "wrong")))
            for label, _ in matchers
        ]
        print(f"{kind:<32}" + "".join(f" {cell:>22}" for cell in cells))
    print("\n(cells: right/refused/wrong)")


if __name__ == "__main__":
    main()
