"""The ``bash`` tool: run a shell command in the project, behind the permission gate, in the sandbox, bounded and
cancellable.

Two lines of defence: the permission gate with honest parsing (:mod:`._shell_parse`), the first and clearer one, and
the sandbox (:mod:`tether.sandbox`: bubblewrap, else Landlock), where the kernel holds what the command may write
and reach whatever its text says. Order of one call:

1. resolve ``workdir`` (default: the Location's working directory) as a directory;
2. analyse the command (tree-sitter-bash) and resolve the path arguments of file commands and redirections;
3. ask ``external_directory`` once per directory outside the Location (the workdir first; one request each, through
   :func:`tether.location.require_external`, as the file tools do); when the analysis cannot know every path the
   command touches (``cd $X && rm y``, ``rm $F``, an unknown wrapper option, program text such as ``python3 -c``),
   ask ``external_directory`` once more with ``(uncertain) <raw text>`` as the resource, so a person decides (no
   directory's rule matches it);
4. ask ``edit`` for the paths the command writes (redirect targets, ``rm``/``tee``/``sed -i``/``dd of=``/...), as
   the file tools do: one request with save ``["*"]`` for the ordinary ones, then each protected one on its own
   (:func:`tether.location.authorize_protected`), so an agent that may not edit cannot write through the shell;
5. ask ``bash`` with every resource of the analysis in one request: each simple command's text and normalized forms,
   each redirection, and ``(uncertain) <text>`` when what runs cannot be known statically. The service allows a
   request only when every resource is allowed, so a ``deny`` or ``ask`` matching any form applies and an ``allow``
   needs every form; "always" saves the certain commands' prefix patterns, never a pattern for the uncertain text;
6. with ``escalate``, ask ``escalate`` (the command as resource, the model's ``justification`` in the metadata): the
   command then runs outside the sandbox; without it, refuse when the sandbox is required but unavailable;
7. build the sandbox policy (the protected paths this call was allowed to write stay writable), re-check that the
   workdir is still a directory (approval may take a while), then run (:mod:`._shell_run`).

The sandbox that held the call (mechanism, writable roots, network) and any escalation go in the call's metadata
(``sandbox``, ``escalated``), so the session record shows them. A command that failed on what the sandbox refuses
(``Read-only file system``, ``Permission denied``, ...) gets one line naming the sandbox and how to ask for more.

The model reads the output (stdout and stderr interleaved), then ``Command exited with code N.`` or ``Command timed
out after N ms.``. Bounding the content for the model is settle's job (law 6); this tool only reports the loss of its
own 1 MiB in-memory capture, naming the spill file that holds everything. Cancellation ends every process of the
call (:mod:`._shell_guard`) and propagates (law 3).
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._record import record
from ..errors import PathError, ToolFailure
from ..location import Location, ResolvedPath, authorize_protected, protected_anchor, require_external
from ..permissions import PermissionRequest
from ..tools import Tool, ToolContext, ToolResponse
from ._bash_text import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, default_sandbox, default_shell, describe
from ._common import resolve_or_fail
from ._deps import BuiltinDeps
from ._schemas import committed_codec
from ._shell_run import CAPTURE_LIMIT, ShellRun, run_shell

# The analysis (tree-sitter-bash and its tables, ~30 ms) is imported at the first plan, not at start-up.
if TYPE_CHECKING:
    from ..sandbox import NetworkGate, Sandbox, SandboxPolicy
    from ._shell_analysis import Analysis, PathArg

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "MAX_TIMEOUT_MS",
    "BashInput",
    "CommandPlan",
    "default_sandbox",
    "executor",
    "make",
    "plan_command",
]


class BashInput(BaseModel):
    """Input of the bash tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    command: str = Field(min_length=1, description="The command to run")
    workdir: str | None = Field(
        default=None,
        description="The directory to run in (relative to the working directory, or absolute); default: the working directory",
    )
    timeout: int | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_MS,
        description=f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS})",
    )
    description: str | None = Field(
        default=None, description="What the command does in a few words, e.g. 'Run the unit tests'"
    )
    escalate: bool = Field(
        default=False,
        description="Run this one command outside the sandbox (the user is asked); only after the sandbox refused it",
    )
    justification: str | None = Field(
        default=None,
        min_length=1,
        description="Why the command needs to run outside the sandbox, shown to the user (required with escalate)",
    )

    @model_validator(mode="after")
    def _justified(self) -> BashInput:
        if self.escalate and not (self.justification or "").strip():
            raise ValueError("escalate: true needs a justification: one sentence telling the user why")
        return self


