"""Provider adapters: OpenAI Chat Completions (and compatible servers), OpenAI Responses, Anthropic Messages.

Each adapter speaks its API over one ``httpx2`` client (``_clients``; no provider SDK is imported, and httpx2 only
when a client is first built, so importing this package is cheap), turns its wire stream into tether's event
vocabulary (law 8) and maps what the server or the transport reports to the
:class:`~tether.errors.ProviderError` subtree.
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
