"""The whole ``tether.json``, described once as pydantic models: the checking, the defaults, the schema and the docs.

Every key tether reads is a field here, with its type, its default and a description. From these models come:

- the check of each config file (``_validate``): an unknown key is an error that names the file, line, key path and
  the closest known key (``"modle"``: did you mean ``model``?), a value of the wrong type an error in the same shape;
- the JSON Schema editors use (``tether config schema``, committed as ``docs/tether.schema.json``);
- the reference table of ``docs/config.md`` (``_reference``).

The models check; they do not carry the config around. :attr:`~tether.config.Config.data` stays the plain merged
JSON object the other packages read (``provider`` by ``tether.llm.providers``, ``tool_output`` by the runtime, ...),
so a package that starts reading a new key adds a field here, or the key is refused as unknown.

Conventions: a ``None`` default means "not set" (a lower layer's value, or the reader's own default, applies; the
description says which). ``null`` is never a value in a file (``_Strict`` refuses it with the key's path): remove the
key instead. Numbers follow JSON (``1`` is a valid ``float``; ``true`` is not a number).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NoReturn

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from ..output import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES
from ..rules import Effect
from ._json import KeyPath
from ._permission import parse_tools, rules_from_value

__all__ = [
    "MODEL_PATTERN",
    "NON_BLANK",
    "AgentSection",
    "Catalog",
    "McpServer",
    "ModelCost",
    "ModelEntry",
    "ModelLimit",
    "ProviderAdapter",
    "ProviderOptions",
    "ProviderRetry",
    "ProviderSection",
    "ProviderTimeouts",
    "SandboxSection",
    "TelemetrySection",
    "TerminalSection",
    "TetherConfig",
    "ToolOutput",
    "custom_error",
]

MODEL_PATTERN = r"^[^/\s]+/\S"
"""``provider/model``: a provider id, a slash, a model id (which may hold more slashes)."""
NON_BLANK = r"\S"
"""A string with something in it besides white space."""


def custom_error(message: str, path: KeyPath = ()) -> PydanticCustomError:
    """A validation error carrying tether's own message, at ``path`` below the value being validated."""
    return PydanticCustomError("tether", "{message}", {"message": message, "path": path})


def _store_url(value: object) -> object:
    """A ``store`` value: a ``postgresql://`` URL (never echoed in the error: it may hold a password)."""
    if isinstance(value, str) and not value.startswith(("postgresql://", "postgres://")):
        raise custom_error("expected a postgresql:// URL (omit store for the default SQLite file)")
    return value


def _fail(message: str, path: KeyPath) -> NoReturn:
    raise custom_error(message, path)


def _check_permission(value: object) -> object:
    # The one parser of permission values (``_permission``) checks them, so its messages (which effect, which
    # pattern) are the messages; the union below then only describes the shape for the schema.
    rules_from_value(value, (), _fail)
    return value


def _check_tools(value: object) -> object:
    parse_tools(value, (), _fail)
    return value


def _check_env(value: object) -> object:
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):  # pyright: ignore[reportUnknownVariableType]
        return value
    raise custom_error("expected a variable name or a list of them")


Permission = Annotated[Effect | dict[str, Effect | dict[str, Effect]], BeforeValidator(_check_permission)]
Tools = Annotated[dict[str, bool], BeforeValidator(_check_tools)]
EnvNames = Annotated[str | list[str], BeforeValidator(_check_env)]
ModelName = Annotated[str, Field(pattern=MODEL_PATTERN)]
Text = Annotated[str, Field(pattern=NON_BLANK)]


