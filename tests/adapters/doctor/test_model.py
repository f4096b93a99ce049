"""`acp-agent doctor` on the model: a real subprocess against the fake provider over HTTP.

Each test runs the command with a home of its own and the model configured as a
person would (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `ACP_AGENT_MODEL`, or the
Anthropic variables), checks the human screen and the `--json` report, the exit
status, what the provider was asked, and that the key is never printed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.doctor.support import KEY, row, run_doctor
from tests.support import agent_env, openai_env
from tests.support.fake_provider import (
    FakeProviderServer,
    anthropic_model,
    anthropic_model_list,
    closed_port,
    json_error,
    openai_model_list,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def never_shows_the_key(*outputs: str) -> None:
    for output in outputs:
        assert KEY not in output
        assert KEY[:12] not in output  # not even a prefix of it


def test_a_provider_that_answers_and_lists_the_model_passes(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    server.serve_get("/v1/models", openai_model_list("gpt-other", "gpt-fake"))
    env = openai_env(server.base_url, api_key=KEY)

    screen = run_doctor(tmp_path / "home", env=env)
    report = run_doctor(tmp_path / "home", "--json", env=env)

    assert screen.returncode == 0, screen.stdout
    assert row(screen.stdout, "model").split(None, 2) == [
        "ok",
        "model",
        "openai/gpt-fake: the provider answered and knows the model",
    ]
    assert "key: set (from OPENAI_API_KEY)" in screen.stdout
    assert f"base URL: {server.base_url}/v1 (from OPENAI_BASE_URL)" in screen.stdout
    assert screen.stdout.endswith("\nA prompt would work; worth a look: 1 warning.\n")
    model = report.check("model")
    assert (report.returncode, report.json()["ok"], model["status"]) == (0, True, "ok")
    assert model["details"]["chosen by"] == "ACP_AGENT_MODEL"
    # One cheap GET per run, with the key as the provider takes it; no tokens spent.
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/models")] * 2
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    never_shows_the_key(screen.stdout, screen.stderr, report.stdout, report.stderr)


def test_a_refused_key_is_named_as_such_and_never_shown(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    # Providers quote the key they refused; doctor must not pass it on.
    refusal = {
        "error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}
    }
    server.serve_get("/v1/models", json_error(401, refusal))
    env = openai_env(server.base_url, api_key=KEY)

    screen = run_doctor(tmp_path / "home", env=env)
    report = run_doctor(tmp_path / "home", "--json", env=env)

    assert screen.returncode == 1
    assert row(screen.stdout, "model").split(None, 2) == [
        "problem",
        "model",
        "refused key: openai answered HTTP 401 (Incorrect API key provided: [redacted])",
    ]
    assert "fix: check OPENAI_API_KEY: it must hold a valid key for openai" in screen.stdout
    assert screen.stdout.endswith(
        "A prompt would not work: fix the problems above (1 problem, 1 warning).\n"
    )
    model = report.check("model")
    assert (report.returncode, report.json()["ok"], model["status"]) == (1, False, "problem")
    assert model["summary"].startswith("refused key:")
    assert model["details"]["key"] == "set (from OPENAI_API_KEY)"
    never_shows_the_key(screen.stdout, screen.stderr, report.stdout, report.stderr)


def test_an_unreachable_provider_names_the_url_without_its_credentials(tmp_path: Path) -> None:
    port = closed_port()
    env = openai_env(f"http://proxyuser:proxy-pass-42@127.0.0.1:{port}", api_key=KEY)

    screen = run_doctor(tmp_path / "home", "--timeout", "3", env=env)
    report = run_doctor(tmp_path / "home", "--json", "--timeout", "3", env=env)

    assert screen.returncode == 1
    line = row(screen.stdout, "model")
    assert line.startswith("problem")
    assert f"unreachable: http://***@127.0.0.1:{port}/v1/models: cannot connect" in line
    assert "fix: check that the server runs and the base URL is right" in screen.stdout
    assert (report.returncode, report.check("model")["status"]) == (1, "problem")
    for output in (screen.stdout, screen.stderr, report.stdout, report.stderr):
        assert "proxy-pass-42" not in output
        assert "proxyuser" not in output
    never_shows_the_key(screen.stdout, report.stdout)


def test_a_model_the_provider_does_not_list_is_an_unknown_model(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    server.serve_get("/v1/models", openai_model_list("llama3", "qwen3:latest"))
    env = openai_env(server.base_url, model="gpt-missing", api_key=KEY)

    screen = run_doctor(tmp_path / "home", env=env)
    report = run_doctor(tmp_path / "home", "--json", env=env)
    # Ollama lists `qwen3:latest` for `qwen3`: that one is known.
    known = run_doctor(tmp_path / "home", "--json", "--model", "openai/qwen3", env=env)

    assert screen.returncode == 1
    assert row(screen.stdout, "model").split(None, 2) == [
        "problem",
        "model",
        "unknown model: openai does not list 'gpt-missing'",
    ]
    assert "fix: name one it lists (llama3, qwen3:latest) in ACP_AGENT_MODEL" in screen.stdout
    assert (report.returncode, report.check("model")["details"]["listed"]) == (
        1,
        "llama3, qwen3:latest",
    )
    assert known.returncode == 0
    assert known.check("model")["summary"] == (
        "openai/qwen3: the provider answered and knows the model (as qwen3:latest)"
    )
    assert known.check("model")["details"]["chosen by"] == "--model"


def test_a_server_that_cannot_list_models_is_a_warning_not_a_failure(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    env = openai_env(server.base_url, api_key=KEY)  # no GET route: a chat-only server, 501

    report = run_doctor(tmp_path / "home", "--json", env=env)

    model = report.check("model")
    assert (report.returncode, model["status"]) == (0, "warning")
    assert "cannot list models (HTTP 501)" in model["summary"]
    assert "the model was not checked" in model["summary"]


def test_no_model_configured_says_which_variable_or_file_to_set(tmp_path: Path) -> None:
    screen = run_doctor(tmp_path / "home", env=agent_env())
    report = run_doctor(tmp_path / "home", "--json", env=agent_env())

    assert screen.returncode == 1
    assert row(screen.stdout, "model").split(None, 2) == ["problem", "model", "no model configured"]
    fix = report.check("model")["fix"]
    for needed in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ACP_AGENT_MODEL", "default_model"):
        assert needed in fix
    assert str(tmp_path / "home" / "config" / "config.toml") in fix


def test_anthropic_is_asked_for_the_model_with_its_headers_and_an_alias_resolves(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    server.serve_get("/v1/models/claude-sonnet-4-5", anthropic_model("claude-sonnet-4-5-20250929"))
    env = agent_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY=KEY)

    report = run_doctor(tmp_path / "home", "--json", env=env)

    model = report.check("model")
    assert (report.returncode, model["status"]) == (0, "ok")
    assert model["summary"] == (
        "anthropic/claude-sonnet-4-5: the provider answered and knows the model "
        "(as claude-sonnet-4-5-20250929)"
    )
    assert model["details"]["chosen by"] == "ANTHROPIC_API_KEY is set"
    [asked] = server.requests
    assert (asked.method, asked.path) == ("GET", "/v1/models/claude-sonnet-4-5")
    assert (asked.headers["x-api-key"], asked.headers["anthropic-version"]) == (KEY, "2023-06-01")
    never_shows_the_key(report.stdout, report.stderr)


def test_an_anthropic_model_it_does_not_have_is_unknown_after_checking_the_list(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    # No route for the model itself (404, as Anthropic answers); the list answers.
    server.serve_get("/v1/models", anthropic_model_list("claude-opus-4-1", "claude-haiku-4-5"))
    env = agent_env(
        ANTHROPIC_BASE_URL=server.base_url,
        ANTHROPIC_API_KEY=KEY,
        ACP_AGENT_MODEL="anthropic/claude-nope",
    )

    report = run_doctor(tmp_path / "home", "--json", env=env)

    model = report.check("model")
    assert (report.returncode, model["status"]) == (1, "problem")
    assert model["summary"] == "unknown model: anthropic does not list 'claude-nope'"
    assert model["details"]["listed"] == "claude-opus-4-1, claude-haiku-4-5"
    assert [r.path for r in server.requests] == [
        "/v1/models/claude-nope",
        "/v1/models?limit=1000",
    ]


def test_a_script_is_the_model_and_a_broken_one_is_a_problem(tmp_path: Path) -> None:
    good = tmp_path / "hello.json"
    good.write_text('{"replies": [[{"text": "Hello."}]]}')
    broken = tmp_path / "broken.json"
    broken.write_text('{"replies": []}')

    played = run_doctor(tmp_path / "home", "--json", env=agent_env(ACP_AGENT_SCRIPT=str(good)))
    refused = run_doctor(tmp_path / "home", "--json", "--script", str(broken), env=agent_env())

    assert (played.returncode, played.check("model")["summary"]) == (
        0,
        f"scripted/hello: plays {good} (no provider needed)",
    )
    assert played.check("model")["details"] == {"chosen by": "ACP_AGENT_SCRIPT"}
    model = refused.check("model")
    assert (refused.returncode, model["status"]) == (1, "problem")
    assert model["summary"].startswith(f"the script cannot be played: {broken}")