def make(deps: BuiltinDeps) -> Tool[BashInput, Any]:
    """Build the bash tool bound to ``deps`` (the shell and the sandbox are chosen once, here)."""
    shell = default_shell(deps.shell)
    sandbox = (
        default_sandbox() if isinstance(deps.sandbox, str) else deps.sandbox
    )  # "auto" (== would build Sandbox.__eq__)
    return Tool(
        description=describe(shell, sandbox),
        input=committed_codec(BashInput),
        execute=executor(deps, shell, sandbox),
        timeout=None,
    )


def executor(
    deps: BuiltinDeps, shell: str, sandbox: Sandbox | None
) -> Callable[[BashInput, ToolContext], Awaitable[ToolResponse[Any]]]:
    """What a call of the bash tool runs, bound to ``deps``, running ``shell`` in ``sandbox`` (a Location loads this
    module at the tool's first call: ``builtins/_deferred.py``)."""
    location = deps.location
    permissions = deps.permissions
    output = deps.output

    async def execute(input: BashInput, ctx: ToolContext) -> ToolResponse[Any]:
        command = input.command
        # default: the Location's working directory (resolved again here: a directory swapped for a symlink
        # leading out of the project is an escape, not a place to run)
        workdir = await resolve_or_fail(
            location, "." if input.workdir is None else input.workdir, "directory"
        )
        cwd = workdir.path
        plan = await anyio.to_thread.run_sync(plan_command, location, command, cwd)
        if plan is None:
            raise ToolFailure(f"Working directory is not a directory: {location.display(cwd)}")
        analysis = plan.analysis
        await require_external(permissions, ctx, [workdir, *plan.outside], metadata={"command": command})
        if analysis.uncertain_paths_resource is not None:
            await permissions.assert_(
                PermissionRequest.from_context(
                    ctx,
                    action="external_directory",
                    resources=[analysis.uncertain_paths_resource],
                    save=analysis.uncertain_paths_save,
                    metadata={"command": command, "uncertain": list(analysis.uncertain)},
                )
            )
        if plan.ordinary_writes:
            await permissions.assert_(
                PermissionRequest.from_context(
                    ctx,
                    action="edit",
                    resources=plan.ordinary_writes,
                    save=("*",),
                    metadata={"command": command},
                )
            )
        if plan.protected_writes:
            await authorize_protected(permissions, ctx, plan.protected_writes, metadata={"command": command})
        if analysis.resources:  # empty only for blank or comment-only text, which runs nothing
            metadata: dict[str, Any] = {"command": command}
            if input.description:
                metadata["description"] = input.description
            if analysis.opaque is not None:
                metadata["unparsed"] = analysis.opaque
            if analysis.uncertain_resource is not None:
                metadata["uncertain"] = list(analysis.unknown) or ["the command is not valid shell"]
            await permissions.assert_(
                PermissionRequest.from_context(
                    ctx, action="bash", resources=analysis.resources, save=analysis.save, metadata=metadata
                )
            )

        if input.escalate:
            await permissions.assert_(
                PermissionRequest.from_context(
                    ctx,
                    action="escalate",
                    resources=analysis.resources or (command.strip(),),
                    save=analysis.save,
                    metadata={"command": command, "justification": input.justification or ""},
                )
            )
        policy: SandboxPolicy | None = None
        build: functools.partial[SandboxPolicy] | None = None
        gate: NetworkGate | None = None
        if sandbox is not None and not input.escalate:
            refused = sandbox.refused
            if refused is not None:
                raise ToolFailure(refused)
            if sandbox.active:
                allowed = [_anchor(item) or item.resource for item in plan.protected_writes]
                visible = [
                    item.external.directory for item in (workdir, *plan.outside) if item.external is not None
                ]
                # an outside path the command writes, approved by external_directory and edit for this call
                approved = [item.external.directory for item in plan.written if item.external is not None]
                build = functools.partial(
                    sandbox.policy,
                    str(location.root),
                    ctx.session_id,
                    extra_protected=location.protected,
                    allowed=allowed,
                    visible=visible,
                    writable=approved,
                )
                if sandbox.network == "proxy" and _may_use_network(analysis):
                    from ..sandbox import NetworkGate

                    gate = NetworkGate(permissions, ctx, {"command": command})

        # The workdir may have gone while approval was pending: starting the shell there then fails (checked below).
        timeout_ms = input.timeout or DEFAULT_TIMEOUT_MS
        if build is not None:
            try:
                policy = await anyio.to_thread.run_sync(functools.partial(build, proxy=gate is not None))
            except OSError as exc:
                raise ToolFailure(f"Unable to prepare the sandbox: {exc}") from exc
        async with _proxy(policy, gate):  # the call's own proxy, open while the command runs
            try:
                run = await run_shell(
                    command,
                    cwd=cwd,
                    time_limit=timeout_ms / 1000,
                    spill=lambda: output.open_managed(ctx.session_id),  # the session reads its own outputs
                    shell=shell,
                    progress=ctx.progress,
                    sandbox=sandbox,
                    policy=policy,
                )
            except (FileNotFoundError, NotADirectoryError) as exc:
                if exc.filename is not None and os.fspath(exc.filename) == os.fspath(cwd):
                    raise ToolFailure(
                        f"Working directory is not a directory: {location.display(cwd)}"
                    ) from exc
                raise ToolFailure(f"Unable to execute command: {exc.strerror or exc}") from exc
            except OSError as exc:
                raise ToolFailure(f"Unable to execute command: {exc.strerror or exc}") from exc
        if gate is not None and gate.rejection is not None:
            raise gate.rejection  # a person rejected a connection: as any rejected request, it ends the call
        metadata = _metadata(run, input.description)
        if policy is not None:
            metadata["sandbox"] = policy.describe()
        elif input.escalate:
            metadata["escalated"] = {"justification": input.justification or ""}
        return ToolResponse(
            content=_model_text(run, timeout_ms, policy, gate.refused if gate is not None else ()),
            metadata=metadata,
            title=input.description or _title(command),
        )

    return execute


