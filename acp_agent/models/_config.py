"""Which providers and models exist, where their keys come from, and what they cost.

Models are named `<provider>/<model>`: `openai/gpt-4.1`,
`anthropic/claude-sonnet-4-5`, `ollama/qwen3`. The model part is the
provider's own name and may contain slashes (`openrouter/deepseek/deepseek-r1`).

Built-in providers, usable without a config file:

========== ========= ===================================== ==================
name       kind      base URL (environment override)       API key from
========== ========= ===================================== ==================
openai     openai    https://api.openai.com/v1             OPENAI_API_KEY
                     (OPENAI_BASE_URL: any compatible server)
anthropic  anthropic https://api.anthropic.com             ANTHROPIC_API_KEY
                     (ANTHROPIC_BASE_URL)
ollama     openai    http://127.0.0.1:11434/v1             (none)
========== ========= ===================================== ==================

A key is required only by a provider pointed at its vendor's own API
(api.openai.com, api.anthropic.com); a compatible or local server gets the
key when its variable is set and none otherwise.

Which model: the one asked for (a session's choice), else `ACP_AGENT_MODEL`,
else `default_model` from the file, else `anthropic/claude-sonnet-4-5` when
`ANTHROPIC_API_KEY` is set, else `openai/gpt-4.1` when `OPENAI_API_KEY` is.
With none of these, `ProviderNotConfigured` says how to configure one.

The config file, `config.toml` in the config directory::

    # The model used when neither the session nor ACP_AGENT_MODEL names one.
    default_model = "openrouter/deepseek/deepseek-r1"

    # A provider: a name of your choice, or a built-in one to change it.
    [providers.openrouter]
    kind = "openai"                      # "openai" (Chat Completions) or "anthropic" (Messages)
    base_url = "https://openrouter.ai/api/v1"
    api_key_env = "OPENROUTER_API_KEY"   # the variable holding the key; omit for none
    models = ["deepseek/deepseek-r1", "anthropic/claude-sonnet-4.5"]  # offered in pickers
    max_tokens_field = "max_tokens"      # kind "openai" only: or "max_completion_tokens"

    # Prices in USD per million tokens, per model, for cost reports.
    [providers.openrouter.prices."deepseek/deepseek-r1"]
    input = 0.55
    output = 2.19
    cache_read = 0.14                    # optional, defaults to input
    cache_write = 0.55                   # optional, defaults to input

    [providers.ollama]                   # built-in: only the given keys change
    base_url = "http://gpu-box:11434/v1"
    models = ["qwen3", "llama3.2"]

Keys are never written in the file, only the names of variables that hold
them. Unknown keys are errors, so a typo does not silently do nothing.

A `base_url` (or `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) may carry userinfo
for a proxy, `http://user:pass@proxy/v1`: it is shown as `http://***@proxy/v1`
everywhere, and authenticates only where the provider's key does not already
fill the `Authorization` header (see `acp_agent.url_credentials`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

import attrs

from acp_agent.models._errors import ConfigFileInvalid, ProviderNotConfigured
from acp_agent.url_credentials import redact_url_credentials
from acp_agent.values import Value

if TYPE_CHECKING:
    import httpx

    from acp_agent.models._events import UsageReported
    from acp_agent.models._openai import MaxTokensField
    from acp_agent.models._provider import ModelProvider
    from acp_agent.models._retry import RetryPolicy

__all__ = (
    "MODEL_ENV",
    "ModelsConfig",
    "Pricing",
    "ProviderKind",
    "ProviderSettings",
    "ResolvedModel",
    "available_models",
    "build_provider",
    "builtin_providers",
    "load_models_config",
    "resolve_model",
)

#: The environment variable naming the default model.
MODEL_ENV: Final = "ACP_AGENT_MODEL"

ProviderKind: TypeAlias = Literal["openai", "anthropic"]
_KINDS: Final = ("openai", "anthropic")
_MAX_TOKENS_FIELDS: Final = ("max_completion_tokens", "max_tokens")
_OFFICIAL_URLS: Final = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
#: Tried in this order when nothing names a model: (provider, model).
_FALLBACK_MODELS: Final = (("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-4.1"))


@attrs.frozen
class Pricing(Value):
    """Prices in USD per million tokens; cache prices default to the input price."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost_usd(self, usage: UsageReported) -> float:
        """What `usage` cost."""
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        uncached = max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
        total = (
            uncached * self.input
            + usage.cache_read_tokens * cache_read
            + usage.cache_write_tokens * cache_write
            + usage.output_tokens * self.output
        )
        return total / 1_000_000


@attrs.frozen
class ProviderSettings(Value):
    """One provider: how to reach it and which models it offers."""

    name: str
    kind: ProviderKind
    #: May carry userinfo (`http://user:pass@proxy/v1`): shown as `***`, even in the repr.
    base_url: str = attrs.field(repr=redact_url_credentials)
    api_key_env: str | None = None
    models: tuple[str, ...] = ()
    max_tokens_field: MaxTokensField = "max_tokens"
    prices: Mapping[str, Pricing] = attrs.field(factory=dict)

    @property
    def key_required(self) -> bool:
        """Whether requests fail without a key: only the vendor's own API insists."""
        return self.api_key_env is not None and self.base_url.rstrip("/") == _OFFICIAL_URLS.get(
            self.kind
        )


