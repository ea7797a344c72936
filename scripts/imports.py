"""The import graph of ``src/tether``, read from the source: rooms, floors, circles, upward imports, big modules.

A *room* is a top-level entry of ``src/tether``: a package (``session/``) or a top-level module (``errors.py``);
``tether/__init__.py`` is the room ``tether``. Every ``import``/``from ... import`` in a module counts, wherever it
stands (a function-level import, or one under ``TYPE_CHECKING``, is still a dependency of the design; the report marks
the latter "types only"), resolved to the module it names (``from . import x`` names the submodule ``x``).

The allowed order is written once, in the ``floors`` block of ``ARCHITECTURE.md`` (highest floor first): a room may
import rooms on its own floor and below. An import to a higher floor is an *upward import*; rooms that import each
other round are a *folder circle*; modules of one room that import each other round are a *file circle* (a
package's ``__init__`` re-exporting its own modules is not one). A module over ``MAX_LINES`` lines is *big*. An
import from one room of another room's module whose path below that room has a part starting with ``_``
(``tether.session._runner``, ``tether.llm.providers._registry``) is a *private reach*: a room's surface is its
``__init__`` and its ``internal`` module; a top-level room that is itself a ``_x.py`` module is a whole room, so
importing it is no reach.

The debts of today are listed in the same file (blocks ``upward-imports``, ``folder-circles``, ``file-circles``,
``big-modules``, ``private-reaches``), each with its reason and the plan that removes it. ``python scripts/imports.py`` prints the graph's
findings and exits 1 when they differ from those lists in either direction: something new (fix it, do not list it)
or a listed debt that is gone (strike it from the list: the lists only shrink). ``tests/test_architecture.py`` runs
the same check. Stdlib only.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "tether"
ARCHITECTURE = ROOT / "ARCHITECTURE.md"

MAX_LINES = 800
"""A module over this many lines is a signal to split (STYLE.md): only the listed ``big-modules`` may be."""


@dataclass(frozen=True, order=True)
class Edge:
    """``source`` (a module) imports ``target`` (a module) at ``line``."""

    source: str
    target: str
    line: int
    types_only: bool = False


def module_name(path: Path, src: Path = SRC) -> str:
    """``src/tether/session/_store.py`` -> ``tether.session._store``; a package's ``__init__`` is the package."""
    parts = ["tether", *path.relative_to(src).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(src: Path = SRC) -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    return {module_name(path, src): path for path in sorted(src.rglob("*.py"))}


def room(module: str) -> str:
    """The room of a module: ``tether.session._store`` -> ``session``; ``tether`` -> ``tether``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` names (``tether.tools.Tool`` -> ``tether.tools``)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """The ids of the import nodes under an ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) body."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = (
                test.id
                if isinstance(test, ast.Name)
                else test.attr
                if isinstance(test, ast.Attribute)
                else ""
            )
            if name == "TYPE_CHECKING":
                for inner in node.body:
                    out.update(id(n) for n in ast.walk(inner) if isinstance(n, ast.Import | ast.ImportFrom))
    return out


