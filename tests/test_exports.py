"""Pin the public surfaces: each package's ``__all__`` (what users import) and, for the rooms that have one, the
``internal`` module (what tether's own packages share with each other, so no room reaches into another's private
modules; AGENTS.md and ARCHITECTURE.md's law 15 state the convention)."""

import importlib

import pytest

SURFACES = {
    "tether": {"Runtime", "__version__", "run"},
    "tether.tools": {
        "AfterEvent", "BeforeEvent", "Completed", "Content", "Failed", "File", "Outcome", "Registration", "Text",
        "Tool", "ToolCall", "ToolContext", "ToolDefinition", "ToolFailure", "ToolRegistry", "ToolResponse", "tool",
    },
    "tether.tools.internal": {
        "DECLINED_ERROR", "DEFAULT_MODEL_RULES", "DEFAULT_TIMEOUT", "FINAL_STEP_ERROR", "UNSET", "AfterHook", "Asker",
        "BeforeHook", "CatalogRule", "Codec", "Deadlines", "DecodeError", "DefinitionEvent", "DefinitionHook", "DepsT",
        "Entry", "Expiry", "FailureKind", "Issue", "JsonSchemaCodec", "Lane", "Materialization", "ModelCatalog", "PermissionRecord", "PermissionRecorder",
        "PydanticCodec", "Reply", "Verdict", "effective_name", "is_hidden", "make_codec", "normalize_content",
        "normalize_name", "provider_tool_name", "simplify_schema",
    },
    "tether.session": {
        "CANCEL_GRACE", "AssistantInfo", "FilePart", "MessageError", "MessageInfo", "MessageUpdated", "Part",
        "PartDelta", "PartUpdated", "PendingQuestion", "Question", "QuestionAsked", "QuestionOption",
        "QuestionReplied", "QuestionService", "ReasoningPart", "RetryPolicy", "Session", "SessionInfo",
        "SessionStatus", "SessionUpdated", "Sessions", "StepFinishPart", "StepStartPart",
        "StopReason", "TextPart", "ToolPart", "ToolProgress", "ToolState", "TurnCall", "TurnResult",
        "UserInfo",
    },
    "tether.session.internal": {
        "ABORTED_ERROR", "DOOM_LOOP_THRESHOLD", "INCOMPLETE_CALL_ERROR", "MAX_STEPS_MARKERS", "MAX_STEPS_PROMPT",
        "MAX_DEPTH", "AgentLike", "Answers", "ChildRequest", "ChildResult", "Children", "Subagent", "Descendants",
        "DoomLoopDetector", "History", "OneCallModel", "PermissionAsserter", "SessionLocation", "StepProcessor",
        "Observe", "StepObserver", "TurnObserver", "TurnSoFar", "DEFAULT_MAX_STEPS", "SURROGATE_INPUT_ERROR", "Emitter",
        "has_lone_surrogate", "invalid_arguments", "model_catalog", "permission_asker", "resolve_agent",
        "session_title", "user_parts",
    },
    "tether.store": {"PgSavedApprovals", "PostgresStore", "SQLiteStore", "SessionStore", "StoredMessage"},
    "tether.store.internal": {
        "INTERRUPTED_ERROR", "TODO_PRIORITIES", "TODO_STATUSES", "Todo", "TodoPriority", "TodoStatus", "TodoStore",
        "TodoUpdated", "describe",
    },
    "tether.records": {
        "AssistantInfo", "DurableEvent", "FilePart", "MessageError", "MessageInfo", "MessageUpdated", "Part",
        "PartDelta", "PartUpdated", "ReasoningPart", "SessionInfo", "SessionStatus", "SessionUpdated",
        "StepFinishPart", "StepStartPart", "TextPart", "ToolPart", "ToolProgress", "ToolState", "UserInfo",
    },
    "tether.records.internal": {
        "MESSAGES", "PARTS", "MessageErrorKind", "ToolErrorKind", "check_session_rules", "message_from_json",
        "message_to_json", "now_ms", "part_from_json", "part_to_json", "part_to_plain", "rules_from_json",
        "rules_to_json", "storable_event", "storable_part", "usage_from_json", "usage_to_json",
    },
    "tether.plugins": {"DefinitionEvent", "Plugin", "PluginAPI", "PluginHookError"},
    "tether.plugins.internal": {
        "GROUP", "TOOLS_DIR", "Activation", "LoadedPlugin", "Plugins", "Problem", "activate",
        "load_entry_points", "project_tool_files",
    },
    "tether.client": {"ApiError", "Client", "Event", "EventStream"},
    "tether.server": {
        "MAX_BODY_BYTES", "TOKEN_ENV", "TOKEN_FILE", "allowed_hosts", "bind", "build_app", "is_loopback", "serve",
        "server_token",
    },
    "tether.rules": {"EFFECTS", "Effect", "Rule", "is_effect", "last_match"},
    "tether.telemetry": {
        "CONTENT_ENV", "DEFAULT_TIMEOUT_MS", "LOG_FORMATS", "JsonFormatter", "LogFormat", "Telemetry",
        "TelemetrySettings", "configure", "configure_logging", "content_enabled", "export_from_config",
        "settings_from_config", "use_tracer_provider",
    },
    "tether.telemetry.internal": {"TurnTrace", "turn_trace"},
    "tether.llm": {
        "AssistantContent", "AssistantMessage", "Event", "FinishReason", "Message", "Model", "ModelRequest",
        "ProviderErrorEvent", "ProviderMetadata", "ReasoningContent", "ReasoningDelta", "ReasoningEnd",
        "ReasoningStart", "RequestOptions", "RetryPolicy", "StepFinish", "StepStart", "TextContent", "TextDelta",
        "TextEnd", "TextStart", "ToolCallContent", "ToolCallEvent", "ToolChoice", "ToolErrorEvent", "ToolInputDelta",
        "ToolInputEnd", "ToolInputStart", "ToolMessage", "ToolResultContent", "ToolResultEvent", "Usage",
        "UserMessage",
    },
    "tether.content": {"Content", "File", "Text", "content_from_json", "content_to_json", "text_of"},
    "tether.bus": {"Bus", "Event", "Subscription"},
    "tether.ids": {"Prefix", "ascending", "descending", "timestamp_ms"},
    "tether.mcp": set(),
    "tether.mcp.internal": {"McpRoots", "McpServers", "ServerSpec", "ServerStatus", "specs_from_config"},
    "tether.mcp_server": {"MAX_BODY_BYTES", "TOKEN_FILE", "ToolServer", "serve_http", "serve_stdio", "server_token"},
    "tether.config.internal": {
        "config_reference", "describe", "foreign", "format_path", "leaves", "servers", "store_choice",
    },
    "tether.llm.internal": {"DEFAULT_PRICES", "ModelCache", "Price", "dollars", "find_price", "usage_cost"},
    "tether.server.internal": {"check_origins"},
    "tether.llm.providers.internal": {"configured_providers"},
    "tether.temporal.internal": {"PATIENCE_SECONDS"},
    "tether.builtins.internal": {
        "AmbiguousMatch", "IndentationUnclear", "NoMatch", "PatchError", "SpanTooLarge", "apply_chunks",
        "deferred_task", "discover_skills", "parse_patch", "replace", "unified_diff",
    },
    "tether.output": {
        "DEFAULT_MAX_BYTES", "DEFAULT_MAX_LINES", "MAX_STRUCTURED_BYTES", "RETENTION_SECONDS", "Bounded",
        "OutputStore", "bounded_preview", "marker_for", "utf8_len",
    },
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(SURFACES))
def test_public_surface_is_pinned(module: str) -> None:
    mod = importlib.import_module(module)
    assert set(mod.__all__) == SURFACES[module]
    for name in mod.__all__:
        assert hasattr(mod, name)


@pytest.mark.parametrize("module", sorted(SURFACES))
def test_public_surface_is_sorted(module: str) -> None:
    names = list(importlib.import_module(module).__all__)
    assert names == sorted(names, key=lambda n: (not n.isupper(), n)) or names == sorted(names)


@pytest.mark.parametrize(
    "package",
    [
        "tether.tools",
        "tether.session",
        "tether.mcp",
        "tether.store",
        "tether.records",
        "tether.config",
        "tether.llm",
        "tether.server",
        "tether.temporal",
        "tether.builtins",
    ],
)
def test_the_user_surface_and_the_internal_names_do_not_overlap(package: str) -> None:
    user = importlib.import_module(package)
    internal = importlib.import_module(f"{package}.internal")
    assert not set(user.__all__) & set(internal.__all__)
    for name in internal.__all__:
        assert not hasattr(user, name) or name in {"internal"}, (
            f"{package}.{name} is internal but importable from {package}"
        )
