import tether.config as config

EXPECTED = {
    "AGENTS_FILE",
    "BUILTIN_ACTIONS",
    "CLAUDE_FILE",
    "CONFIG_FILE",
    "PERMISSION_ENV",
    "PROJECT_CONFIG",
    "PROJECT_FILES",
    "RESERVED_ACTIONS",
    "TOOL_ACTIONS",
    "TRUST_FILE",
    "AgentConfig",
    "AgentMode",
    "Config",
    "Ignored",
    "Instruction",
    "Instructions",
    "TetherConfig",
    "TrustStore",
    "config_schema",
    "find_project",
    "load_config",
    "load_instructions",
    "misspelled_permission",
    "parse_config",
    "parse_permission",
    "permission_action",
    "project_root",
    "user_config_path",
}


def test_public_surface_is_pinned() -> None:
    assert set(config.__all__) == EXPECTED
    for name in config.__all__:
        assert getattr(config, name) is not None, name