class _Strict(BaseModel):
    """Unknown keys are errors, types are JSON's (no coercion), and `null` is refused with the key's path."""

    # defer_build: the validators are built when a file is first checked (a run with no config file never checks
    # one: ~12 ms of CPU less at start-up), and the JSON Schema when it is asked for.
    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, validate_by_name=False, defer_build=True
    )

    @model_validator(mode="before")
    @classmethod
    def _no_null(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for key, value in data.items():  # pyright: ignore[reportUnknownVariableType]
                if value is None:
                    raise custom_error("null is not a value here; remove the key to use the default", (key,))  # pyright: ignore[reportUnknownArgumentType]
        return data


class ToolOutput(_Strict):
    """How much of a tool's output the model reads; the full text is kept in a file the model can page through."""

    max_lines: int = Field(
        default=DEFAULT_MAX_LINES, ge=1, description="The most lines of one tool output the model reads."
    )
    max_bytes: int = Field(
        default=DEFAULT_MAX_BYTES, ge=1, description="The most bytes of one tool output the model reads."
    )


class Catalog(_Strict):
    """Which tools each model is shown (visibility only: a shown tool still asks permission at the point of action)."""

    models: dict[str, dict[str, bool]] = Field(
        default_factory=dict[str, dict[str, bool]],
        description='Per-model rules: {"provider/model pattern": {"tool pattern": true | false}}; wildcards * and ?. '
        "The last rule whose model and tool patterns both match decides; they come after the built-in ones "
        '(GPT models, as OpenCode: "*gpt-*" except "*gpt-4*" and "*oss*", get apply_patch and not edit/write; '
        "every other model the reverse), so true shows what a built-in rule hides.",
    )


class CodeModeSection(_Strict):
    """Code Mode for one agent, with the tools kept beside execute and the limits of one execute call."""

    pinned: list[str] = Field(
        default_factory=list[str],
        description="Tools shown beside execute (the model may call them directly).",
    )
    timeout: float = Field(default=300, gt=0, le=3600, description="Wall seconds of one execute call.")
    max_calls: int = Field(
        default=100, ge=1, le=10_000, description="The most tool calls of one execute call."
    )
    max_memory_mb: int = Field(default=256, ge=8, le=16_384, description="The sandbox's heap, in MiB.")
    cpu_seconds: float = Field(
        default=60, gt=0, le=3600, description="The interpreter's running time (waiting on tools excluded)."
    )


class AgentSection(_Strict):
    """One agent: a built-in one (`build`, `plan`, `general`, `explore`, ...) adjusted, or a new one."""

    permission: Permission | None = Field(
        default=None,
        description='Rules for this agent only, in the shape of the top-level "permission"; they come after the '
        "top-level rules (the last matching rule wins).",
    )
    tools: Tools | None = Field(
        default=None, description="The legacy on/off map for this agent: true allows a tool, false denies it."
    )
    mode: Literal["primary", "subagent", "all"] | None = Field(
        default=None,
        description="primary: run with --agent or default_agent; subagent: called by another agent's task tool; "
        "all: both (a new agent's default).",
    )
    steps: int | None = Field(
        default=None, ge=1, description="The most model calls (steps) in one turn of this agent."
    )
    maxSteps: int | None = Field(
        default=None, ge=1, description="OpenCode's name for steps (steps wins when both are set)."
    )
    prompt: str | None = Field(
        default=None, description="System text for this agent, sent before the instruction files."
    )
    hidden: bool | None = Field(
        default=None, description="Hide a subagent from the task tool's list of agents."
    )
    disable: bool | None = Field(default=None, description="Remove the agent.")
    description: str | None = Field(
        default=None, description="What the agent is for, shown to the model choosing a subagent."
    )
    model: ModelName | None = Field(
        default=None,
        description="The model this agent runs with, as provider/model (default: the top-level model).",
    )
    color: str | None = Field(
        default=None, description="OpenCode's display color; accepted, not shown by tether."
    )
    temperature: float | None = Field(
        default=None,
        ge=0,
        le=2,
        description="The sampling temperature every request of this agent sends (a caller's options win).",
    )
    top_p: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="The nucleus-sampling top_p every request of this agent sends (a caller's options win).",
    )
    codemode: bool | CodeModeSection | None = Field(
        default=None,
        description="Code Mode (docs/codemode.md): the agent sees one execute tool that runs Python calling its "
        "tools in a sandbox; true, or an object with pinned tools and limits. Off by default.",
    )


