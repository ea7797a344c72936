"""Agents and their default rulesets (reference §2.11), with config rules layered after the defaults.

An agent's configured rules are an ordered tuple of labelled rulesets:

1. ``agent``: the built-in defaults for that agent;
2. ``config``: the config file's top-level ``permission`` (and legacy ``tools``);
3. ``agent-config``: the config's ``agent.<name>.permission``;
4. ``project``: an untrusted project's rules (``Config.project_permission``, top level then the agent's section), a
   *tighten-only* ruleset: the stricter of the decision with and without it decides, so a project ``ask`` never
   softens the user's or the agent's own ``deny`` (plan's ``edit: deny``).

The session layer appends, when it resolves a request, the session's own retained-output allow
(``retained_output_rules``: only that session's outputs, not the whole data directory) and then its ``session``
rules.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, Protocol

from .._agent_config import AgentConfig, AgentMode
from .._record import record
from ..errors import UsageError
from ..paths import default_config_dir
from ._ruleset import Ruleset
from ._types import Effect, Rule

__all__ = [
    "BASH_DESTRUCTIVE",
    "BASH_READ_ONLY",
    "BASH_WRITING_OPTIONS",
    "DEFAULT_AGENT",
    "Agent",
    "AgentMode",
    "builtin_agents",
]

DEFAULT_AGENT = "build"


class AgentLayers(Protocol):
    """What the agents are layered from: the configured rules and ``agent.<name>`` sections. A loaded
    ``tether.config.Config`` is one; this package stands below ``config`` and never imports it."""

    @property
    def permission(self) -> tuple[Rule, ...]:
        """The top-level ``permission`` (and legacy ``tools``) rules, every file's in order."""
        ...

    @property
    def project_permission(self) -> tuple[Rule, ...]:
        """An untrusted project's top-level rules (a tighten-only layer)."""
        ...

    @property
    def agents(self) -> Mapping[str, AgentConfig]:
        """The ``agent.<name>`` sections by name."""
        ...


