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
        "NetworkGate",
        "ProxySeam",
        "Refusal",
        "Sandbox",
        "SandboxPolicy",
        "SandboxSettings",
        "SessionTemps",
        "build_policy",
        "bwrap_argv",
        "destination_resource",
        "detect",
        "may_use_network",
        "notice",
        "open_proxy",
        "protected_allows",
        "protected_entries",
        "reset",
        "sweep",
        "writable_from_rules",
    }
