"""What an untrusted project's config file may set: only what tightens the user's own configuration.

A cloned repository is hostile until the user trusts it (ARCHITECTURE law 11). Its config layer is filtered here,
on the raw (already validated) JSON, before it is parsed and merged:

- kept: ``deny``/``ask`` rules (top level and in agent sections), ``tools: {x: false}``, disabling an agent, lower
  limits (``tool_output`` below the user's or the default value, agent ``steps`` below the user's), and harmless
  choices (agent ``mode``, ``description``, ``hidden``, ``prompt``) for agents that are built in or defined by the
  user, and ``instructions`` entries that name files
  inside the project (the instruction loader checks again, with symlinks followed, and refuses what lands outside);
- ignored, each reported once: ``provider`` (a URL that would receive the user's key, ``api_key_env`` naming any
  variable, headers), ``shell``, ``mcp`` and ``mcpServers`` (a server is a program tether would start, or a URL
  it would send the session's tool calls to), every ``allow`` rule (``"permission": "allow"``, ``{"bash": "allow"}``,
  ``tools: {x: true}``), re-enabling an agent the user disabled, raising a limit, ``model`` and ``agent.<name>.model``
  (the model is who receives the prompt, the instruction files and the code: ``vllm/x`` sends them to a local port
  another user may hold, ``replay``/``scripted:`` play tool calls with no model behind them; a value equal to the
  user's own is kept, silently), absolute or ``..`` instruction paths, and every key this list does
  not name (a key added to the models later is not trusted by accident; a key the models do not know is an error
  before this filter runs);
- ignored too: a new agent (``agent.<name>`` for a name neither built in nor in the user's config), and a
  ``default_agent`` other than the one the user's config runs (its own ``default_agent``, else ``build``). The
  user's per-agent rules (``agent.build.permission: {"bash": "deny"}``) bind that agent only: a project that picked
  another agent to run, or brought one of its own that starts from the built-in defaults, would drop them silently.

An agent ``prompt`` is kept: it is system text of the same standing as the project's ``AGENTS.md``, which the model
reads anyway; it cannot change what the permission rules allow.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from .._record import record
from ..output import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES
from ._json import KeyPath, format_path

__all__ = ["BUILTIN_AGENT_NAMES", "Ignored", "describe", "ignored_notices", "restrict_project", "servers"]

_TOP_KEYS = frozenset(
    {"$schema", "default_agent", "permission", "tools", "agent", "instructions", "tool_output"}
)
_AGENT_KEYS = frozenset(
    {
        "permission",
        "tools",
        "mode",
        "steps",
        "maxSteps",
        "prompt",
        "hidden",
        "disable",
        "description",
        "color",
        "temperature",
        "top_p",
    }
)
_SERVER_KEYS = ("mcp", "mcpServers")
_DEFAULT_LIMITS = {"max_lines": DEFAULT_MAX_LINES, "max_bytes": DEFAULT_MAX_BYTES}
# The agents tether defines (``permissions._agents``; a test pins the two lists together). Config sits below
# permissions, so the names are repeated here rather than imported.
BUILTIN_AGENT_NAMES = frozenset({"build", "plan", "general", "explore", "compaction", "title", "summary"})


@record
class Ignored:
    """A key of an untrusted project's config that was not applied.

    Attributes:
        file: the project config file that set it.
        key: the key path, as errors show it (``shell``, ``permission.bash``, ``provider``).
        root: the project root, the directory to pass to ``tether trust``.
        detail: what the key would run or reach, for an MCP server (``npx -y pkg``, its URL); else empty.
    """

    file: Path
    key: str
    root: Path
    detail: str = ""

    def __str__(self) -> str:
        return (
            f"ignored {self.key} in {self.file}: this project is not trusted "
            f"(to apply it, run: tether trust {self.root})"
        )


def restrict_project(
    value: Mapping[str, Any], user: Mapping[str, Any]
) -> tuple[dict[str, Any], list[KeyPath]]:
    """Keep only what tightens: return the filtered project layer and the key paths that were dropped.

    Args:
        value: the project's raw config object (validated by ``parse_config`` already).
        user: the user's raw merged config, the baseline a limit may only go below.
    """
    dropped: list[KeyPath] = []
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "model" and item == user.get("model"):
            out[key] = item  # the user's own choice, repeated: nothing to report
        elif key == "provider":
            dropped.extend(_provider_keys(item))
        elif key in _SERVER_KEYS and isinstance(item, dict) and item:
            dropped.extend((key, name) for name in cast(Mapping[str, Any], item))
        elif key not in _TOP_KEYS:
            dropped.append((key,))
        elif key == "permission":
            kept = _rules(item, ("permission",), dropped)
            if kept is not None:
                out[key] = kept
        elif key == "tools":
            out[key] = _tools(item, ("tools",), dropped)
        elif key == "agent":
            users = user.get("agent")
            mine = cast(Mapping[str, Any], users) if isinstance(users, dict) else {}
            agents: dict[str, Any] = {}
            for name, section in cast(Mapping[str, Any], item).items():
                if name in BUILTIN_AGENT_NAMES or name in mine:
                    agents[name] = _agent(section, mine.get(name) or {}, ("agent", name), dropped)
                else:
                    dropped.append(("agent", name))
            out[key] = agents
        elif key == "default_agent":
            if item == (user.get("default_agent") or "build"):
                out[key] = item
            else:
                dropped.append((key,))
        elif key == "instructions":
            out[key] = _instructions(cast(list[str], item), dropped)
        elif key == "tool_output":
            out[key] = _limits(cast(Mapping[str, int], item), user.get("tool_output"), dropped)
        else:
            out[key] = item
    return out, dropped


def describe(ignored: tuple[Ignored, ...]) -> str:
    """What the ignored keys would set, for the trust question: ``shell and a provider URL``."""
    what = list(dict.fromkeys(_topic(i.key) for i in ignored))
    if len(what) == 1:
        return what[0]
    return ", ".join(what[:-1]) + " and " + what[-1]


def servers(ignored: tuple[Ignored, ...]) -> list[str]:
    """The MCP servers among the ignored keys, each as ``name: what it starts or reaches`` (for the trust question)."""
    return [
        f"{i.key.split('.', 1)[1]}: {i.detail}" if i.detail else i.key.split(".", 1)[1]
        for i in ignored
        if i.key.split(".", 1)[0] in _SERVER_KEYS and "." in i.key
    ]


def _server_detail(path: KeyPath, value: Mapping[str, Any] | None) -> str:
    """An MCP server entry's command line (``command`` then ``args``) or URL, as the project wrote it."""
    if value is None or len(path) != 2 or path[0] not in _SERVER_KEYS:
        return ""
    section = value.get(path[0])
    entry = cast(Mapping[str, Any], section).get(str(path[1])) if isinstance(section, dict) else None
    if not isinstance(entry, dict):
        return ""
    entry = cast(Mapping[str, Any], entry)
    if isinstance(entry.get("url"), str):
        return str(entry["url"])
    command = entry.get("command")
    words = [command] if isinstance(command, str) else cast(list[Any], command or [])
    args = entry.get("args")
    words += cast(list[Any], args) if isinstance(args, list) else []
    return " ".join(str(w) for w in words)