@attrs.frozen
class ModelsConfig(Value):
    """All known providers, by name, the file's default model, and where the file is read."""

    providers: Mapping[str, ProviderSettings]
    default_model: str | None = None
    source: Path | None = None


@attrs.frozen
class ResolvedModel(Value):
    """A model ready to use: its provider, its name there, its key and its prices."""

    provider: ProviderSettings
    model: str
    api_key: str | None = attrs.field(default=None, repr=False)
    pricing: Pricing | None = None

    @property
    def model_id(self) -> str:
        """`<provider>/<model>`."""
        return f"{self.provider.name}/{self.model}"


def builtin_providers(env: Mapping[str, str]) -> dict[str, ProviderSettings]:
    """The built-in providers, with `OPENAI_BASE_URL` and `ANTHROPIC_BASE_URL` applied."""
    openai_url = env.get("OPENAI_BASE_URL") or _OFFICIAL_URLS["openai"]
    return {
        "openai": ProviderSettings(
            name="openai",
            kind="openai",
            base_url=openai_url,
            api_key_env="OPENAI_API_KEY",
            models=("gpt-4.1",),
            max_tokens_field=(
                "max_completion_tokens"
                if openai_url.rstrip("/") == _OFFICIAL_URLS["openai"]
                else "max_tokens"
            ),
        ),
        "anthropic": ProviderSettings(
            name="anthropic",
            kind="anthropic",
            base_url=env.get("ANTHROPIC_BASE_URL") or _OFFICIAL_URLS["anthropic"],
            api_key_env="ANTHROPIC_API_KEY",
            models=("claude-sonnet-4-5",),
        ),
        "ollama": ProviderSettings(
            name="ollama", kind="openai", base_url="http://127.0.0.1:11434/v1"
        ),
    }


def load_models_config(path: Path | None, env: Mapping[str, str]) -> ModelsConfig:
    """The built-in providers merged with the config file at `path` (absent is fine)."""
    providers = builtin_providers(env)
    if path is None:
        return ModelsConfig(providers)
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        return ModelsConfig(providers, source=path)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigFileInvalid(f"cannot read {path}: {exc}") from exc
    try:
        return _parse(data, providers, path)
    except _Invalid as exc:
        raise ConfigFileInvalid(f"{path}: {exc}") from None


def resolve_model(
    config: ModelsConfig, env: Mapping[str, str], model_id: str | None = None
) -> ResolvedModel:
    """The model to use: `model_id`, else `ACP_AGENT_MODEL`, else the configured default."""
    chosen = model_id or env.get(MODEL_ENV) or config.default_model
    if chosen is None:
        for provider_name, model in _FALLBACK_MODELS:
            provider = config.providers.get(provider_name)
            if provider is not None and provider.api_key_env and env.get(provider.api_key_env):
                return _resolve(config, env, f"{provider_name}/{model}")
        raise ProviderNotConfigured(_nothing_configured(config))
    return _resolve(config, env, chosen)


def available_models(config: ModelsConfig, env: Mapping[str, str]) -> list[str]:
    """The model ids the configured providers offer and can be used now (keys present)."""
    return [
        f"{provider.name}/{model}"
        for provider in config.providers.values()
        if not provider.key_required or env.get(provider.api_key_env or "")
        for model in provider.models
    ]


def build_provider(
    resolved: ResolvedModel, client: httpx.AsyncClient, retry: RetryPolicy | None = None
) -> ModelProvider:
    """The provider object for `resolved`, sending with `client`."""
    # Imported here: they need httpx, which costs start-up time the agent need not pay early.
    from acp_agent.models._anthropic import AnthropicProvider
    from acp_agent.models._openai import OpenAIProvider

    settings = resolved.provider
    if settings.kind == "anthropic":
        return AnthropicProvider(
            client,
            name=settings.name,
            base_url=settings.base_url,
            api_key=resolved.api_key,
            api_key_env=settings.api_key_env,
            retry=retry,
        )
    return OpenAIProvider(
        client,
        name=settings.name,
        base_url=settings.base_url,
        api_key=resolved.api_key,
        api_key_env=settings.api_key_env,
        max_tokens_field=settings.max_tokens_field,
        retry=retry,
    )


def _resolve(config: ModelsConfig, env: Mapping[str, str], model_id: str) -> ResolvedModel:
    provider_name, slash, model = model_id.partition("/")
    if not slash or not provider_name or not model:
        raise ProviderNotConfigured(
            f"model {model_id!r} is not named <provider>/<model> (for example openai/gpt-4.1)"
        )
    provider = config.providers.get(provider_name)
    if provider is None:
        known = ", ".join(sorted(config.providers))
        raise ProviderNotConfigured(
            f"model {model_id!r}: no provider named {provider_name!r} (known: {known}); "
            f"add [providers.{provider_name}] to {_config_name(config)}"
        )
    api_key = env.get(provider.api_key_env) if provider.api_key_env else None
    if provider.key_required and not api_key:
        raise ProviderNotConfigured(
            f"model {model_id!r} needs an API key: set {provider.api_key_env}.",
            provider=provider.name,
        )
    return ResolvedModel(provider, model, api_key or None, provider.prices.get(model))


