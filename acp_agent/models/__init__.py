"""Model providers: one streaming interface over OpenAI-compatible and Anthropic APIs.

A `ModelRequest` goes in, `ModelProvider.stream()` yields `ModelEvent`s out,
failures are the `ProviderError` tree. `config` resolves `<provider>/<model>`
names, keys and prices; `build_provider` makes the provider to stream from.

The provider modules and configuration load on first use (they pull in httpx
and tomllib), so importing this package costs the agent's start-up nothing
it does not need yet.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from acp_agent.models.errors import (
    AuthenticationFailed,
    ConfigFileInvalid,
    ContextWindowExceeded,
    ModelNotFound,
    ProviderConnectError,
    ProviderConnectionLost,
    ProviderError,
    ProviderNotConfigured,
    ProviderOverloaded,
    ProviderResponseInvalid,
    ProviderStatusError,
    ProviderTimeout,
    ProviderTransportError,
    QuotaExceeded,
    RateLimited,
    StreamBroken,
)
from acp_agent.models.events import (
    ModelEvent,
    ReasoningDelta,
    ReasoningEnded,
    ResponseEnded,
    StopReason,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallEnded,
    ToolCallStarted,
    UsageReported,
)
from acp_agent.models.provider import ModelProvider, ModelStream
from acp_agent.models.reply import Reply, ReplyBuilder
from acp_agent.models.request import (
    Image,
    Message,
    ModelRequest,
    Part,
    Reasoning,
    ReasoningEffort,
    Role,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from acp_agent.models.retry import NO_RETRY, RetryPolicy, Sleep

if TYPE_CHECKING:
    from acp_agent.models._http import new_http_client
    from acp_agent.models.anthropic import AnthropicProvider
    from acp_agent.models.config import (
        ModelsConfig,
        Pricing,
        ProviderSettings,
        ResolvedModel,
        available_models,
        build_provider,
        load_models_config,
        resolve_model,
    )
    from acp_agent.models.openai import OpenAIProvider

__all__ = (
    "NO_RETRY",
    "AnthropicProvider",
    "AuthenticationFailed",
    "ConfigFileInvalid",
    "ContextWindowExceeded",
    "Image",
    "Message",
    "ModelEvent",
    "ModelNotFound",
    "ModelProvider",
    "ModelRequest",
    "ModelStream",
    "ModelsConfig",
    "OpenAIProvider",
    "Part",
    "Pricing",
    "ProviderConnectError",
    "ProviderConnectionLost",
    "ProviderError",
    "ProviderNotConfigured",
    "ProviderOverloaded",
    "ProviderResponseInvalid",
    "ProviderSettings",
    "ProviderStatusError",
    "ProviderTimeout",
    "ProviderTransportError",
    "QuotaExceeded",
    "RateLimited",
    "Reasoning",
    "ReasoningDelta",
    "ReasoningEffort",
    "ReasoningEnded",
    "Reply",
    "ReplyBuilder",
    "ResolvedModel",
    "ResponseEnded",
    "RetryPolicy",
    "Role",
    "Sleep",
    "StopReason",
    "StreamBroken",
    "Text",
    "TextDelta",
    "ToolCall",
    "ToolCallArgumentsDelta",
    "ToolCallEnded",
    "ToolCallStarted",
    "ToolResult",
    "ToolSpec",
    "UsageReported",
    "available_models",
    "build_provider",
    "load_models_config",
    "new_http_client",
    "resolve_model",
)

#: Public names loaded on first use, and the module that defines each.
_LAZY = {
    "AnthropicProvider": "acp_agent.models.anthropic",
    "OpenAIProvider": "acp_agent.models.openai",
    "new_http_client": "acp_agent.models._http",
    "ModelsConfig": "acp_agent.models.config",
    "Pricing": "acp_agent.models.config",
    "ProviderSettings": "acp_agent.models.config",
    "ResolvedModel": "acp_agent.models.config",
    "available_models": "acp_agent.models.config",
    "build_provider": "acp_agent.models.config",
    "load_models_config": "acp_agent.models.config",
    "resolve_model": "acp_agent.models.config",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