@record
class CommandPlan:
    """What the bash tool asks before running a command (``tether permissions --explain bash`` shows the same).

    In order: ``external_directory`` for each of ``outside`` (one request per directory, after the workdir's), and
    for ``analysis.uncertain_paths_resource`` when ``analysis.uncertain``; ``edit`` for ``ordinary_writes`` (one
    request), then for each of ``protected_writes``; then ``bash`` with ``analysis.resources`` and ``analysis.save``.
    """

    analysis: Analysis
    paths: tuple[tuple[PathArg, ResolvedPath], ...]
    """Every path argument with its resolution through the Location (paths that cannot exist are left out)."""

    @property
    def outside(self) -> tuple[ResolvedPath, ...]:
        return tuple(item for _, item in self.paths if item.external is not None)

    @property
    def written(self) -> tuple[ResolvedPath, ...]:
        return tuple({item.resource: item for arg, item in self.paths if arg.write}.values())

    @property
    def ordinary_writes(self) -> tuple[str, ...]:
        return tuple(item.resource for item in self.written if _anchor(item) is None)

    @property
    def protected_writes(self) -> tuple[ResolvedPath, ...]:
        return tuple(item for item in self.written if _anchor(item) is not None)


def plan_command(location: Location, command: str, cwd: Path) -> CommandPlan | None:
    """Analyse ``command`` as run from ``cwd`` and resolve its path arguments through ``location``. Blocking.

    ``None`` when ``cwd`` is not a directory. The analysis itself is pure (:func:`._shell_parse.analyze`); only the
    resolution here looks at the file system (symlinks, existing directories).
    """
    if not cwd.is_dir():
        return None
    from ._shell_parse import analyze  # deferred: a run that never calls bash never loads the parser (~30 ms)

    home = os.environ.get("HOME") or str(Path.home())
    analysis = _with_glob_names(analyze(command, cwd=str(cwd), home=home), cwd)
    found: list[tuple[PathArg, ResolvedPath]] = []
    for arg in analysis.paths:
        resolved = _resolve_arg(location, arg)
        if resolved is not None and arg.glob:
            # A written glob may match any name, a protected one included: only a rule naming the pattern allows it.
            resolved = dataclasses.replace(resolved, protected=resolved.resource)
        if resolved is not None:
            found.append((arg, resolved))
    return CommandPlan(analysis=analysis, paths=tuple(found))


_MAX_GLOB_NAMES = 64


def _with_glob_names(analysis: Analysis, cwd: Path) -> Analysis:
    """Add a form per program a glob command word matches now (``/bin/r? x`` → ``rm x``), so a deny on it applies.

    The text stays uncertain (the match may change before it runs); this only lets a deny-list see the likely name.
    """
    from ._shell_analysis import SimpleCommand

    extra: list[SimpleCommand] = []
    for command in analysis.commands:
        if command.name_pattern is None:
            continue
        pattern, arguments = command.name_pattern
        where = pattern if pattern.startswith("/") else os.path.join(glob.escape(str(cwd)), pattern)
        for match in sorted(glob.glob(where))[:_MAX_GLOB_NAMES]:
            name = os.path.basename(match)
            extra.append(SimpleCommand(text=command.text, forms=(f"{name} {arguments}".strip(),)))
    if not extra:
        return analysis
    return dataclasses.replace(analysis, commands=(*analysis.commands, *extra))


