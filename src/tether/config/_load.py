"""Loading ``tether.json``: the user file, then the project file, then ``TETHER_PERMISSION``; later layers win.

The project is the one the directory belongs to (``find_project``: the nearest ``.tether/``, ``tether.json`` or
``tether.jsonc`` above it, else the git root), and its file is whichever of ``.tether/tether.json``,
``.tether/tether.jsonc``, ``tether.json`` or ``tether.jsonc`` it has. Every file is JSONC (comments, trailing commas).

The project file comes with a repository, so it is untrusted unless the caller says the user trusted the project
(``trusted=True``; the CLI keeps the trusted roots in a :class:`~tether.config.TrustStore`). An untrusted project's
layer may only tighten (``_restrict``): what it may not set is left out and reported in :attr:`Config.ignored`.

Each file is checked whole against the models of ``_models`` before merging, so an error always points at the file
that holds the mistake (file, line, key path; an unknown key names the closest known one). The keys this package owns
(``permission``, ``tools``, ``agent``) are parsed into typed values; the merged JSON stays in ``Config.data`` for the
packages that read the others (``model``, ``provider``, ``tool_output``, ``instructions``, ``shell``, ...).

Merging: objects merge key by key (deep), other values are replaced by the later layer. Permission rules are not
merged but *concatenated*, user rules first, so a project rule comes later and wins by the last-match law.
``instructions`` entries concatenate too, each remembering whether it came from the user's own config
(:class:`Instruction`), because only those may name files outside the project.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

from .._agent_config import AgentConfig, AgentMode
from .._record import record
from ..errors import ConfigError
from ..paths import default_config_dir
from ..rules import Rule
from ._discover import find_project, project_file
from ._json import KeyPath, format_path, key_lines, leaves, parse_json, read_json
from ._permission import Fail, parse_tools, rules_from_value
from ._restrict import Ignored, ignored_notices, restrict_project
from ._validate import check_config

if TYPE_CHECKING:
    from ._models import AgentSection

__all__ = [
    "CONFIG_FILE",
    "PERMISSION_ENV",
    "PROJECT_CONFIG",
    "AgentConfig",
    "AgentMode",
    "Config",
    "Instruction",
    "load_config",
    "parse_config",
    "parse_permission",
    "user_config_path",
]

CONFIG_FILE = "tether.json"
PROJECT_CONFIG = Path(".tether") / CONFIG_FILE
"""The usual project config file, relative to the project root (``tether.json`` or ``tether.jsonc`` there, or
``.tether/tether.jsonc``, are read as well)."""
PERMISSION_ENV = "TETHER_PERMISSION"
"""An environment variable holding a JSON ``permission`` value, applied after both files."""


@record
class Instruction:
    """One ``instructions`` entry (a path or glob) and where it came from.

    Attributes:
        entry: the path or glob as written (relative entries are relative to the project root).
        file: the config file that lists it.
        own: whether it comes from the user's own config (or a trusted project): only such an entry may name a file
            outside the project; any other is refused by the instruction loader.
        project: whether it comes from the project's config file (trusted or not): the files it names must pass
            the agent's ``read`` rules, as the ``read`` tool's paths do (a project naming ``.env`` is refused).
    """

    entry: str
    file: Path
    own: bool = True
    project: bool = False


@record
class Config:
    """The merged configuration.

    ``data`` is the raw merged JSON object for keys other packages own; ``permission`` and ``agents`` are the parsed
    keys this package owns (use them rather than ``data["permission"]``, whose deep merge does not keep rule order
    across files). ``files`` lists the files that were read, in merge order. ``instructions`` holds every layer's
    entries in order (``data["instructions"]`` holds only the last layer's list). ``ignored`` lists what an untrusted
    project's file set but may not (print each once, e.g. on stderr); ``project_trusted`` says whether the project
    layer, and the project's own instruction files, were taken in full. ``project_permission`` holds an untrusted
    project's rules (only ``deny``/``ask`` survive the restriction): they are evaluated as a *tighten-only* layer
    (the stricter of the decision with and without them), so a project ``ask`` never softens a deny of the user's or
    of a built-in agent (plan's ``edit: deny``). A trusted project's rules are in ``permission`` like the user's.
    ``root`` is the project root found from the directory passed to :func:`load_config` (``None`` without one): the
    directory of the project's config, of its top ``AGENTS.md``, and of relative ``instructions`` entries.
    ``origins`` maps every leaf of ``data`` (``("provider", "work", "base_url")``) to the file that set it.
    ``refused`` holds one warning line per project config file that was not read because it is not the user's own
    (owned by another user, or writable by others: ``_discover.foreign``); print each once, as ``ignored``.
    """

    data: Mapping[str, Any] = field(default_factory=dict[str, Any])
    permission: tuple[Rule, ...] = ()
    project_permission: tuple[Rule, ...] = ()
    agents: Mapping[str, AgentConfig] = field(default_factory=dict[str, AgentConfig])
    files: tuple[Path, ...] = ()
    instructions: tuple[Instruction, ...] = ()
    ignored: tuple[Ignored, ...] = ()
    project_trusted: bool = False
    root: Path | None = None
    origins: Mapping[KeyPath, Path] = field(default_factory=dict[KeyPath, Path])
    refused: tuple[str, ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        """Return the raw merged value of a top-level key."""
        return self.data.get(key, default)


def user_config_path() -> Path:
    """The user config file: ``tether.json`` (or, when only that exists, ``tether.jsonc``) in ``$TETHER_CONFIG_DIR``
    or the platform's user config directory."""
    directory = default_config_dir()
    plain, commented = directory / CONFIG_FILE, directory / (CONFIG_FILE + "c")
    return commented if not os.path.lexists(plain) and os.path.lexists(commented) else plain


def _user_file() -> Path:
    found = user_config_path()
    other = found.with_name(CONFIG_FILE + "c")
    if found.name == CONFIG_FILE and os.path.lexists(other) and os.path.lexists(found):
        raise ConfigError(f"two config files: {found} and {other}; keep one", file=str(other))
    return found


def _failer(file: str, text: str | None) -> Fail:
    def fail(message: str, path: KeyPath) -> NoReturn:
        line = key_lines(text).get(path) if text is not None and path else None
        raise ConfigError(message, file=file, key=format_path(path, shown=True) or None, line=line)

    return fail


def _agent(name: str, raw: Mapping[str, Any], section: AgentSection) -> AgentConfig:
    """One checked ``agent.<name>`` section as an :class:`AgentConfig` (``raw`` is its JSON, kept for merging)."""
    rules: tuple[Rule, ...] = ()
    if "tools" in raw:
        rules += parse_tools(raw["tools"], (), _unreachable)
    if "permission" in raw:
        rules += rules_from_value(raw["permission"], (), _unreachable)
    return AgentConfig(
        name=name,
        permission=rules,
        mode=section.mode,
        steps=section.steps if section.steps is not None else section.maxSteps,
        prompt=section.prompt,
        hidden=section.hidden,
        disable=bool(section.disable),
        description=section.description,
        model=section.model,
        data=raw,
    )


def _unreachable(message: str, path: KeyPath) -> NoReturn:
    raise AssertionError(f"checked by the models already: {message} at {format_path(path)}")


def _merge_data(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        below = out.get(key)
        if isinstance(below, dict) and isinstance(value, dict):
            out[key] = _merge_data(cast(Mapping[str, Any], below), cast(Mapping[str, Any], value))
        else:
            out[key] = value
    return out


def _merge_agent(base: AgentConfig, top: AgentConfig) -> AgentConfig:
    return replace(
        base,
        permission=base.permission + top.permission,
        project_permission=base.project_permission + top.project_permission,
        mode=top.mode if top.mode is not None else base.mode,
        steps=top.steps if top.steps is not None else base.steps,
        prompt=top.prompt if top.prompt is not None else base.prompt,
        hidden=top.hidden if top.hidden is not None else base.hidden,
        disable=top.disable if "disable" in top.data else base.disable,
        description=top.description if top.description is not None else base.description,
        model=top.model if top.model is not None else base.model,
        data=_merge_data(base.data, top.data),
    )


def merge(base: Config, top: Config) -> Config:
    """Layer ``top`` over ``base``: data merges deep, rules concatenate, agent sections merge field by field."""
    agents = dict(base.agents)
    for name, section in top.agents.items():
        agents[name] = _merge_agent(agents[name], section) if name in agents else section
    return Config(
        data=_merge_data(base.data, top.data),
        permission=base.permission + top.permission,
        project_permission=base.project_permission + top.project_permission,
        agents=agents,
        files=base.files + top.files,
        instructions=base.instructions + top.instructions,
        ignored=base.ignored + top.ignored,
        origins={**base.origins, **top.origins},
    )


def parse_config(value: object, *, file: str, text: str | None = None) -> Config:
    """Check one parsed config file (``value``) against the models and return it as a :class:`Config`.

    Args:
        value: the parsed JSON.
        file: the file name used in errors.
        text: the file's text, used to find the line of a bad key.

    Raises:
        ConfigError: an unknown key (with the closest known one) or a malformed value; the error names the file,
            line and key path.
    """
    fail = _failer(file, text)
    if not isinstance(value, dict):
        fail("the config must be a JSON object", ())
    data = cast(Mapping[str, Any], value)
    lines: list[dict[KeyPath, int]] = []

    def line_of(path: KeyPath) -> int | None:  # the key index is built on the error path only, once
        if text is None:
            return None
        if not lines:
            lines.append(key_lines(text))
        return lines[0].get(path)

    checked = check_config(data, fail, line_of)
    rules: tuple[Rule, ...] = ()
    if "tools" in data:
        rules += parse_tools(data["tools"], ("tools",), _unreachable)
    if "permission" in data:
        rules += rules_from_value(data["permission"], ("permission",), _unreachable)
    raw_agents = cast(Mapping[str, Mapping[str, Any]], data.get("agent") or {})
    agents = {name: _agent(name, raw_agents[name], section) for name, section in checked.agent.items()}
    instructions = tuple(Instruction(entry=e, file=Path(file)) for e in checked.instructions)
    return Config(
        data=data,
        permission=rules,
        agents=agents,
        files=(Path(file),),
        instructions=instructions,
        origins={path: Path(file) for path, _ in leaves(data)},
    )


def parse_permission(value: object, *, file: str = "permission") -> tuple[Rule, ...]:
    """Parse a ``permission`` value in config shape (``"allow"`` or ``{"bash": {"git *": "allow"}}``) into rules.

    Raises:
        ConfigError: an unknown effect or a malformed shape, naming ``file`` and the key path.
    """
    return rules_from_value(value, ("permission",), _failer(file, None))


def _read(path: Path) -> Config | None:
    found = read_json(path)
    if found is None:
        return None
    value, text = found
    return parse_config(value, file=str(path), text=text)


def _read_untrusted(path: Path, root: Path, user: Config) -> Config | None:
    """The project layer of an untrusted project: validated whole (errors still name the file), then restricted."""
    found = read_json(path)
    if found is None:
        return None
    value, text = found
    parse_config(value, file=str(path), text=text)
    kept, dropped = restrict_project(cast(Mapping[str, Any], value), user.data)
    layer = parse_config(kept, file=str(path), text=text)
    return replace(
        _tighten_only(layer),
        instructions=tuple(replace(i, own=False) for i in layer.instructions),
        ignored=ignored_notices(dropped, file=path, root=root, value=cast(Mapping[str, Any], value)),
    )


def _tighten_only(layer: Config) -> Config:
    """Move an untrusted project's rules to the tighten-only layers (``project_permission``), top level and per agent.

    The last matching rule wins, so a project's ``{"bash": "ask"}`` placed among the user's rules would turn the
    user's ``{"bash": {"rm *": "deny"}}`` (or plan's built-in ``edit: deny``) into a question, and ``--yes`` into an
    allow. As a tighten-only layer it is evaluated as the stricter of the decision with and without it.
    """
    agents = {
        name: replace(section, permission=(), project_permission=section.permission)
        for name, section in layer.agents.items()
    }
    return replace(layer, permission=(), project_permission=layer.permission, agents=agents)


def load_config(
    project_dir: Path | str | None = None,
    *,
    user_file: Path | str | None = None,
    environ: Mapping[str, str] | None = None,
    trusted: bool = False,
) -> Config:
    """Load and merge the user config, the config of the project containing ``project_dir``, and
    ``$TETHER_PERMISSION``.

    This reads files: from async code call it through ``anyio.to_thread.run_sync``.

    Args:
        project_dir: a directory of the project (its root is found with :func:`find_project`); ``None`` reads no
            project file.
        user_file: the user config file; defaults to :func:`user_config_path`.
        environ: the environment to read ``TETHER_PERMISSION`` from; defaults to ``os.environ``.
        trusted: the user trusts this project (its root): its file is applied like the user's own. Otherwise it may
            only tighten, and what it may not set is listed in :attr:`Config.ignored`.

    Raises:
        ConfigError: a file is unreadable or invalid; the error names the file, line and key path. A project with two
            config files (``tether.json`` and ``.tether/tether.json``) is an error too.
    """
    user = Path(user_file) if user_file is not None else _user_file()
    config = _read(user) or Config()
    root = find_project(project_dir) if project_dir is not None else None
    refused: list[str] = []
    if root is not None:
        path = project_file(root, user_file=user, refused=refused)
        layer = None if path is None else _read(path) if trusted else _read_untrusted(path, root, config)
        if layer is not None:
            layer = replace(layer, instructions=tuple(replace(i, project=True) for i in layer.instructions))
            config = merge(config, layer)
    config = replace(config, project_trusted=trusted and root is not None, root=root, refused=tuple(refused))
    env = os.environ if environ is None else environ
    raw = env.get(PERMISSION_ENV)
    if raw:
        where = f"${PERMISSION_ENV}"
        value = parse_json(raw, where)
        rules = rules_from_value(value, ("permission",), _failer(where, None))
        config = replace(config, permission=config.permission + rules)
    return config
