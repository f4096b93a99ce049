"""The model each new session would use, where that choice comes from, and its provider.

The choice is the agent's own (`acp_agent.models.resolve_model`): `--model`, else
the script's model with `--script`, else `ACP_AGENT_MODEL`, else `default_model`
in `config.toml`, else the model an API key variable makes available. Then the
provider is asked about the model (`_provider_probe`): no tokens are spent. Keys
are named by their variable, never shown.
"""

from __future__ import annotations

from typing import Final

from acp_agent.adapters.doctor._provider_probe import ProbeOutcome, ProviderAnswer, probe_provider
from acp_agent.adapters.doctor._report import Check, DetailValue, Status
from acp_agent.adapters.doctor._setup import DoctorSetup
from acp_agent.adapters.doctor._warnings import collected_warnings
from acp_agent.models import (
    MODEL_ENV,
    SCRIPTED_PROVIDER,
    ConfigFileInvalid,
    ModelsConfig,
    ProviderNotConfigured,
    ResolvedModel,
    ScriptError,
    builtin_providers,
    load_models_config,
    load_script,
    resolve_model,
)
from acp_agent.url_credentials import redact_url_credentials

__all__ = ("NAME", "check_model")

NAME: Final = "model"
#: How many of a provider's listed models a "not listed" check shows.
_SHOWN_MODELS: Final = 8


async def check_model(setup: DoctorSetup) -> Check:
    """The model check; a problem here means a prompt would not work."""
    with collected_warnings() as warnings:
        check = await _check_model(setup)
    if not warnings:
        return check
    details = {**check.details, "warnings": list(warnings)}
    status = Status.WARNING if check.status is Status.OK else check.status
    return Check(check.name, status, check.summary, check.fix, details, check.gates_prompt)


async def _check_model(setup: DoctorSetup) -> Check:
    asks_script = setup.model is None or setup.model.startswith(f"{SCRIPTED_PROVIDER}/")
    if setup.script is not None and asks_script:
        return _scripted(setup)
    chosen, source = (setup.model, "--model") if setup.model is not None else (None, None)
    try:
        config = load_models_config(setup.config_file, setup.env)
    except ConfigFileInvalid as exc:
        return _problem(
            f"no model can be used: {exc}", f"fix {setup.config_file} (see the config check)"
        )
    if chosen is None:
        chosen, source = _default_choice(config, setup)
    if chosen is None:
        return _problem(
            "no model configured",
            "set ANTHROPIC_API_KEY or OPENAI_API_KEY (OPENAI_BASE_URL for a compatible "
            f"server), or {MODEL_ENV}=<provider>/<model>, or default_model in "
            f"{setup.config_file}",
        )
    if chosen.startswith(f"{SCRIPTED_PROVIDER}/"):
        return _problem(
            f"{chosen} (from {source}) is a script that is not loaded",
            "start acp-agent with --script FILE (the model is scripted/<file name>)",
        )
    try:
        resolved = resolve_model(config, setup.env, chosen)
    except ProviderNotConfigured as exc:
        # The runtime's reason already says what to set or add.
        return _problem(
            f"{chosen} (from {source}) cannot be used", redact_url_credentials(str(exc))
        )
    details: dict[str, DetailValue] = {
        "chosen by": source,
        "provider": f"{resolved.provider.name} ({resolved.provider.kind} format)",
        "base URL": f"{redact_url_credentials(resolved.provider.base_url)} "
        f"(from {_url_source(resolved, config, setup)})",
        "key": _key_state(resolved, setup),
    }
    answer = await probe_provider(resolved, setup.timeout_s)
    return _judged(resolved, answer, details, setup)


def _scripted(setup: DoctorSetup) -> Check:
    assert setup.script is not None
    try:
        script = load_script(setup.script)
    except ScriptError as exc:
        return _problem(
            f"the script cannot be played: {exc}",
            f"fix {setup.script} (its format: docs/scripted-model.md); acp-agent "
            "refuses to start with it",
        )
    if setup.model is not None and setup.model != script.model_id:
        return _problem(
            f"--model {setup.model} is not the script's model: {setup.script} plays "
            f"{script.model_id}",
            f"ask for {script.model_id} (scripted/<file name without .json>)",
        )
    return Check(
        NAME,
        Status.OK,
        f"{script.model_id}: plays {setup.script} (no provider needed)",
        details={"chosen by": setup.script_source or "--script"},
        gates_prompt=True,
    )


def _default_choice(config: ModelsConfig, setup: DoctorSetup) -> tuple[str | None, str | None]:
    """What `resolve_model` picks with nothing asked for, and the setting that picked it."""
    if setup.env.get(MODEL_ENV):
        return setup.env[MODEL_ENV], MODEL_ENV
    if config.default_model:
        return config.default_model, f"default_model in {config.source}"
    try:
        model_id = resolve_model(config, setup.env).model_id
    except ProviderNotConfigured:
        return None, None
    # With nothing named, a model comes only from a provider whose key is set.
    variable = config.providers[model_id.partition("/")[0]].api_key_env
    return model_id, f"{variable} is set"


