import subprocess
import sys

import tether.llm.providers as providers


def test_public_surface_is_pinned() -> None:
    assert providers.__all__ == sorted(providers.__all__, key=lambda n: (not n.isupper(), n))
    assert set(providers.__all__) == {
        "BUILTIN_PROVIDERS",
        "AnthropicModel",
        "Api",
        "ClientSettings",
        "ModelLimits",
        "OpenAIChatModel",
        "OpenAIResponsesModel",
        "ProviderConfig",
        "Timeouts",
        "is_context_overflow",
        "resolve_model",
    }
    for name in providers.__all__:
        assert getattr(providers, name) is not None


def test_importing_providers_does_not_import_the_sdks() -> None:
    code = "import sys, tether.llm.providers; print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'httpx2')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