def _provider_keys(value: object) -> list[KeyPath]:
    """Every key of the ``provider`` section, reported one by one (``provider.openai.base_url``)."""
    if not isinstance(value, dict) or not value:
        return [("provider",)]
    paths: list[KeyPath] = []
    for name, entry in cast(Mapping[str, Any], value).items():
        if isinstance(entry, dict) and entry:
            paths += [("provider", name, key) for key in cast(Mapping[str, Any], entry)]
        else:
            paths.append(("provider", name))
    return paths


def _topic(key: str) -> str:
    head = key.split(".", 1)[0].split("[", 1)[0]
    if head == "provider":
        return "a provider URL" if "base_url" in key or "baseURL" in key or "options" in key else "a provider"
    if head in ("permission", "tools") or ".permission" in key or ".tools" in key:
        return "allow rules"
    if head in ("mcp", "mcpServers"):
        return "MCP servers (programs it would start, URLs it would reach)"
    if head == "instructions":
        return "instruction files outside the project"
    if head == "tool_output" or key.endswith(("steps", "maxSteps")):
        return "higher limits"
    return head if head != "agent" else key


def _rules(value: object, path: KeyPath, dropped: list[KeyPath]) -> object | None:
    if isinstance(value, str):
        if value == "allow":
            dropped.append(path)
            return None
        return value
    kept: dict[str, Any] = {}
    for action, spec in cast(Mapping[str, Any], value).items():
        if isinstance(spec, str):
            if spec == "allow":
                dropped.append((*path, action))
            else:
                kept[action] = spec
            continue
        patterns: dict[str, Any] = {}
        for pattern, effect in cast(Mapping[str, Any], spec).items():
            if effect == "allow":
                dropped.append((*path, action, pattern))
            else:
                patterns[pattern] = effect
        kept[action] = patterns
    return kept


