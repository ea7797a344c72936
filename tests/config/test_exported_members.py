import tether.config as config

EXPECTED = {
    "CONFIG_FILE",
    "PERMISSION_ENV",
    "PROJECT_CONFIG",
    "AgentConfig",
    "AgentMode",
    "Config",
    "load_config",
    "parse_config",
    "parse_permission",
    "user_config_path",
}


def test_public_surface_is_pinned() -> None:
    assert set(config.__all__) == EXPECTED
    for name in config.__all__:
        assert getattr(config, name) is not None, name