class ModelLimit(_Strict):
    """A model's token limits."""

    context: int | None = Field(default=None, ge=1, description="The context window, in tokens.")
    output: int | None = Field(
        default=None,
        ge=1,
        description="The most tokens of one answer; sent as Anthropic's max_tokens (default 8192).",
    )


class ModelCost(_Strict):
    """A model's price in US dollars per million tokens, as models.dev gives it (read by the cost display)."""

    input: float | None = Field(default=None, ge=0, description="USD per million input tokens.")
    output: float | None = Field(
        default=None, ge=0, description="USD per million output tokens (reasoning included)."
    )
    cache_read: float | None = Field(
        default=None, ge=0, description="USD per million input tokens read from the cache."
    )
    cache_write: float | None = Field(
        default=None, ge=0, description="USD per million input tokens written to the cache."
    )


class ModelEntry(_Strict):
    """What tether knows about one model of a provider."""

    limit: ModelLimit | None = Field(default=None, description="Token limits.")
    cost: ModelCost | None = Field(default=None, description="Prices, in USD per million tokens.")


class ProviderOptions(_Strict):
    """OpenCode's `options` block; tether's own keys (`base_url`, `api_key`, `headers`) win over it."""

    baseURL: str | None = Field(default=None, description="OpenCode's spelling of base_url.")
    apiKey: str | None = Field(default=None, description="OpenCode's spelling of api_key.")
    headers: dict[str, str] | None = Field(default=None, description="OpenCode's spelling of headers.")


class ProviderRetry(_Strict):
    """Retries of a step that failed with a retryable error (429/529, 5xx, a dropped connection, a deadline)."""

    max_attempts: int = Field(default=4, ge=1, description="Tries per step in all, the first included.")
    max_retry_after: float = Field(
        default=60.0,
        ge=0,
        description="The longest wait before a retry, in seconds; a larger Retry-After is cut to it.",
    )


class ProviderTimeouts(_Strict):
    """Deadlines of one request, in seconds."""

    connect: float = Field(default=10.0, gt=0, description="Seconds to open the connection.")
    first_event: float = Field(
        default=300.0,
        gt=0,
        description="Seconds from sending a request to its first stream event (reasoning models think).",
    )
    idle: float = Field(
        default=120.0,
        gt=0,
        description="Seconds allowed between two stream events; keep-alive comments do not reset it.",
    )


class ProviderAdapter(_Strict):
    """Knobs of the adapter that speaks the provider's API."""

    strict_tools: bool | None = Field(
        default=None,
        description="Send OpenAI's strict flag when a tool schema fits strict mode (default: on for openai only).",
    )
    include_usage: bool = Field(
        default=True, description="Ask for token usage in the last chunk (stream_options.include_usage)."
    )
    reasoning_field: str | None = Field(
        default=None, description="Send reasoning back in this message field (DeepSeek: reasoning_content)."
    )
    max_tokens_field: str | None = Field(
        default=None,
        description="The request field of the output limit (default: max_completion_tokens for openai, "
        "else max_tokens).",
    )


class ProviderSection(_Strict):
    """One provider: a built-in one (`openai`, `anthropic`, `ollama`, ...) adjusted, or a new one."""

    api: Literal["openai-chat", "openai-responses", "anthropic"] | None = Field(
        default=None, description="The API it speaks (default: the built-in provider's, else openai-chat)."
    )
    base_url: str | None = Field(
        default=None,
        description="The API root, including /v1 for OpenAI-compatible servers; required for a provider that "
        "is not built in.",
    )
    api_key_env: EnvNames | None = Field(
        default=None,
        description="A variable name, or a list of them, holding the API key; the first one set is used.",
    )
    env: EnvNames | None = Field(default=None, description="OpenCode's name for api_key_env.")
    api_key: str | None = Field(default=None, description="The API key itself (prefer api_key_env).")
    requires_key: bool | None = Field(default=None, description="false for a server that takes no key.")
    headers: dict[str, str] | None = Field(
        default=None, description="Extra HTTP headers sent with every request."
    )
    models: dict[str, ModelEntry] | None = Field(
        default=None, description="Per-model limits and prices, by model id."
    )
    options: ProviderOptions | None = Field(default=None, description="OpenCode's options block.")
    retry: ProviderRetry | None = Field(default=None, description="Retries of failed steps.")
    timeouts: ProviderTimeouts | None = Field(default=None, description="Request deadlines.")
    adapter: ProviderAdapter | None = Field(default=None, description="Adapter knobs.")

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for old, new in (("timeout", "timeouts"), ("max_retries", "retry.max_attempts")):
                if old in data:
                    raise custom_error(f"is no longer read; use {new!r} (see docs/providers.md)", (old,))
        return data


