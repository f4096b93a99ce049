"""Authentication, as acp-agent has it: a model provider configured in the environment.

There is no login. Each provider that reads an API key from an environment
variable is an `authMethods` entry saying which variable to set (editors
pass it in the agent's `env`), and one more entry says how to name any
other model. `authenticate` checks that what the method asks for is there
now. Sessions open without a model (a prompt then says how to configure
one), so `auth_required` (-32000) comes only from `authenticate` itself.
"""

from __future__ import annotations

from typing import Final

from acp_agent.models import DOCTOR_HINT, ModelSource, ProviderKey
from protocol import types
from protocol.errors import AuthRequired, InvalidParams

__all__ = ("MODEL_METHOD_ID", "auth_methods", "check_method", "method_id")

#: The method for naming any model (a local server, a provider from config.toml).
MODEL_METHOD_ID: Final = "model"


def method_id(key: ProviderKey) -> str:
    return f"{key.provider}-api-key"


def auth_methods(models: ModelSource, config_file: str) -> list[types.AuthMethod]:
    """One method per provider key variable, then the way to name a model."""
    methods: list[types.AuthMethod] = [
        types.AuthMethodAgent(
            id=method_id(key),
            name=f"{_display(key.provider)} API key",
            description=(
                f"Set {key.env_var} in the environment acp-agent starts with (in Zed: "
                '"env" of this agent in agent_servers), then restart the agent.'
            ),
        )
        for key in models.provider_keys()
    ]
    methods.append(
        types.AuthMethodAgent(
            id=MODEL_METHOD_ID,
            name="Another model",
            description=(
                "Name a model as <provider>/<model> in ACP_AGENT_MODEL (for example "
                f"ollama/qwen3 for a local Ollama), or set default_model in {config_file}."
            ),
        )
    )
    return methods


def check_method(models: ModelSource, method: str) -> None:
    """Nothing when `method`'s provider can be used now; otherwise an error saying why."""
    if method == MODEL_METHOD_ID:
        if models.default_model() is None:
            raise AuthRequired(
                "Authentication required: no model is configured yet; "
                f"set ACP_AGENT_MODEL or default_model, then restart the agent.{DOCTOR_HINT}"
            )
        return
    for key in models.provider_keys():
        if method_id(key) == method:
            if not key.present:
                raise AuthRequired(
                    f"Authentication required: {key.env_var} is not set in acp-agent's "
                    "environment; set it, then restart the agent"
                )
            return
    raise InvalidParams(f"Invalid params: methodId: no authentication method {method!r}")


def _display(provider: str) -> str:
    return {"openai": "OpenAI", "anthropic": "Anthropic"}.get(provider, provider.capitalize())