def _nothing_configured(config: ModelsConfig) -> str:
    return (
        "No model is configured. Set ANTHROPIC_API_KEY or OPENAI_API_KEY "
        "(OPENAI_BASE_URL points the openai provider at any compatible server), "
        f"or name a model with {MODEL_ENV}=<provider>/<model> (for example ollama/qwen3 "
        f"for a local Ollama), or set default_model and [providers.<name>] in "
        f"{_config_name(config)}."
    )


def _config_name(config: ModelsConfig) -> str:
    return str(config.source) if config.source is not None else "config.toml"


class _Invalid(Exception):
    pass


_PROVIDER_KEYS: Final = {"kind", "base_url", "api_key_env", "models", "max_tokens_field", "prices"}
_PRICE_KEYS: Final = {"input", "output", "cache_read", "cache_write"}


def _parse(data: dict[str, Any], builtins: dict[str, ProviderSettings], path: Path) -> ModelsConfig:
    # `mcp_servers` and `mcp` belong to acp_agent.mcp, `lsp` to acp_agent.lsp: same file.
    # [store] is the store's (acp_agent.store._location), read where the store is chosen;
    # [sandbox] the command sandbox's (acp_agent.sandbox._settings), [server] the app
    # server's and its bridge's (acp_agent.adapters.server._bridge).
    known = {
        "default_model",
        "providers",
        "mcp_servers",
        "mcp",
        "lsp",
        "store",
        "sandbox",
        "server",
    }
    _only(data, known, "the file")
    default_model = _optional_str(data, "default_model", "the file")
    providers = dict(builtins)
    tables = data.get("providers", {})
    if not isinstance(tables, dict):
        raise _Invalid("providers must be a table of [providers.<name>] tables")
    for name, table in tables.items():
        where = f"[providers.{name}]"
        if not isinstance(table, dict):
            raise _Invalid(f"{where} must be a table")
        _only(table, _PROVIDER_KEYS, where)
        providers[name] = _provider(name, table, builtins.get(name), where)
    return ModelsConfig(providers, default_model, path)


def _provider(
    name: str, table: dict[str, Any], builtin: ProviderSettings | None, where: str
) -> ProviderSettings:
    kind_name = _optional_str(table, "kind", where) or (builtin.kind if builtin else None)
    if kind_name not in _KINDS:
        raise _Invalid(f'{where}: kind must be "openai" or "anthropic"')
    kind: ProviderKind = "anthropic" if kind_name == "anthropic" else "openai"
    base_url = _optional_str(table, "base_url", where) or (builtin.base_url if builtin else None)
    if base_url is None:
        raise _Invalid(f"{where}: base_url is required")
    field_name = _optional_str(table, "max_tokens_field", where) or (
        builtin.max_tokens_field if builtin else "max_tokens"
    )
    if field_name not in _MAX_TOKENS_FIELDS:
        raise _Invalid(f'{where}: max_tokens_field must be "max_completion_tokens" or "max_tokens"')
    field: MaxTokensField = "max_tokens" if field_name == "max_tokens" else "max_completion_tokens"
    models = table.get("models")
    if models is not None and not (
        isinstance(models, list) and all(isinstance(model, str) for model in models)
    ):
        raise _Invalid(f"{where}: models must be a list of strings")
    return ProviderSettings(
        name=name,
        kind=kind,
        base_url=base_url,
        api_key_env=(
            _optional_str(table, "api_key_env", where)
            if "api_key_env" in table or builtin is None
            else builtin.api_key_env
        ),
        models=tuple(models) if models is not None else (builtin.models if builtin else ()),
        max_tokens_field=field,
        prices=_prices(table.get("prices", {}), where),
    )


def _prices(table: Any, where: str) -> dict[str, Pricing]:
    if not isinstance(table, dict):
        raise _Invalid(f"{where}: prices must be a table of per-model tables")
    prices = {}
    for model, entry in table.items():
        at = f'{where} prices."{model}"'
        if not isinstance(entry, dict):
            raise _Invalid(f"{at} must be a table")
        _only(entry, _PRICE_KEYS, at)
        numbers = {}
        for key, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise _Invalid(f"{at}: {key} must be a non-negative number")
            numbers[key] = float(value)
        if "input" not in numbers or "output" not in numbers:
            raise _Invalid(f"{at}: input and output are required")
        prices[model] = Pricing(**numbers)
    return prices


def _only(table: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _Invalid(
            f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )


def _optional_str(table: dict[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise _Invalid(f"{where}: {key} must be a string")
    return value
