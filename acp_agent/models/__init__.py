"""Model providers: one streaming interface over OpenAI-compatible and Anthropic APIs.

A `ModelRequest` goes in, `ModelProvider.stream()` yields `ModelEvent`s out,
failures are the `ProviderError` tree. `resolve_model` resolves
`<provider>/<model>` names, keys and prices (the config file's format is the
docstring of `acp_agent.models._config`); `build_provider` makes the
provider to stream from. `ScriptedProvider` plays the replies of a script
(`parse_script`, `load_script`; the format is the docstring of
`acp_agent.models._scripted`). A session's models come from a `ModelSource`:
`ConfiguredModels` opens configured providers and the `--script` model by
name, each as a `ModelHandle`.

Every module under this package is private: this is its whole public
surface. The provider modules and configuration (they pull in httpx and
tomllib), retries (email's date parsing), the reply builder, the scripted
provider and what a model streams and is asked (`_events`, `_request`) load on
first use, so importing this package costs the agent's start-up nothing it does
not need yet: only the model source loads with it (the agent opens it before
serving, and answers `initialize` before any model is opened). Importing it
also keeps httpx from importing its command line client, which the agent never runs
(`httpx._main`: click, and rich and pygments where they are installed: 15 to 75 ms of
a process's first model request).
"""

from __future__ import annotations

import sys as _sys
from typing import TYPE_CHECKING

from acp_agent.lazy_face import lazy_face as _lazy_face
from acp_agent.models._errors import (
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
from acp_agent.models._source import (
    DOCTOR_HINT,
    SCRIPTED_PROVIDER,
    ConfiguredModels,
    ModelHandle,
    ModelSource,
    ProviderKey,
)

# httpx's `__init__` imports `._main` inside `try: ... except ImportError`; a module
# marked absent raises ImportError at once (none of the above imports httpx).
_sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

if TYPE_CHECKING:
    from acp_agent.models._anthropic import ANTHROPIC_VERSION, AnthropicProvider
    from acp_agent.models._config import (
        MODEL_ENV,
        ModelsConfig,
        Pricing,
        ProviderSettings,
        ResolvedModel,
        available_models,
        build_provider,
        builtin_providers,
        load_models_config,
        resolve_model,
    )
    from acp_agent.models._events import (
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
    from acp_agent.models._http import new_http_client
    from acp_agent.models._openai import OpenAIProvider
    from acp_agent.models._provider import ModelProvider, ModelStream
    from acp_agent.models._reply import Reply, ReplyBuilder
    from acp_agent.models._request import (
        Image,
        Message,
        ModelRequest,
        Part,
        Reasoning,
        ReasoningEffort,
        RequestOrigin,
        Role,
        Text,
        ToolCall,
        ToolResult,
        ToolSpec,
    )
    from acp_agent.models._retry import NO_RETRY, RetryPolicy, Sleep
    from acp_agent.models._scripted import (
        BranchScript,
        Script,
        ScriptedProvider,
        ScriptError,
        load_script,
        parse_script,
    )
    from acp_agent.models._status import redact_secrets

__all__ = (
    "ANTHROPIC_VERSION",
    "DOCTOR_HINT",
    "MODEL_ENV",
    "NO_RETRY",
    "SCRIPTED_PROVIDER",
    "AnthropicProvider",
    "AuthenticationFailed",
    "BranchScript",
    "ConfigFileInvalid",
    "ConfiguredModels",
    "ContextWindowExceeded",
    "Image",
    "Message",
    "ModelEvent",
    "ModelHandle",
    "ModelNotFound",
    "ModelProvider",
    "ModelRequest",
    "ModelSource",
    "ModelStream",
    "ModelsConfig",
    "OpenAIProvider",
    "Part",
    "Pricing",
    "ProviderConnectError",
    "ProviderConnectionLost",
    "ProviderError",
    "ProviderKey",
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
    "RequestOrigin",
    "ResolvedModel",
    "ResponseEnded",
    "RetryPolicy",
    "Role",
    "Script",
    "ScriptError",
    "ScriptedProvider",
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
    "builtin_providers",
    "load_models_config",
    "load_script",
    "new_http_client",
    "parse_script",
    "redact_secrets",
    "resolve_model",
)

#: Public names loaded on first use, and the module that defines each.
_LAZY = {
    # What a model streams and is asked, and the scripted provider: on a model's first
    # opening (or a `--script` start), not before `initialize` is answered.
    **{
        name: "_events"
        for name in (
            "ModelEvent",
            "ReasoningDelta",
            "ReasoningEnded",
            "ResponseEnded",
            "StopReason",
            "TextDelta",
            "ToolCallArgumentsDelta",
            "ToolCallEnded",
            "ToolCallStarted",
            "UsageReported",
        )
    },
    "ModelProvider": "_provider",
    "ModelStream": "_provider",
    **{
        name: "_request"
        for name in (
            "Image",
            "Message",
            "ModelRequest",
            "Part",
            "Reasoning",
            "ReasoningEffort",
            "RequestOrigin",
            "Role",
            "Text",
            "ToolCall",
            "ToolResult",
            "ToolSpec",
        )
    },
    **{
        name: "_scripted"
        for name in (
            "BranchScript",
            "Script",
            "ScriptedProvider",
            "ScriptError",
            "load_script",
            "parse_script",
        )
    },
    "NO_RETRY": "_retry",
    "RetryPolicy": "_retry",
    "Sleep": "_retry",
    "Reply": "_reply",
    "ReplyBuilder": "_reply",
    "ANTHROPIC_VERSION": "_anthropic",
    "AnthropicProvider": "_anthropic",
    "OpenAIProvider": "_openai",
    "new_http_client": "_http",
    "MODEL_ENV": "_config",
    "ModelsConfig": "_config",
    "Pricing": "_config",
    "ProviderSettings": "_config",
    "ResolvedModel": "_config",
    "available_models": "_config",
    "build_provider": "_config",
    "builtin_providers": "_config",
    "load_models_config": "_config",
    "resolve_model": "_config",
    "redact_secrets": "_status",
}


__getattr__, __dir__ = _lazy_face(__name__, _LAZY)