def _tools(value: object, path: KeyPath, dropped: list[KeyPath]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for name, enabled in cast(Mapping[str, Any], value).items():
        if enabled is True:
            dropped.append((*path, name))
        else:
            kept[name] = enabled
    return kept


def _agent(section: object, user: Mapping[str, Any], path: KeyPath, dropped: list[KeyPath]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, item in cast(Mapping[str, Any], section).items():
        at = (*path, key)
        if key == "model" and item == user.get("model"):
            kept[key] = item
        elif key not in _AGENT_KEYS:
            dropped.append(at)
        elif key == "permission":
            rules = _rules(item, at, dropped)
            if rules is not None:
                kept[key] = rules
        elif key == "tools":
            kept[key] = _tools(item, at, dropped)
        elif key == "disable" and item is False and user.get("disable") is True:
            dropped.append(at)
        elif key in ("steps", "maxSteps") and not _lower(item, user.get("steps", user.get("maxSteps"))):
            dropped.append(at)
        else:
            kept[key] = item
    return kept


def _lower(value: object, baseline: object) -> bool:
    if value is None or not isinstance(baseline, int) or isinstance(baseline, bool):
        return True
    return isinstance(value, int) and value <= baseline


def _limits(value: Mapping[str, int], user: object, dropped: list[KeyPath]) -> dict[str, int]:
    users = cast(Mapping[str, Any], user) if isinstance(user, dict) else {}
    kept: dict[str, int] = {}
    for name, limit in value.items():
        baseline = users.get(name, _DEFAULT_LIMITS.get(name))
        if _lower(limit, baseline):
            kept[name] = limit
        else:
            dropped.append(("tool_output", name))
    return kept


def _instructions(entries: list[str], dropped: list[KeyPath]) -> list[str]:
    kept: list[str] = []
    for n, entry in enumerate(entries):
        if _outside(entry):
            dropped.append(("instructions", n))
        else:
            kept.append(entry)
    return kept


def _outside(entry: str) -> bool:
    """Whether an instruction entry names a path outside the project by its spelling alone."""
    if entry.startswith(("/", "~", "\\")) or (len(entry) > 1 and entry[1] == ":"):
        return True
    normal = posixpath.normpath(entry.replace("\\", "/"))
    return normal == ".." or normal.startswith("../")


def ignored_notices(
    dropped: list[KeyPath], *, file: Path, root: Path, value: Mapping[str, Any] | None = None
) -> tuple[Ignored, ...]:
    """One :class:`Ignored` per dropped key path, in file order, without repeats; ``value`` (the project's raw
    config) gives an MCP server's ``detail``."""
    keys: dict[str, str] = {}
    for path in dropped:
        keys.setdefault(format_path(path, shown=True), _server_detail(path, value))
    return tuple(Ignored(file=file, key=key, root=root, detail=detail) for key, detail in keys.items())
