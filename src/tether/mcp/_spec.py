"""What one configured MCP server is: the ``mcp`` (and ``mcpServers``) entries of the config turned into specs.

The config models (``tether.config._models.McpServer``) have already checked each entry; this module only resolves
them: OpenCode's shape (``command`` list, ``environment``) and Claude Desktop's (``command`` string and ``args``,
``env``) become one :class:`ServerSpec`, ``{env:NAME}`` in headers, environment values and URLs is replaced by the
variable's value, and the defaults apply. An untrusted project's servers never reach here: the config loader drops
its ``mcp`` keys (``config/_restrict.py``). It imports nothing of the ``mcp`` SDK.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import field
from typing import Any, Literal, cast

from .._record import record

__all__ = ["CALL_TIMEOUT", "CONNECT_TIMEOUT", "ServerSpec", "specs_from_config", "substitute_env"]

CONNECT_TIMEOUT = 30.0
"""Seconds to start, initialize and list a server's tools. OpenCode waits 5 s; a server started through ``npx`` or
``uvx`` on a cold cache routinely takes longer on a small machine, and a failed server is only skipped, so tether
waits longer rather than drop a working server."""
CALL_TIMEOUT = 300.0
"""Seconds a tool call may go without its result or a progress notification (tether's tool deadline)."""

Transport = Literal["stdio", "http", "sse"]
_ENV = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


@record
class ServerSpec:
    """One server to connect: its name, how to reach it, and its deadlines (seconds)."""

    name: str
    transport: Transport
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    enabled: bool = True
    connect_timeout: float = CONNECT_TIMEOUT
    call_timeout: float = CALL_TIMEOUT
    run_in_project: bool = False
    """A stdio server whose working directory is the project root even in an untrusted project (the user's choice,
    ``run_in_project``; an untrusted project's own servers never start)."""
    sandbox: bool = False
    """A stdio server started inside the sandbox (``"sandbox": true``; the runtime wraps ``command``, see
    ``tether.sandbox.Sandbox.wrap_server``)."""
    fallback_sse: bool = False
    """A remote server given as ``remote``/``http`` (or by ``url`` alone): an old server that does not speak
    streamable HTTP is tried once more over SSE."""


def substitute_env(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``{env:NAME}`` replaced by the variable's value (an unset variable becomes ``""``, as in OpenCode)."""
    source = os.environ if environ is None else environ
    return _ENV.sub(lambda m: source.get(m.group(1), ""), text)


def specs_from_config(
    data: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> tuple[ServerSpec, ...]:
    """The servers of the merged config ``data`` (``Config.data``), ``mcp`` winning over ``mcpServers``.

    The entries were validated by the config models, so only their shape is read here.
    """
    entries: dict[str, Mapping[str, Any]] = {}
    for key in ("mcpServers", "mcp"):
        section = data.get(key)
        if isinstance(section, Mapping):
            for name, entry in cast(Mapping[str, Any], section).items():
                if isinstance(entry, Mapping):
                    entries[str(name)] = cast(Mapping[str, Any], entry)
    return tuple(_spec(name, entry, environ) for name, entry in entries.items())


def _seconds(value: object, default: float) -> float:
    return value / 1000 if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def _strings(value: object, environ: Mapping[str, str] | None) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): substitute_env(str(v), environ) for k, v in cast(Mapping[str, Any], value).items()}


def _spec(name: str, entry: Mapping[str, Any], environ: Mapping[str, str] | None) -> ServerSpec:
    kind = entry.get("type")
    command = entry.get("command")
    url = entry.get("url")
    common: dict[str, Any] = {
        "name": name,
        "enabled": entry.get("enabled", True) is not False,
        "connect_timeout": _seconds(entry.get("timeout"), CONNECT_TIMEOUT),
        "call_timeout": _seconds(entry.get("call_timeout"), CALL_TIMEOUT),
    }
    if kind in ("local", "stdio") or (kind is None and url is None):
        argv: list[str] = (
            [command, *[str(a) for a in cast(list[Any], entry.get("args") or [])]]
            if isinstance(command, str)
            else [str(c) for c in cast(list[Any], command or [])]
        )
        env = {**_strings(entry.get("env"), environ), **_strings(entry.get("environment"), environ)}
        run_in_project = entry.get("run_in_project") is True
        return ServerSpec(
            transport="stdio",
            command=tuple(argv),
            env=env,
            run_in_project=run_in_project,
            sandbox=entry.get("sandbox") is True,
            **common,
        )
    return ServerSpec(
        transport="sse" if kind == "sse" else "http",
        url=substitute_env(str(url or ""), environ),
        headers=_strings(entry.get("headers"), environ),
        fallback_sse=kind != "sse",
        **common,
    )
