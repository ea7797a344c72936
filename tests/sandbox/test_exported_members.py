"""The public surface of ``tether.sandbox``."""

import tether.sandbox


def test_exported_members() -> None:
    assert set(tether.sandbox.__all__) == {
        "LANDLOCK_MODULE",
        "NAMESPACE_FLAGS",
        "PROXY_SOCKET",
        "Detection",
        "Launch",
        "Mechanism",
        "Mode",
        "Network",
        "ProxySeam",
        "Sandbox",
        "SandboxPolicy",
        "SandboxSettings",
        "build_policy",
        "bwrap_argv",
        "detect",
        "notice",
        "protected_allows",
        "protected_entries",
        "reset",
        "session_tmp",
        "writable_from_rules",
    }