def imports(module: str, path: Path, known: dict[str, Path]) -> Iterator[Edge]:
    """The edges out of one module, to other modules of the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    typing_only = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [t for alias in node.names if (t := _resolve(alias.name, known)) is not None]
        else:
            if node.level:
                parts = package.split(".")
                base = ".".join(
                    parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else [])
                )
            else:
                base = node.module or ""
            for alias in node.names:
                # ``from pkg import sub`` names the submodule when there is one, else a name of ``pkg``
                target = _resolve(f"{base}.{alias.name}", known) if alias.name != "*" else None
                if target is None or target == module:
                    target = _resolve(base, known)
                if target is not None:
                    targets.append(target)
        for target in targets:
            if target != module:
                yield Edge(module, target, node.lineno, id(node) in typing_only)


def graph(src: Path = SRC) -> list[Edge]:
    """Every import edge between two modules of the package, sorted."""
    known = modules(src)
    return sorted({edge for name, path in known.items() for edge in imports(name, path, known)})


def strongly_connected(nodes: Iterable[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one node (the circles), each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        # iterative: the module graph is deep enough to matter for recursion
        work: list[tuple[str, Iterator[str]]] = []

        def enter(node: str) -> None:
            nonlocal counter
            index[node] = low[node] = counter
            counter += 1
            stack.append(node)
            on_stack.add(node)
            work.append((node, iter(sorted(edges.get(node, ())))))

        enter(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    enter(child)
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return sorted(found)


def room_edges(edges: Iterable[Edge]) -> dict[str, set[str]]:
    """Room -> the other rooms it imports."""
    out: dict[str, set[str]] = {}
    for edge in edges:
        source, target = room(edge.source), room(edge.target)
        if source != target:
            out.setdefault(source, set()).add(target)
    return out


def folder_circles(edges: list[Edge]) -> list[tuple[str, ...]]:
    """Sets of rooms that import each other round."""
    by_room = room_edges(edges)
    rooms = set(by_room) | {t for targets in by_room.values() for t in targets}
    return [tuple(c) for c in strongly_connected(rooms, by_room)]


def file_circles(edges: list[Edge]) -> list[tuple[str, ...]]:
    """Sets of modules of one room that import each other round (a package's ``__init__`` re-exporting its own
    modules is not a circle: the package is its modules' public face, not a peer of them)."""
    inside: dict[str, set[str]] = {}
    for edge in edges:
        if room(edge.source) != room(edge.target) or edge.source == edge.target:
            continue
        if edge.source == f"tether.{room(edge.source)}":  # the package __init__ re-exporting
            continue
        inside.setdefault(edge.source, set()).add(edge.target)
    nodes = set(inside) | {t for targets in inside.values() for t in targets}
    return [tuple(c) for c in strongly_connected(nodes, inside)]


def floor_of(name: str, floors: Floors) -> int:
    """The floor number of a room (0 is the ground floor)."""
    for number, rooms in enumerate(floors):
        if name in rooms:
            return number
    raise KeyError(name)


def upward(edges: list[Edge], floors: Floors) -> dict[tuple[str, str], list[Edge]]:
    """``(room, higher room)`` -> the imports that go up a floor."""
    out: dict[tuple[str, str], list[Edge]] = {}
    for edge in edges:
        source, target = room(edge.source), room(edge.target)
        if source != target and floor_of(target, floors) > floor_of(source, floors):
            out.setdefault((source, target), []).append(edge)
    return out


def is_private(module: str) -> bool:
    """Whether a module is private to its room: a part of its path below the room starts with ``_``
    (``tether.session._runner`` is; ``tether.session.internal``, ``tether.session`` and ``tether._record`` are not)."""
    return any(part.startswith("_") for part in module.split(".")[2:])


def private_reaches(edges: Iterable[Edge]) -> dict[tuple[str, str], list[Edge]]:
    """``(room, other room's private module)`` -> the imports that reach into it (the module without ``tether.``)."""
    out: dict[tuple[str, str], list[Edge]] = {}
    for edge in edges:
        if room(edge.source) != room(edge.target) and is_private(edge.target):
            out.setdefault((room(edge.source), _short(edge.target)), []).append(edge)
    return out


def big_modules(src: Path = SRC, limit: int = MAX_LINES) -> dict[str, int]:
    """Modules over ``limit`` lines: name -> lines."""
    out: dict[str, int] = {}
    for name, path in modules(src).items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            out[name] = lines
    return out


# --- ARCHITECTURE.md: the floors and the lists of known debts ---------------------------------------------------

Floors = tuple[frozenset[str], ...]
"""The rooms of each floor, the ground floor first."""

BLOCKS = ("floors", "upward-imports", "folder-circles", "file-circles", "big-modules", "private-reaches")


def blocks(text: str) -> dict[str, list[str]]:
    """The lines of each fenced block whose info string is one of :data:`BLOCKS`, ``#`` comments and blanks dropped."""
    out: dict[str, list[str]] = {}
    for match in re.finditer(r"^```([a-z-]+)[ \t]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        if match.group(1) in BLOCKS:
            lines = [line.split("#", 1)[0].strip() for line in match.group(2).splitlines()]
            out.setdefault(match.group(1), []).extend(line for line in lines if line)
    missing = [name for name in BLOCKS if name not in out]
    if missing:
        raise ValueError(f"ARCHITECTURE.md has no ```{missing[0]} block")
    return out


@dataclass(frozen=True)
class Plan:
    """What ``ARCHITECTURE.md`` says: the floors, and the debts known today."""

    floors: Floors
    floor_names: tuple[str, ...]
    upward: frozenset[tuple[str, str]]
    folder_circles: frozenset[frozenset[str]]
    file_circles: frozenset[frozenset[str]]
    big_modules: frozenset[str]
    private_reaches: frozenset[tuple[str, str]] = frozenset()


def _module(name: str) -> str:
    return name if name.startswith("tether.") else f"tether.{name}"


def read_plan(path: Path = ARCHITECTURE) -> Plan:
    """Parse the blocks of ``ARCHITECTURE.md``.

    Raises:
        ValueError: a block is missing or a line is not in its block's form.
    """
    found = blocks(path.read_text(encoding="utf-8"))
    names: list[str] = []
    floors: list[frozenset[str]] = []
    for line in reversed(found["floors"]):  # written highest first, as a house is drawn
        name, colon, rooms = line.partition(":")
        if not colon or not rooms.split():
            raise ValueError(f"ARCHITECTURE.md floors: {line!r} is not 'name: room room ...'")
        names.append(name.strip())
        floors.append(frozenset(rooms.split()))
    upward_pairs: set[tuple[str, str]] = set()
    for line in found["upward-imports"]:
        source, arrow, target = line.partition("->")
        if not arrow:
            raise ValueError(f"ARCHITECTURE.md upward-imports: {line!r} is not 'room -> room'")
        upward_pairs.add((source.strip(), target.strip()))
    reaches: set[tuple[str, str]] = set()
    for line in found["private-reaches"]:
        source, arrow, target = line.partition("->")
        if not arrow or not is_private(_module(target.strip())):
            raise ValueError(f"ARCHITECTURE.md private-reaches: {line!r} is not 'room -> room._module'")
        reaches.add((source.strip(), target.strip()))
    return Plan(
        floors=tuple(floors),
        floor_names=tuple(names),
        upward=frozenset(upward_pairs),
        folder_circles=frozenset(frozenset(line.split()) for line in found["folder-circles"]),
        file_circles=frozenset(frozenset(_module(n) for n in line.split()) for line in found["file-circles"]),
        big_modules=frozenset(_module(line) for line in found["big-modules"]),
        private_reaches=frozenset(reaches),
    )


# --- the check -----------------------------------------------------------------------------------------------------


@dataclass
class Findings:
    """What the source shows, and where it differs from the plan (``new``: fix it; ``gone``: strike it)."""

    edges: list[Edge]
    upward: dict[tuple[str, str], list[Edge]]
    folder_circles: list[frozenset[str]]
    file_circles: list[frozenset[str]]
    big_modules: dict[str, int]
    private: dict[tuple[str, str], list[Edge]] = field(default_factory=dict[tuple[str, str], list[Edge]])
    new: list[str] = field(default_factory=list[str])
    gone: list[str] = field(default_factory=list[str])


def _short(module: str) -> str:
    return module.removeprefix("tether.")


def _where(edges: list[Edge]) -> str:
    shown = ", ".join(
        f"{_short(e.source)}:{e.line} -> {_short(e.target)}" + (" (types only)" if e.types_only else "")
        for e in edges[:3]
    )
    return shown + (f", and {len(edges) - 3} more" if len(edges) > 3 else "")


def check(plan: Plan, src: Path = SRC) -> Findings:
    """Compare the source's graph with the plan."""
    edges = graph(src)
    rooms = {room(m) for m in modules(src)}
    placed = [r for floor in plan.floors for r in floor]
    new: list[str] = []
    gone: list[str] = []
    new += [f"room {r} has no floor (give it one in the floors block)" for r in sorted(rooms - set(placed))]
    gone += [f"floor room {r} does not exist" for r in sorted(set(placed) - rooms)]
    new += [f"room {r} stands on two floors" for r in sorted({r for r in placed if placed.count(r) > 1})]
    if new:  # the rest needs every room on one floor
        return Findings(edges, {}, [], [], {}, new=new, gone=gone)
    up = upward(edges, plan.floors)
    for pair, where in sorted(up.items()):
        if pair not in plan.upward:
            new.append(f"upward import {pair[0]} -> {pair[1]}: {_where(where)}")
    gone += [
        f"upward import {a} -> {b} (listed, no longer in the source)"
        for a, b in sorted(plan.upward - set(up))
    ]
    folders = [frozenset(c) for c in folder_circles(edges)]
    for circle in folders:
        if circle not in plan.folder_circles:
            new.append(f"folder circle {' '.join(sorted(circle))}")
    for circle in plan.folder_circles - set(folders):
        gone.append(f"folder circle {' '.join(sorted(circle))} (listed, no longer in the source)")
    files = [frozenset(c) for c in file_circles(edges)]
    for circle in files:
        if circle not in plan.file_circles:
            new.append(f"file circle {' '.join(sorted(map(_short, circle)))}")
    for circle in plan.file_circles - set(files):
        gone.append(f"file circle {' '.join(sorted(map(_short, circle)))} (listed, no longer in the source)")
    big = big_modules(src)
    new += [f"module {_short(m)} has {n} lines (over {MAX_LINES})" for m, n in sorted(big.items())
            if m not in plan.big_modules]  # fmt: skip
    gone += [f"big module {_short(m)} (listed, now at most {MAX_LINES} lines or gone)"
             for m in sorted(plan.big_modules - set(big))]  # fmt: skip
    reaches = private_reaches(edges)
    new += [f"private reach {a} -> {b}: {_where(where)} (export it through {room(_module(b))}.internal and import it from there)"
            for (a, b), where in sorted(reaches.items()) if (a, b) not in plan.private_reaches]  # fmt: skip
    gone += [f"private reach {a} -> {b} (listed, no longer in the source)"
             for a, b in sorted(plan.private_reaches - set(reaches))]  # fmt: skip
    return Findings(edges, up, folders, files, big, reaches, new, gone)


def _closing_path(edges: list[Edge], start: str, goal: str) -> list[str]:
    """The shortest room path from ``start`` to ``goal`` (how an upward import closes a circle)."""
    by_room = room_edges(edges)
    previous: dict[str, str] = {}
    queue = [start]
    seen = {start}
    while queue:
        current = queue.pop(0)
        if current == goal:
            path = [goal]
            while path[-1] != start:
                path.append(previous[path[-1]])
            return path[::-1]
        for nxt in sorted(by_room.get(current, ())):
            if nxt not in seen:
                seen.add(nxt)
                previous[nxt] = current
                queue.append(nxt)
    return []


def report(plan: Plan, findings: Findings) -> str:
    """The human report: floors, upward imports (with the circle each closes), circles, big modules, verdict."""
    lines = ["floors (a room imports its own floor and below):"]
    for number in reversed(range(len(plan.floors))):
        lines.append(f"  {number:2} {plan.floor_names[number]:<10} {' '.join(sorted(plan.floors[number]))}")
    lines.append(f"upward imports: {len(findings.upward)}")
    for (source, target), where in sorted(findings.upward.items()):
        back = _closing_path(findings.edges, target, source)
        closes = f"; closes {' -> '.join([source, *back])}" if back else ""
        lines.append(f"  {source} -> {target}: {_where(where)}{closes}")
    lines.append(f"folder circles: {len(findings.folder_circles)}")
    lines += [f"  {' '.join(sorted(c))}" for c in findings.folder_circles]
    lines.append(f"file circles: {len(findings.file_circles)}")
    lines += [f"  {' '.join(sorted(map(_short, c)))}" for c in findings.file_circles]
    lines.append(f"modules over {MAX_LINES} lines: {len(findings.big_modules)}")
    lines += [f"  {_short(m)}: {n}" for m, n in sorted(findings.big_modules.items())]
    lines.append(f"private reaches (a room importing another room's private module): {len(findings.private)}")
    lines += [f"  {a} -> {b}: {_where(where)}" for (a, b), where in sorted(findings.private.items())]
    if findings.new:
        lines.append("NEW (fix these; the lists in ARCHITECTURE.md only shrink):")
        lines += [f"  {item}" for item in findings.new]
    if findings.gone:
        lines.append("GONE (strike these from ARCHITECTURE.md's lists):")
        lines += [f"  {item}" for item in findings.gone]
    if not findings.new and not findings.gone:
        lines.append("ok: the source matches ARCHITECTURE.md")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--graph", action="store_true", help="print the room-to-room imports and stop")
    args = parser.parse_args(argv)
    if args.graph:
        for source, targets in sorted(room_edges(graph()).items()):
            print(f"{source} -> {' '.join(sorted(targets))}")
        return 0
    plan = read_plan()
    findings = check(plan)
    print(report(plan, findings))
    return 1 if findings.new or findings.gone else 0


if __name__ == "__main__":
    sys.exit(main())
