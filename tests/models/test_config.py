"""Model names, providers, keys and prices: from built-ins, the environment and config.toml."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from acp_agent.models import (
    AnthropicProvider,
    ConfigFileInvalid,
    OpenAIProvider,
    Pricing,
    ProviderNotConfigured,
    ProviderSettings,
    ResolvedModel,
    UsageReported,
    available_models,
    build_provider,
    load_models_config,
    resolve_model,
)
from tests.test_readme import checked_documents

OPENROUTER = """
default_model = "openrouter/deepseek/deepseek-r1"

[providers.openrouter]
kind = "openai"
base_url = "https://openrouter.ai/api/v1"
api_key_env = "OPENROUTER_API_KEY"
models = ["deepseek/deepseek-r1", "anthropic/claude-sonnet-4.5"]

[providers.openrouter.prices."deepseek/deepseek-r1"]
input = 0.55
output = 2.19
cache_read = 0.14

[providers.ollama]
base_url = "http://gpu-box:11434/v1"
models = ["qwen3", "llama3.2"]
"""


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_nothing_configured_says_how_to_configure_a_model(tmp_path: Path) -> None:
    config = load_models_config(tmp_path / "config.toml", {})
    with pytest.raises(ProviderNotConfigured) as caught:
        resolve_model(config, {})
    message = str(caught.value)
    for needed in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ACP_AGENT_MODEL"):
        assert needed in message
    assert str(tmp_path / "config.toml") in message  # where to write one


def test_a_key_in_the_environment_picks_that_vendor_model() -> None:
    config = load_models_config(None, {})
    resolved = resolve_model(config, {"OPENAI_API_KEY": "sk-o"})
    assert (resolved.model_id, resolved.api_key) == ("openai/gpt-4.1", "sk-o")
    both = {"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"}
    assert resolve_model(config, both).model_id == "anthropic/claude-sonnet-4-5"


def test_the_asked_model_beats_the_environment_which_beats_the_file(tmp_path: Path) -> None:
    env = {"OPENROUTER_API_KEY": "k", "ACP_AGENT_MODEL": "ollama/qwen3"}
    config = load_models_config(config_file(tmp_path, OPENROUTER), env)
    assert resolve_model(config, env, "ollama/llama3.2").model_id == "ollama/llama3.2"
    assert resolve_model(config, env).model_id == "ollama/qwen3"
    assert resolve_model(config, {"OPENROUTER_API_KEY": "k"}).model_id == (
        "openrouter/deepseek/deepseek-r1"
    )


def test_the_config_file_adds_providers_and_changes_built_ins(tmp_path: Path) -> None:
    config = load_models_config(config_file(tmp_path, OPENROUTER), {})
    assert config.providers["openrouter"] == ProviderSettings(
        name="openrouter",
        kind="openai",
        base_url="https://openrouter.ai/api/v1",
        api_key_env="OPENROUTER_API_KEY",
        models=("deepseek/deepseek-r1", "anthropic/claude-sonnet-4.5"),
        max_tokens_field="max_tokens",
        prices={"deepseek/deepseek-r1": Pricing(input=0.55, output=2.19, cache_read=0.14)},
    )
    assert config.providers["ollama"] == ProviderSettings(
        name="ollama",
        kind="openai",
        base_url="http://gpu-box:11434/v1",
        models=("qwen3", "llama3.2"),
    )


def test_a_model_resolves_with_its_key_and_price(tmp_path: Path) -> None:
    env = {"OPENROUTER_API_KEY": "sk-or"}
    config = load_models_config(config_file(tmp_path, OPENROUTER), env)
    resolved = resolve_model(config, env)
    assert resolved == ResolvedModel(
        provider=config.providers["openrouter"],
        model="deepseek/deepseek-r1",
        api_key="sk-or",
        pricing=Pricing(input=0.55, output=2.19, cache_read=0.14),
    )
    assert "sk-or" not in repr(resolved)


def test_base_url_variables_repoint_the_built_in_providers() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "ANTHROPIC_BASE_URL": "http://proxy"}
    config = load_models_config(None, env)
    assert config.providers["openai"].base_url == "http://127.0.0.1:8000/v1"
    assert config.providers["openai"].max_tokens_field == "max_tokens"
    assert config.providers["anthropic"].base_url == "http://proxy"


def test_only_the_vendors_own_api_requires_a_key() -> None:
    config = load_models_config(None, {})
    with pytest.raises(ProviderNotConfigured, match="set OPENAI_API_KEY"):
        resolve_model(config, {}, "openai/gpt-4.1")
    with pytest.raises(ProviderNotConfigured, match="set ANTHROPIC_API_KEY") as caught:
        resolve_model(config, {}, "anthropic/claude-sonnet-4-5")
    # A sentence: hints (`--script`, `acp-agent doctor`) may follow it.
    assert str(caught.value).endswith("set ANTHROPIC_API_KEY.")
    local = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}
    resolved = resolve_model(load_models_config(None, local), local, "openai/qwen2.5-coder")
    assert resolved.api_key is None
    assert resolve_model(config, {}, "ollama/qwen3").api_key is None


@pytest.mark.parametrize(
    ("model_id", "message"),
    [
        ("gpt-4.1", "is not named <provider>/<model>"),
        ("/gpt-4.1", "is not named <provider>/<model>"),
        ("openai/", "is not named <provider>/<model>"),
        ("mistral/large", "no provider named 'mistral' .* add \\[providers.mistral\\]"),
    ],
)
def test_bad_model_names_say_what_is_wrong(model_id: str, message: str) -> None:
    with pytest.raises(ProviderNotConfigured, match=message):
        resolve_model(load_models_config(None, {}), {}, model_id)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("default_model = [", "cannot read"),
        ("defaults_model = 'x'", "unknown key 'defaults_model'"),
        ("[providers.x]\nkind = 'openai'\nbase-url = 'u'", "unknown key 'base-url'"),
        ("[providers.x]\nkind = 'gemini'\nbase_url = 'u'", 'kind must be "openai" or "anthropic"'),
        ("[providers.x]\nkind = 'openai'", "base_url is required"),
        ("[providers.x]\nkind = 'openai'\nbase_url = 'u'\nmodels = 'm'", "models must be a list"),
        ("[providers.openai]\nmax_tokens_field = 'n_predict'", "max_tokens_field must be"),
        ("[providers.ollama.prices.m]\ninput = 1", "input and output are required"),
        ("[providers.ollama.prices.m]\ninput = -1\noutput = 1", "non-negative number"),
    ],
)
def test_an_invalid_config_file_names_the_file_and_the_mistake(
    tmp_path: Path, text: str, message: str
) -> None:
    path = config_file(tmp_path, text)
    with pytest.raises(ConfigFileInvalid, match=message) as caught:
        load_models_config(path, {})
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, ProviderNotConfigured)


def test_the_tables_other_packages_read_from_the_same_file_are_left_to_them(
    tmp_path: Path,
) -> None:
    text = (
        "default_model = 'ollama/qwen3'\n"
        "[mcp_servers.docs]\nurl = 'https://example.com/mcp'\n"
        "[lsp.servers.rust-analyzer]\ncommand = ['rust-analyzer']\nextensions = ['.rs']\n"
    )
    config = load_models_config(config_file(tmp_path, text), {})
    assert config.default_model == "ollama/qwen3"


def _config_blocks() -> list[tuple[str, str]]:
    """Every `toml` block of the README and the docs (each a part of `config.toml`)."""
    blocks = []
    for path in checked_documents():
        for body in re.findall(r"```toml\n(.*?)\n```", path.read_text(), re.DOTALL):
            blocks.append((path.name, body))
    return blocks


@pytest.mark.parametrize(("page", "block"), _config_blocks())
def test_every_table_the_docs_put_in_config_toml_keeps_the_models_configured(
    tmp_path: Path, page: str, block: str
) -> None:
    # A table the models did not know made the whole file invalid: every prompt then
    # failed with "unknown key 'server'" once a person set up the docs' `[server]`.
    text = f"default_model = 'ollama/qwen3'\n{block}\n"
    config = load_models_config(config_file(tmp_path, text), {})
    assert config.default_model == "ollama/qwen3", page


def test_pickers_offer_only_models_whose_keys_are_present(tmp_path: Path) -> None:
    config = load_models_config(config_file(tmp_path, OPENROUTER), {})
    assert available_models(config, {"OPENAI_API_KEY": "k"}) == [
        "openai/gpt-4.1",
        "ollama/qwen3",
        "ollama/llama3.2",
        "openrouter/deepseek/deepseek-r1",
        "openrouter/anthropic/claude-sonnet-4.5",
    ]
    assert "anthropic/claude-sonnet-4-5" not in available_models(config, {})


def test_cost_charges_cached_input_at_the_cache_prices() -> None:
    pricing = Pricing(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = UsageReported(
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_read_tokens=600_000,
        cache_write_tokens=200_000,
    )
    assert pricing.cost_usd(usage) == pytest.approx(0.6 + 0.18 + 0.75 + 1.5)
    assert Pricing(input=1.0, output=2.0).cost_usd(UsageReported(1000, 0, 500)) == 0.001


async def test_build_provider_makes_the_provider_of_the_configured_kind(tmp_path: Path) -> None:
    env = {"OPENROUTER_API_KEY": "k", "ANTHROPIC_API_KEY": "a"}
    config = load_models_config(config_file(tmp_path, OPENROUTER), env)
    async with httpx.AsyncClient() as client:
        openrouter = build_provider(resolve_model(config, env), client)
        anthropic = build_provider(resolve_model(config, env, "anthropic/claude-x"), client)
    assert isinstance(openrouter, OpenAIProvider)
    assert repr(openrouter) == (
        "OpenAIProvider(name='openrouter', url='https://openrouter.ai/api/v1/chat/completions')"
    )
    assert isinstance(anthropic, AnthropicProvider)
    assert anthropic.name == "anthropic"
