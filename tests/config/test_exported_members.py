import tether.config as config

EXPECTED = {
    "AGENTS_FILE",
    "CLAUDE_FILE",
    "CONFIG_FILE",
    "PERMISSION_ENV",
    "PROJECT_CONFIG",
    "PROJECT_FILES",
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
    "parse_config",
    "parse_permission",
    "project_root",
    "user_config_path",
}


def test_public_surface_is_pinned() -> None:
    assert set(config.__all__) == EXPECTED
    for name in config.__all__:
        assert getattr(config, name) is not None, name