def _anchor(item: ResolvedPath) -> str | None:
    return item.protected if item.protected is not None else protected_anchor(item.resource)


def _resolve_arg(location: Location, arg: PathArg) -> ResolvedPath | None:
    kind = "directory" if arg.role == "directory" or os.path.isdir(arg.path) else "file"
    try:
        return location.resolve(arg.path, kind)
    except PathError as exc:
        if exc.reason != "location_escape":
            return None  # a file as an ancestor, a NUL: the command fails on it by itself
    # Spelled inside the project but a symlink leads out: the shell follows it, so ask for where it lands.
    try:
        return location.resolve(os.path.realpath(arg.path), kind)
    except PathError:
        return None


def _may_use_network(analysis: Analysis) -> bool:
    from ..sandbox import may_use_network

    certain = analysis.opaque is None and not analysis.unknown
    return may_use_network(((c.name, (c.forms or (c.text,))[-1]) for c in analysis.commands), certain=certain)


@asynccontextmanager
async def _proxy(policy: SandboxPolicy | None, gate: NetworkGate | None) -> AsyncGenerator[None]:
    """tether's proxy for this call, on the socket its policy binds (network ``proxy``), else nothing.

    Raises:
        ToolFailure: the proxy's socket cannot be made.
    """
    if policy is None or policy.proxy is None or gate is None:
        yield
        return
    from ..sandbox import open_proxy

    try:
        async with open_proxy(policy.proxy.socket, gate):
            yield
    except OSError as exc:  # the body turns its own into ToolFailure: this is the proxy's socket
        raise ToolFailure(f"Unable to prepare the sandbox's network proxy: {exc}") from exc


def _title(command: str) -> str:
    lines = command.strip().splitlines()
    return lines[0][:200] if lines else command


_REFUSALS = (
    "Read-only file system",
    "Permission denied",
    "Operation not permitted",
    "Device or resource busy",
    "Invalid cross-device link",
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
)
"""What a program prints when the sandbox refused it (the OS errors of EROFS, EACCES, EPERM, EBUSY, EXDEV, ENETUNREACH
and failed name lookups)."""


def _sandbox_line(run: ShellRun, policy: SandboxPolicy | None) -> str | None:
    """One line naming the sandbox when a failed command's output shows an error the sandbox causes."""
    if policy is None or run.exit_code in (0, None) or not any(word in run.output for word in _REFUSALS):
        return None
    mechanism = "bubblewrap" if policy.mechanism == "bwrap" else "Landlock"
    writable = ", ".join([*policy.writable, "/tmp" if policy.mechanism == "bwrap" else (policy.tmp or "")])
    network = {"none": "no network", "proxy": "network only through tether's proxy"}.get(
        policy.network, f"network: {policy.network}"
    )
    return (
        f"[The sandbox ({mechanism}) may have refused this: writable: {writable.rstrip(', ')}; protected paths are "
        f"read-only; {network}. If the command needs more, call bash again with escalate: true and a justification "
        "(the user is asked).]"
    )


def _model_text(
    run: ShellRun, timeout_ms: int, policy: SandboxPolicy | None = None, refused_hosts: Sequence[str] = ()
) -> str:
    body = run.output or "(no output)"
    lines: list[str] = []
    if refused_hosts:
        lines.append(
            f"[tether's network proxy refused: {'; '.join(refused_hosts)}. A host is allowed by a rule such as "
            '"permission": {"network": {"pypi.org": "allow"}} in tether.json; do not retry it otherwise.]'
        )
    refused = _sandbox_line(run, policy)
    if refused is not None:
        lines.append(refused)
    if run.truncated:
        lines.append(
            f"[Output capture truncated at the in-memory limit of {CAPTURE_LIMIT} bytes: kept {run.captured_bytes} of "
            f"{run.total_bytes} bytes (head and tail). Full output saved to: {run.output_path}]"
        )
    if run.timed_out:
        lines.append(
            f"Command timed out after {timeout_ms} ms. If it is expected to take longer, retry with a larger "
            f"timeout (at most {MAX_TIMEOUT_MS} ms)."
        )
    else:
        lines.append(f"Command exited with code {run.exit_code}.")
    return body + ("" if body.endswith("\n") else "\n") + "\n" + "\n".join(lines)


def _metadata(run: ShellRun, description: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "exit": run.exit_code,
        "timedOut": run.timed_out,
        "durationMs": round(run.duration * 1000),
        "truncated": run.truncated,
        "outputPath": None if run.output_path is None else str(run.output_path),
        "bytes": run.total_bytes,
    }
    if description:
        metadata["description"] = description
    return metadata