class McpServe(_Strict):
    """`tether mcp serve`: how a client's permission asks are answered, and what guards the HTTP transport."""

    ask: Literal["deny", "allow"] = Field(
        default="deny",
        description="How a permission ask is answered when the MCP client cannot ask its user (it declared no "
        "elicitation): deny rejects it with feedback the client's model reads; allow approves it once (never a "
        "protected path). A client that declares elicitation is always asked.",
    )
    token_env: Text | None = Field(
        default=None,
        description="The environment variable holding the bearer token HTTP clients must send (default: a random "
        "token per server, printed once on stderr and stored with mode 0600 in the data directory).",
    )
    allowed_hosts: list[Text] = Field(
        default_factory=list[str],
        description="More Host header values (host:port, * for any port) HTTP requests may carry, beside the "
        "loopback names and --host itself; any other Host is refused (DNS rebinding).",
    )


class TelemetrySection(_Strict):
    """OpenTelemetry export of tether's traces (docs/telemetry.md); read from your own config only (a project's is
    ignored unless trusted)."""

    otlp_endpoint: Annotated[str, Field(pattern=r"^https?://")] | None = Field(
        default=None,
        description="The OTLP/HTTP traces URL (http://localhost:4318/v1/traces; a URL without a path gets "
        "/v1/traces): when set, tether run, serve and "
        "mcp serve export a span per turn, step and tool call there (needs tether[otel]). Default: export only with "
        "--otel, to the OTEL_EXPORTER_OTLP_* endpoint (never a localhost:4318 fallback).",
    )
    headers: dict[str, str] | None = Field(
        default=None, description="HTTP headers of each export request (a hosted collector's API key)."
    )
    service_name: Text | None = Field(
        default=None, description='The service.name of the exported spans (default "tether").'
    )
    timeout: int | None = Field(
        default=None,
        ge=1,
        description="Milliseconds one export may take, and the longest tether waits at exit for the last spans "
        "(default 5000). An unreachable collector never fails a turn.",
    )