def _url_source(resolved: ResolvedModel, config: ModelsConfig, setup: DoctorSetup) -> str:
    provider = resolved.provider
    builtin = builtin_providers(setup.env).get(provider.name)
    if builtin is not None and builtin.base_url == provider.base_url:
        variable = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}.get(
            provider.name
        )
        if variable is not None and setup.env.get(variable):
            return variable
        return "the built-in default"
    return f"base_url of [providers.{provider.name}] in {config.source}"


def _key_state(resolved: ResolvedModel, setup: DoctorSetup) -> str:
    variable = resolved.provider.api_key_env
    if variable is None:
        return "none (the provider has no api_key_env)"
    if resolved.api_key is not None:
        return f"set (from {variable})"
    return f"not set ({variable} is empty; sent without a key)"


def _judged(
    resolved: ResolvedModel,
    answer: ProviderAnswer,
    details: dict[str, DetailValue],
    setup: DoctorSetup,
) -> Check:
    model_id = resolved.model_id
    details["asked"] = answer.url
    if answer.status is not None:
        details["answer"] = f"HTTP {answer.status} in {answer.elapsed_ms} ms"
    outcome = answer.outcome
    if outcome is ProbeOutcome.LISTED:
        also = f" (as {answer.resolved})" if answer.resolved else ""
        return _ok(f"{model_id}: the provider answered and knows the model{also}", details)
    if outcome is ProbeOutcome.CANNOT_LIST:
        why = f" ({answer.detail})" if answer.detail else ""
        return Check(
            NAME,
            Status.WARNING,
            f"{model_id}: the provider answered but cannot list models (HTTP "
            f"{answer.status}){why}; the model was not checked",
            details=details,
            gates_prompt=True,
        )
    if outcome is ProbeOutcome.RATE_LIMITED:
        return Check(
            NAME,
            Status.WARNING,
            f"{model_id}: the provider is rate limiting right now (HTTP 429); the key works",
            details=details,
            gates_prompt=True,
        )
    if outcome is ProbeOutcome.NOT_LISTED:
        shown = ", ".join(answer.listed[:_SHOWN_MODELS]) or "none"
        more = len(answer.listed) - _SHOWN_MODELS
        details["listed"] = shown + (f" and {more} more" if more > 0 else "")
        return _problem(
            f"unknown model: {resolved.provider.name} does not list {resolved.model!r}",
            f"name one it lists ({shown}) in {_choice_setting(str(details['chosen by']))}",
            details,
        )
    if outcome is ProbeOutcome.REFUSED_KEY:
        return _problem(
            f"refused key: {resolved.provider.name} answered HTTP {answer.status}"
            + (f" ({answer.detail})" if answer.detail else ""),
            _key_fix(resolved),
            details,
        )
    if outcome in (ProbeOutcome.UNREACHABLE, ProbeOutcome.TIMED_OUT):
        what = (
            f"no answer within {setup.timeout_s:g} s"
            if outcome is ProbeOutcome.TIMED_OUT
            else f"cannot connect ({answer.detail})"
        )
        return _problem(
            f"unreachable: {answer.url}: {what}",
            f"check that the server runs and the base URL is right ({details['base URL']})",
            details,
        )
    if outcome is ProbeOutcome.BAD_URL:
        return _problem(
            f"the base URL is not a usable http(s) URL: {answer.url} ({answer.detail})",
            f"fix it ({details['base URL']})",
            details,
        )
    status = f"HTTP {answer.status}" if answer.status is not None else "no answer"
    return _problem(
        f"{resolved.provider.name} failed: {status}"
        + (f" ({answer.detail})" if answer.detail else ""),
        "try again later; if it persists, check the provider's status and the base URL",
        details,
    )


def _choice_setting(source: str) -> str:
    """Where to name another model: the setting that chose this one, if one did."""
    if source in ("--model", MODEL_ENV) or source.startswith("default_model"):
        return source
    return f"{MODEL_ENV} or default_model"


def _key_fix(resolved: ResolvedModel) -> str:
    provider = resolved.provider
    if provider.api_key_env is None:
        return f"it wants a key: set api_key_env in [providers.{provider.name}] of config.toml"
    if resolved.api_key is None:
        return f"set {provider.api_key_env} to an API key for {provider.name}"
    return f"check {provider.api_key_env}: it must hold a valid key for {provider.name}"


def _ok(summary: str, details: dict[str, DetailValue]) -> Check:
    return Check(NAME, Status.OK, summary, details=details, gates_prompt=True)


def _problem(summary: str, fix: str, details: dict[str, DetailValue] | None = None) -> Check:
    return Check(NAME, Status.PROBLEM, summary, fix, details or {}, gates_prompt=True)