@record
class Agent:
    """A named agent: its mode, its configured rules, and optional step limit, prompt and model.

    ``prompt`` is a configured text that replaces tether's built-in base text for the agent (``None``: the built-in
    text of ``tether.prompts``, chosen by the agent's name and the model's family). ``options`` are request options
    (``tether.llm.RequestOptions``: ``temperature``, ``top_p``) every step of the agent sends, under the options a
    caller passes to ``Session.prompt``.

    Give either ``rules`` (one ruleset labelled ``agent``) or ``rulesets`` (labelled layers); the other is derived.
    ``rules`` is always the flat, ordered concatenation of ``rulesets``.

    Raises:
        UsageError: both were given and they disagree.
    """

    name: str
    mode: AgentMode = "all"
    rules: tuple[Rule, ...] = ()
    steps: int | None = None
    prompt: str | None = None
    hidden: bool = False
    description: str | None = None
    model: str | None = None
    rulesets: tuple[Ruleset, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        rules = tuple(self.rules)
        if not self.rulesets:
            object.__setattr__(self, "rulesets", (Ruleset(source="agent", rules=rules),))
        else:
            flat = tuple(rule for ruleset in self.rulesets for rule in ruleset.rules)
            if rules and rules != flat:
                raise UsageError(f"Agent {self.name!r}: rules and rulesets disagree; give only one of them")
            rules = flat
        object.__setattr__(self, "rules", rules)


def _rules(action: str, patterns: Iterable[tuple[str, Effect]]) -> list[Rule]:
    return [Rule(action, pattern, effect) for pattern, effect in patterns]


def _external_readonly(data: str, tmp: str, skills: str) -> list[Rule]:
    # The data directory asks even when it lies in the temp directory: it holds every session's outputs and the
    # store. A session's own retained outputs are allowed per session (``retained_output_rules``). The user's own
    # skills folder is readable, as OpenCode allows each skill directory: a loaded skill names its files there.
    return _rules(
        "external_directory",
        [("*", "ask"), (f"{tmp}/*", "allow"), (f"{skills}/*", "allow"), (f"{data}/*", "ask")],
    )


_ENV_READS: list[Rule] = _rules("read", [("*.env", "ask"), ("*.env.*", "ask"), ("*.env.example", "allow")])

BASH_READ_ONLY = (
    *("ls *", "cat *", "head *", "tail *", "wc *", "grep *", "rg *", "find *", "pwd *", "echo *", "diff *"),
    *("which *", "stat *", "du *", "df *", "basename *", "dirname *", "realpath *", "readlink *", "whoami *"),
    *("seq *", "sleep *", "true *", "false *"),
    *("git status *", "git diff *", "git log *", "git show *", "git branch", "git branch --show-current"),
    *("git branch -a", "git branch -r", "git branch -v", "git branch -vv", "git branch --list", "< *"),
)
"""The ``bash`` patterns the built-in agents allow: commands that only read (and input redirections, ``< f``).

Decided on every form of a command (its text and its normalized forms, see ``docs/bash.md``), so ``\\ls`` or
``sudo ls`` ask; paths outside the project still ask ``external_directory``, and writes (``> f``, ``--output=f``)
ask ``bash`` for the redirection and ``edit`` for the file. Every other command asks.
"""

BASH_WRITING_OPTIONS = (
    *("find *-exec*", "find *-ok*", "find *-delete*", "find *-fprint*", "find *-fls*"),
    *("git *--output*", "rg *--pre*"),
)
"""Options that make a :data:`BASH_READ_ONLY` command write a file or run another program: they ask."""


_GIT_DESTRUCTIVE = (
    *("reset *--hard*", "clean *", "checkout *", "restore *", "rm *", "stash drop *", "stash clear *"),
    *("branch -D *", "worktree remove *", "switch -f*", "switch * -f*", "switch *--force*"),
    *("switch *--discard-changes*", "push *"),
)

BASH_DESTRUCTIVE = (
    *(
        "rm *",
        "rmdir *",
        "unlink *",
        "shred *",
        "truncate *",
        "mv *",
        "dd *",
        "find *-delete*",
        "rsync *--delete*",
    ),
    *("> *", ">| *", "1> *", "1>| *", "2> *", "2>| *", "&> *"),
    *(f"git {pattern}" for pattern in _GIT_DESTRUCTIVE),
    *(f"git -* {pattern}" for pattern in _GIT_DESTRUCTIVE),
)
"""What still asks when the sandbox holds commands (``docs/permissions.md``, "With the sandbox"): deleting, moving
over, truncating or resetting the project's files, which no sandbox protects from a command allowed to write the
project. A truncating redirection (``> f``, ``2> f``, ``&> f``, ``>| f``) asks because the rules cannot see whether
``f`` exists and ``sort f > f`` empties it (``>>`` appends and ``2>&1``, ``> /dev/null`` write nothing: allowed);
``mv`` asks because its target may exist. ``git push`` asks too: it leaves the machine through git's own
credentials when the network is on. ``git -* ...`` are the same subcommands after git's own options (``git -C .
clean -fd``, ``git --no-pager reset --hard``), which the rules cannot skip."""


def _bash_defaults(sandboxed: bool) -> list[Rule]:
    if sandboxed:
        # The kernel holds writes to the project and temp (protected paths read-only) and the network: commands run
        # without asking, except what destroys work. Parse-level asks (protected paths, outside directories,
        # uncertain text) still ask before this rule is reached.
        return [
            Rule("bash", "*", "allow"),
            *_rules("bash", [(pattern, "ask") for pattern in BASH_DESTRUCTIVE]),
            Rule("bash", "> /dev/null", "allow"),
            Rule("bash", "git checkout -b *", "allow"),
            Rule("bash", "git -* checkout -b *", "allow"),
        ]
    return [
        Rule("bash", "*", "ask"),
        *_rules("bash", [(pattern, "allow") for pattern in BASH_READ_ONLY]),
        *_rules("bash", [(pattern, "ask") for pattern in BASH_WRITING_OPTIONS]),
    ]


def _defaults(data: str, tmp: str, skills: str, sandboxed: bool = False) -> list[Rule]:
    return [
        Rule("*", "*", "allow"),
        *_bash_defaults(sandboxed),
        # running one command outside the sandbox (bash's escalate) always asks by default
        Rule("escalate", "*", "ask"),
        # a sandboxed command's connection to a new host (tether's network proxy; the resource is the host, or
        # host:port off the web's ports) asks by default
        Rule("network", "*", "ask"),
        Rule("doom_loop", "*", "ask"),
        *_external_readonly(data, tmp, skills),
        # webfetch of loopback and private-network addresses (SSRF: a model reaching the machine's own services or
        # the cloud metadata address) is asked apart from webfetch itself, which the "*" rule allows.
        Rule("webfetch_private", "*", "ask"),
        Rule("question", "*", "deny"),
        Rule("plan_enter", "*", "deny"),
        Rule("plan_exit", "*", "deny"),
        Rule("read", "*", "allow"),
        *_ENV_READS,
    ]


def _builtin(data: str, tmp: str, skills: str, sandboxed: bool) -> list[Agent]:
    defaults = _defaults(data, tmp, skills, sandboxed)
    deny_all = [*defaults, Rule("*", "*", "deny")]
    return [
        Agent(
            name="build",
            mode="primary",
            description="The default agent: reads, edits and runs commands as its rules allow.",
            rules=(*defaults, Rule("question", "*", "allow"), Rule("plan_enter", "*", "allow")),
        ),
        Agent(
            name="plan",
            mode="primary",
            description="Plans without changing the project: edits are denied except to plan files.",
            rules=(
                *defaults,
                Rule("question", "*", "allow"),
                Rule("plan_exit", "*", "allow"),
                Rule("external_directory", f"{data}/plans/*", "allow"),
                Rule("edit", "*", "deny"),
                Rule("edit", ".tether/plans/*.md", "allow"),
                Rule("edit", f"{data}/plans/*.md", "allow"),
            ),
        ),
        Agent(
            name="general",
            mode="subagent",
            description="A general-purpose subagent for multi-step tasks and research.",
            rules=(*defaults, Rule("todowrite", "*", "deny"), Rule("task", "*", "deny")),
        ),
        Agent(
            name="explore",
            mode="subagent",
            description="A fast, read-only subagent for finding files and code.",
            rules=(
                *defaults,
                Rule("*", "*", "deny"),
                *(
                    Rule(tool, "*", "allow")
                    for tool in ("grep", "glob", "list", "webfetch", "websearch", "read")
                ),
                *_ENV_READS,
                Rule("task", "*", "deny"),
                *_external_readonly(data, tmp, skills),
            ),
        ),
        *(
            Agent(name=name, mode="primary", hidden=True, rules=tuple(deny_all))
            for name in ("compaction", "title", "summary")
        ),
    ]


def _layered(agent: Agent, config: AgentLayers, section: AgentConfig | None) -> Agent:
    own = section.permission if section is not None else ()
    layers = [*agent.rulesets, Ruleset(source="config", rules=config.permission)]
    if own:
        layers.append(Ruleset(source="agent-config", rules=own))
    # An untrusted project's rules only tighten: evaluated as the stricter of the decision with and without them.
    project = (*config.project_permission, *(section.project_permission if section is not None else ()))
    if project:
        layers.append(Ruleset(source="project", rules=project, tighten_only=True))
    if section is None:
        return Agent(
            name=agent.name,
            mode=agent.mode,
            steps=agent.steps,
            prompt=agent.prompt,
            hidden=agent.hidden,
            description=agent.description,
            model=agent.model,
            rulesets=tuple(layers),
            options=agent.options,
        )
    return Agent(
        name=agent.name,
        mode=section.mode or agent.mode,
        steps=section.steps if section.steps is not None else agent.steps,
        prompt=section.prompt if section.prompt is not None else agent.prompt,
        hidden=section.hidden if section.hidden is not None else agent.hidden,
        description=section.description if section.description is not None else agent.description,
        model=section.model if section.model is not None else agent.model,
        rulesets=tuple(layers),
        options={**agent.options, **_request_options(section)},
    )


_AGENT_OPTIONS = ("temperature", "top_p")
"""The ``agent.<name>`` keys that are request options (OpenCode's names)."""


def _request_options(section: AgentConfig) -> dict[str, Any]:
    return {key: section.data[key] for key in _AGENT_OPTIONS if section.data.get(key) is not None}


def builtin_agents(
    data_dir: Path,
    tmp_dir: Path,
    config: AgentLayers | None = None,
    *,
    skills_dir: Path | None = None,
    sandboxed: bool = False,
) -> dict[str, Agent]:
    """Return the built-in agents by name (``build`` is the default), with ``config`` layered on.

    Args:
        data_dir: tether's data directory: reading it asks ``external_directory`` (a session's own retained outputs
            are allowed by the rules resolver, see ``retained_output_rules``).
        tmp_dir: the temp directory whose contents are readable outside the project (``<tmp>/*``).
        skills_dir: the user's own Agent Skills folder, readable outside the project (default: ``skills`` in the
            tether config directory, its real path).
        config: adds the top-level ``permission`` rules after each agent's defaults, then ``agent.<name>`` settings
            and rules; an ``agent.<name>`` that is not built in defines a custom agent (mode ``all`` by default) on the
            base defaults; ``disable: true`` removes an agent.
        sandboxed: bubblewrap holds bash's commands (``tether.sandbox.Sandbox.auto_allow``, the runtime's default
            with bubblewrap): ``bash`` allows what stays inside it, except :data:`BASH_DESTRUCTIVE`; without it, only
            :data:`BASH_READ_ONLY` commands run without asking.
    """
    data = data_dir.as_posix().rstrip("/")
    tmp = tmp_dir.as_posix().rstrip("/")
    if skills_dir is None:
        skills_dir = Path(os.path.realpath(default_config_dir() / "skills"))
    skills = skills_dir.as_posix().rstrip("/")
    agents = {agent.name: agent for agent in _builtin(data, tmp, skills, sandboxed)}
    if config is None:
        return agents
    for name, section in config.agents.items():
        if name not in agents:
            agents[name] = Agent(name=name, mode="all", rules=tuple(_defaults(data, tmp, skills, sandboxed)))
        if section.disable:
            del agents[name]
    return {name: _layered(agent, config, config.agents.get(name)) for name, agent in agents.items()}