class McpServer(_Strict):
    """One MCP server: OpenCode's shape (`type` local with a `command` list, or remote with a `url`) or Claude
    Desktop's (`command` and `args`, or `url`). See docs/mcp.md."""

    type: Literal["local", "remote", "stdio", "http", "sse"] | None = Field(
        default=None,
        description="local (or stdio): a command tether starts; remote (or http): a streamable HTTP URL, with an "
        "SSE fallback for old servers; sse: an SSE URL. Default: from command or url.",
    )
    command: list[Text] | Text | None = Field(
        default=None,
        description="The server's program and its arguments (OpenCode), or the program alone with args (Claude).",
    )
    args: list[str] | None = Field(
        default=None, description="Arguments after command (Claude Desktop's shape)."
    )
    environment: dict[str, str] | None = Field(
        default=None,
        description="Variables set for the server process; {env:NAME} is replaced by NAME's value.",
    )
    env: dict[str, str] | None = Field(default=None, description="Claude Desktop's name for environment.")
    url: Annotated[str, Field(pattern=r"^https?://")] | None = Field(
        default=None, description="The server's URL (http or https)."
    )
    headers: dict[str, str] | None = Field(
        default=None,
        description="HTTP headers sent to a remote server; {env:NAME} is replaced by NAME's value.",
    )
    enabled: bool = Field(default=True, description="false keeps the server configured but not started.")
    timeout: int | None = Field(
        default=None,
        ge=1,
        description="Milliseconds to connect and list the server's tools (default 30000); a server that misses it "
        "is reported as failed and skipped.",
    )
    call_timeout: int | None = Field(
        default=None,
        ge=1,
        description="Milliseconds a tool call may go without a result or a progress notification (default "
        "300000); each progress notification restarts it.",
    )
    run_in_project: bool = Field(
        default=False,
        description="A stdio server starts in the project root even in an untrusted project (by default it starts "
        "there only in a trusted one, else in an empty private directory). Only for a server that never runs what "
        "it finds in its working directory (docs/mcp.md).",
    )

    sandbox: bool = Field(
        default=False,
        description="true starts this stdio server inside the bash tool's sandbox (bubblewrap: the project and a "
        "private temp directory writable; no network, or the machine's when sandbox.network is host; "
        "docs/sandbox.md). Without bubblewrap the server starts unconfined, or not at all when sandbox.required is set.",
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        local = self.type in ("local", "stdio")
        remote = self.type in ("remote", "http", "sse")
        if self.command is not None and self.url is not None:
            raise custom_error("set command (a local server) or url (a remote one), not both")
        if local or (self.type is None and self.url is None):
            if not self.command:
                raise custom_error("a local server needs a command", ("command",))
        elif remote and self.url is None:
            raise custom_error("a remote server needs a url", ("url",))
        if self.args is not None and not isinstance(self.command, str):
            raise custom_error(
                "args go with a command string (Claude's shape); put them in the command list", ("args",)
            )
        return self


class SandboxSection(_Strict):
    """Where the bash tool's commands run: a sandbox the kernel enforces (docs/sandbox.md)."""

    mode: Literal["auto", "bwrap", "landlock", "off"] = Field(
        default="auto",
        description="auto: bubblewrap, else Landlock (writes only), else none; bwrap or landlock: that one or none; "
        "off: commands run unconfined. tether doctor shows what this machine offers.",
    )
    required: bool = Field(
        default=False,
        description="true refuses to run commands when no sandbox can hold them (bash's escalate still asks the "
        "user to run one outside).",
    )
    network: Literal["proxy", "none", "host"] = Field(
        default="proxy",
        description="proxy: commands reach the network only through tether's proxy (HTTP(S) and SOCKS5), which asks "
        'the "network" permission for each new host (needs bubblewrap; elsewhere it is none); none: no network '
        "(their own network namespace; with Landlock, no TCP); host: the machine's network.",
    )
    auto_allow: bool | None = Field(
        default=None,
        description="Whether the built-in agents run bash commands that bubblewrap holds without asking, except "
        "destructive ones (rm, mv, > truncation, git reset --hard/clean/checkout/restore/rm, find -delete, git push) "
        "and the parse-level asks (protected paths, outside directories, uncertain text). Default: yes with "
        "bubblewrap unless network is host; never with Landlock only. false keeps the asks of a run without a "
        "sandbox. Your own rules still apply after.",
    )
    writable: list[Text] = Field(
        default_factory=list[str],
        description="Further directories commands may write (absolute or ~/...), e.g. a build cache. An "
        'external_directory allow rule naming a directory ("/cache/*": "allow") makes it writable too.',
    )
    unix_sockets: bool = Field(
        default=False,
        description="true lets sandboxed commands make unix sockets. By default a seccomp filter refuses them "
        "(Operation not permitted), since a read-only mount does not stop a connect to the host's docker.sock, "
        "containerd or the D-Bus system bus; turn it on for a command that must reach a local daemon or serve one "
        "(a database on a socket in /tmp).",
    )


class TerminalSection(_Strict):
    """What the terminal (tether run, the interactive session) shows of each call (docs/cli.md#what-a-turn-shows)."""

    bash_tail: int = Field(
        default=5,
        ge=0,
        le=1000,
        description="Lines of a bash call's output shown under its line, the last ones (0: none; tether run "
        "--quiet shows none).",
    )
    diff_lines: int = Field(
        default=40,
        ge=0,
        le=10_000,
        description="Lines of the diff shown under an edit, write or apply_patch call (the rest counted; 0: none).",
    )
    resume_turns: int = Field(
        default=3,
        ge=0,
        le=1000,
        description="Turns of the conversation printed when a session is resumed (tether -c, --session, /resume; "
        "0: none).",
    )


class TetherConfig(_Strict):
    """A `tether.json` (or `tether.jsonc`) file: the user's, or a project's."""

    schema_: str | None = Field(
        default=None,
        alias="$schema",
        description="The JSON Schema of this file, for editors (docs/tether.schema.json); tether does not read it.",
    )
    model: ModelName | None = Field(
        default=None,
        description="The model to run, as provider/model (openai/gpt-5, ollama/qwen3:8b); --model overrides it.",
    )
    default_agent: Text = Field(
        default="build", description="The agent tether run uses when --agent is not given."
    )
    shell: Text | None = Field(
        default=None,
        description="The shell the bash tool runs commands with (default: /bin/bash, else /bin/sh).",
    )
    sandbox: SandboxSection = Field(
        default_factory=SandboxSection,
        description="The sandbox that holds every bash command (docs/sandbox.md); a project's file cannot change it.",
    )
    permission: Permission | None = Field(
        default=None,
        description='Permission rules: "allow", "ask" or "deny" for everything, or an object of permission: '
        "effect, or permission: {pattern: effect}. Key order is rule order; the last matching rule wins.",
    )
    tools: Tools | None = Field(
        default=None,
        description="The legacy on/off map: true allows a tool, false denies it (before permission's rules).",
    )
    agent: dict[str, AgentSection] = Field(
        default_factory=dict[str, AgentSection],
        description="Agents by name: built-in ones adjusted, new ones defined.",
    )
    instructions: list[str] = Field(
        default_factory=list[str],
        description="Extra instruction files, as paths or globs relative to the project root; only your own "
        "config may name files outside the project.",
    )
    tool_output: ToolOutput = Field(
        default_factory=ToolOutput, description="How much of one tool output the model reads."
    )
    store: Annotated[str, BeforeValidator(_store_url)] | None = Field(
        default=None,
        description="Where sessions are stored: a postgresql:// URL (workers on many hosts share it; needs "
        "tether[postgres]; docs/postgres.md). Default: the SQLite file tether.db in the data directory. "
        "$TETHER_STORE_URL overrides it.",
    )
    output_dir: Text | None = Field(
        default=None,
        description="The directory retained tool outputs are kept in (default: tool-output in the data "
        "directory). With a shared store, a directory every worker reads (docs/postgres.md).",
    )
    provider: dict[str, ProviderSection] = Field(
        default_factory=dict[str, ProviderSection],
        description="Providers by id: built-in ones adjusted, new ones defined.",
    )
    catalog: Catalog = Field(
        default_factory=Catalog,
        description="The tools each model is shown (docs/plugins.md); a project's is read only when trusted.",
    )
    mcp: dict[str, McpServer] = Field(
        default_factory=dict[str, McpServer],
        description="MCP servers by name: their tools join the catalog as <name>_<tool> (docs/mcp.md).",
    )
    mcpServers: dict[str, McpServer] = Field(
        default_factory=dict[str, McpServer],
        description="Claude Desktop's name for mcp (a pasted claude_desktop_config.json works); mcp wins on a name "
        "in both.",
    )
    mcp_serve: McpServe = Field(
        default_factory=McpServe,
        description="tether mcp serve: answering permission asks of MCP clients, guarding the HTTP transport.",
    )
    terminal: TerminalSection = Field(
        default_factory=TerminalSection,
        description="What the terminal shows of each call and of a resumed session; a project's is read only when "
        "trusted.",
    )
    telemetry: TelemetrySection = Field(
        default_factory=TelemetrySection,
        description="OpenTelemetry export of traces: a span per turn, step and tool call (docs/telemetry.md).",
    )
