"""Provider adapters: OpenAI Chat Completions (and compatible servers), OpenAI Responses, Anthropic Messages.

These modules are the only ones that import the ``openai`` and ``anthropic`` SDKs, and they import them lazily (when
a client is first built), so importing this package is cheap. Each adapter turns its wire stream into tether's
event vocabulary (law 8) and maps SDK errors to the :class:`~tether.errors.ProviderError` subtree.
"""

from ._anthropic import AnthropicModel
from ._base import ClientSettings, Timeouts
from ._errors import is_context_overflow
from ._openai_chat import OpenAIChatModel
from ._openai_responses import OpenAIResponsesModel
from ._registry import BUILTIN_PROVIDERS, Api, ModelLimits, ProviderConfig, resolve_model

__all__ = [
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
]
