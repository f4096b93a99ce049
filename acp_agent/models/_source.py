"""Where a session's model comes from: configured providers, or a script.

`ModelSource` is what the loop asks for a provider: `open(model_id)` gives a
`ModelHandle` (the provider to stream from, the provider's own model name,
the context window and prices) or raises `ProviderNotConfigured` with a
message saying how to configure one. `ConfiguredModels` is the real one:
`<provider>/<model>` names resolved by `resolve_model` (`_config`) (built-in
providers, `config.toml`, environment), plus `scripted/<name>` for the
script given with `--script`.

It also tells the session controls what a picker offers (`available_models`),
what a model accepts (`traits`: images, a reasoning effort; known model
families by name prefix, and the scripted model accepts everything, since it
plays its replies whatever it is sent), and which providers read an API key
from the environment and whether it is set (`provider_keys`).

`ConfiguredModels.prepare()` opens the default model from any thread, building
what its first request needs: its provider's modules and the HTTP client, whose
TLS context (the CA bundle, read and parsed) took 45-72 ms of a process's first
prompt. The stdio agent's warm-up calls it while the person types.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

import attrs

from acp_agent.models._errors import ConfigFileInvalid, ProviderNotConfigured
from acp_agent.values import Value

if TYPE_CHECKING:
    import httpx

    from acp_agent.models._config import ModelsConfig, Pricing, ResolvedModel
    from acp_agent.models._http import LazyCAContext

    # The providers, the scripted one too, with the model events and requests they
    # stream: loaded when a model is first opened, not before `initialize` is answered.
    from acp_agent.models._provider import ModelProvider
    from acp_agent.models._scripted import Script

__all__ = (
    "DEFAULT_CONTEXT_WINDOW",
    "DOCTOR_HINT",
    "SCRIPTED_PROVIDER",
    "SCRIPT_HINT",
    "ConfiguredModels",
    "ModelHandle",
    "ModelSource",
    "ModelTraits",
    "ProviderKey",
    "context_window_for",
    "traits_for",
)

logger = logging.getLogger(__name__)

#: The provider name scripted models go by: `scripted/<script name>` (`_scripted`).
SCRIPTED_PROVIDER: Final = "scripted"
#: The window assumed for a model this table does not know (`usage_update.size`).
DEFAULT_CONTEXT_WINDOW: Final = 128_000
#: Context windows of well-known model families, by name prefix (longest prefix wins).
_KNOWN_WINDOWS: Final[Mapping[str, int]] = {
    "claude": 200_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-5": 400_000,
    "o3": 200_000,
    "o4": 200_000,
    "deepseek": 128_000,
    "qwen3": 40_960,
    "llama3": 128_000,
}
#: Model families that take images in the person's messages, by name prefix.
_IMAGE_FAMILIES: Final = (
    "claude",
    "gpt-4o",
    "gpt-4.1",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "gemini",
    "llava",
    "qwen2.5-vl",
    "llama3.2-vision",
)
#: Model families that take a reasoning effort (OpenAI `reasoning_effort`, Anthropic
#: extended thinking), by name prefix.
_REASONING_FAMILIES: Final = (
    "claude-3-7",
    "claude-sonnet-4",
    "claude-opus-4",
    "claude-haiku-4",
    "gpt-5",
    "o1",
    "o3",
    "o4",
)
#: Appended to "no model is configured": the way to run without any provider.
SCRIPT_HINT: Final = (
    " To try acp-agent without a provider, start it with --script FILE "
    "(or ACP_AGENT_SCRIPT) to play scripted replies."
)
#: Ends every "no model is configured" a person reads: where to see what is wrong.
DOCTOR_HINT: Final = " Run `acp-agent doctor` to check the set-up."


def context_window_for(model: str) -> int:
    """The context window of `model` (the provider's name for it), or the default."""
    name = model.rsplit("/", 1)[-1].lower()
    matches = [prefix for prefix in _KNOWN_WINDOWS if name.startswith(prefix)]
    return _KNOWN_WINDOWS[max(matches, key=len)] if matches else DEFAULT_CONTEXT_WINDOW


@attrs.frozen
class ModelTraits(Value):
    """What a model accepts besides text."""

    #: Images in the person's messages.
    images: bool = False
    #: A reasoning effort (`ModelRequest.reasoning_effort`).
    reasoning: bool = False


def traits_for(model: str) -> ModelTraits:
    """What `model` (the provider's name for it, or `<provider>/<model>`) accepts."""
    name = model.rsplit("/", 1)[-1].lower()
    return ModelTraits(
        images=name.startswith(_IMAGE_FAMILIES), reasoning=name.startswith(_REASONING_FAMILIES)
    )


@attrs.frozen
class ProviderKey(Value):
    """A provider that reads its API key from an environment variable."""

    provider: str
    env_var: str
    #: Whether the variable was set (non-empty) when acp-agent started.
    present: bool


@attrs.frozen
class ModelHandle(Value):
    """A model ready for requests."""

    provider: ModelProvider
    #: `<provider>/<model>`, as sessions record it.
    model_id: str
    #: The provider's own name for the model, as requests carry it.
    model: str
    context_window: int
    pricing: Pricing | None = None


class ModelSource(Protocol):
    """Resolves model names to providers for the loop."""

    def default_model(self) -> str | None:
        """The model new sessions use, or None when nothing is configured."""
        ...

    def open(self, model_id: str | None) -> ModelHandle:
        """A handle for `model_id` (None: the default); `ProviderNotConfigured` says why not."""
        ...

    def context_window(self, model_id: str | None) -> int:
        """The context window of `model_id` in tokens (a default when unknown)."""
        ...

    def pricing(self, model_id: str | None) -> Pricing | None:
        """What `model_id` costs, when configured."""
        ...

    def available_models(self) -> list[str]:
        """The models a picker offers: usable now (keys present), in configuration order."""
        ...

    def traits(self, model_id: str | None) -> ModelTraits:
        """What `model_id` (None: the default) accepts besides text."""
        ...

    def provider_keys(self) -> list[ProviderKey]:
        """The providers that read an API key from the environment, in configuration order."""
        ...


class ConfiguredModels:
    """Models from the configuration and environment, and the `--script` model."""

    def __init__(
        self,
        config: ModelsConfig,
        env: Mapping[str, str],
        *,
        script: Script | None = None,
        http_client: httpx.AsyncClient | None = None,
        config_error: ProviderNotConfigured | None = None,
    ) -> None:
        """`config_error`: the configuration file could not be used; every configured
        model answers with it (the script still plays)."""
        self._config = config
        self._env = dict(env)
        self._script = script
        self._config_error = config_error
        self._client = http_client
        self._tls: LazyCAContext | None = None
        self._owns_client = http_client is None
        # The client is built once, by the loop or by the warm-up's thread.
        self._client_lock = threading.Lock()
        self._closed = False

    @classmethod
    def load(
        cls, config_file: Path | None, env: Mapping[str, str], *, script: Script | None = None
    ) -> ConfiguredModels:
        """Read `config_file` (absent is fine). A file that cannot be used does not stop the
        agent: its error is what every configured model answers with."""
        from acp_agent.models._config import load_models_config

        try:
            return cls(load_models_config(config_file, env), env, script=script)
        except ConfigFileInvalid as exc:
            logger.warning("%s", exc)
            return cls(load_models_config(None, env), env, script=script, config_error=exc)

    def default_model(self) -> str | None:
        if self._script is not None:
            return self._script.model_id
        if self._config_error is not None:
            return None
        from acp_agent.models._config import resolve_model

        try:
            return resolve_model(self._config, self._env).model_id
        except ProviderNotConfigured:
            return None

    def open(self, model_id: str | None) -> ModelHandle:
        chosen = model_id or self.default_model()
        if chosen is not None and chosen.startswith(f"{SCRIPTED_PROVIDER}/"):
            return self._open_script(chosen)
        return self._open_resolved(self._resolve(chosen))

    def _resolve(self, chosen: str | None) -> ResolvedModel:
        """The configured model `chosen` (None: the default); `ProviderNotConfigured` says
        why not."""
        if self._config_error is not None:
            raise self._config_error
        from acp_agent.models._config import resolve_model

        try:
            return resolve_model(self._config, self._env, chosen)
        except ProviderNotConfigured as exc:
            if chosen is None:
                raise ProviderNotConfigured(
                    f"{exc}{SCRIPT_HINT}{DOCTOR_HINT}", provider=exc.provider
                ) from exc
            raise

    def _open_resolved(self, resolved: ResolvedModel) -> ModelHandle:
        from acp_agent.models._config import build_provider

        provider = build_provider(resolved, self._http_client())
        return ModelHandle(
            provider,
            resolved.model_id,
            resolved.model,
            context_window_for(resolved.model),
            resolved.pricing,
        )

    def context_window(self, model_id: str | None) -> int:
        chosen = model_id or self.default_model()
        if chosen is None:
            return DEFAULT_CONTEXT_WINDOW
        script = self._script
        if script is not None and chosen == script.model_id:
            return script.context_window
        return context_window_for(chosen)

    def pricing(self, model_id: str | None) -> Pricing | None:
        chosen = model_id or self.default_model()
        if chosen is None or chosen.startswith(f"{SCRIPTED_PROVIDER}/"):
            return None
        from acp_agent.models._config import resolve_model

        try:
            return resolve_model(self._config, self._env, chosen).pricing
        except ProviderNotConfigured:
            return None

    def available_models(self) -> list[str]:
        models = [] if self._script is None else [self._script.model_id]
        if self._config_error is None:
            from acp_agent.models._config import available_models

            models += available_models(self._config, self._env)
        return list(dict.fromkeys(models))

    def traits(self, model_id: str | None) -> ModelTraits:
        chosen = model_id or self.default_model()
        if chosen is None:
            return ModelTraits()
        if chosen.startswith(f"{SCRIPTED_PROVIDER}/"):
            return ModelTraits(images=True, reasoning=True)
        return traits_for(chosen)

    def provider_keys(self) -> list[ProviderKey]:
        return [
            ProviderKey(
                provider.name, provider.api_key_env, bool(self._env.get(provider.api_key_env))
            )
            for provider in self._config.providers.values()
            if provider.api_key_env
        ]

    def _open_script(self, model_id: str) -> ModelHandle:
        script = self._script
        if script is None or model_id != script.model_id:
            loaded = f"; this process plays {script.model_id}" if script is not None else ""
            raise ProviderNotConfigured(
                f"model {model_id!r} is a script that is not loaded{loaded}. Start acp-agent "
                "with --script FILE (the model is scripted/<file name without .json>).",
                provider=SCRIPTED_PROVIDER,
            )
        from acp_agent.models._scripted import ScriptedProvider

        # Each request says which line of work and which of its requests it is.
        return ModelHandle(ScriptedProvider(script), model_id, script.name, script.context_window)

    def prepare(self) -> ModelHandle | None:
        """Open the default model from any thread (the warm-up's), building what its
        first request needs: its provider's modules and the HTTP client, which every
        later handle shares, with its CA certificates read when the model is https. None
        when a script or nothing answers by default, or after `aclose`; a model that cannot
        be opened is left for its first request to report."""
        chosen = self.default_model()
        if chosen is None or chosen.startswith(f"{SCRIPTED_PROVIDER}/") or self._closed:
            return None
        try:
            resolved = self._resolve(chosen)
        except ProviderNotConfigured:
            return None
        handle = self._open_resolved(resolved)
        if resolved.provider.base_url.startswith("https:") and self._tls is not None:
            self._tls.load_ca()
        return handle

    def _http_client(self) -> httpx.AsyncClient:
        with self._client_lock:
            if self._client is None:
                from acp_agent.models._http import LazyCAContext, new_http_client

                self._tls = LazyCAContext()
                self._client = new_http_client(verify=self._tls)
            return self._client

    async def aclose(self) -> None:
        """Close the HTTP client this source opened; idempotent."""
        with self._client_lock:
            self._closed = True
            client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.aclose()
