"""Instructions for the model: ``AGENTS.md`` files and the config's ``instructions`` entries, as system texts.

Found, in this order: the user's ``AGENTS.md`` (in the tether config directory), every ``AGENTS.md`` from the project
root down to the working directory, then each path or glob listed under ``instructions`` in ``tether.json``
(relative to the project root). Each becomes one system text headed by its path, so the model (and a person reading
the request) can tell where an instruction came from. This reads files: call it from a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from ..errors import ConfigError
from ..paths import default_config_dir

__all__ = ["instruction_files", "load_instructions"]

AGENTS_FILE = "AGENTS.md"
_MAX_BYTES = 256 * 1024


def _chain(root: Path, directory: Path) -> list[Path]:
    chain = [directory]
    while chain[-1] != root and chain[-1].parent != chain[-1] and root in chain[-1].parents:
        chain.append(chain[-1].parent)
    return list(reversed(chain))


def instruction_files(root: Path, directory: Path, config: Mapping[str, Any] | None) -> list[Path]:
    """The instruction files that exist, in load order, without duplicates.

    Raises:
        ConfigError: ``instructions`` is not a list of strings.
    """
    found: list[Path] = [default_config_dir() / AGENTS_FILE]
    found += [d / AGENTS_FILE for d in _chain(root, directory)]
    extra = (config or {}).get("instructions")
    if extra is not None:
        if not isinstance(extra, list) or not all(isinstance(e, str) for e in cast(list[Any], extra)):
            raise ConfigError("expected a list of file paths or globs", key="instructions")
        for entry in cast(list[str], extra):
            pattern = Path(entry).expanduser()
            if pattern.is_absolute():
                found.append(pattern)
            else:
                found += sorted(root.glob(entry)) or [root / entry]
    seen: set[Path] = set()
    out: list[Path] = []
    for path in found:
        resolved = path.resolve()
        if resolved not in seen and resolved.is_file():
            seen.add(resolved)
            out.append(resolved)
    return out


def load_instructions(root: Path, directory: Path, config: Mapping[str, Any] | None) -> Sequence[str]:
    """The system texts for the instruction files (see the module docstring).

    Raises:
        ConfigError: ``instructions`` is malformed.
    """
    texts: list[str] = []
    for path in instruction_files(root, directory, config):
        try:
            with path.open("rb") as handle:
                body = handle.read(_MAX_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        texts.append(f"Instructions from: {path}\n{body}")
    return texts
