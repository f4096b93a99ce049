"""Modes and config options: the permission mode, the model, the thinking effort.

Each change is recorded (a restarted agent loads it), takes effect on the next
request or admission, and reaches the editor as `current_mode_update` and
`config_option_update` (the complete set) before the answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from protocol.errors import InvalidParams
from tests.adapters.acp.session_support import before, kinds, openai_text
from tests.support import agent_env, openai_env, running_agent, write_script
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.e2e


def options_of(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(option["id"], option["currentValue"]) for option in result["configOptions"]]


def write_call(call_id: str) -> dict[str, Any]:
    arguments = {"path": "out.txt", "content": "x"}
    return {"tool_call": {"name": "write", "arguments": arguments, "id": call_id}}


async def test_set_mode_tells_the_editor_first_is_recorded_and_plan_mode_refuses_edits(
    tmp_path: Path,
):
    script = write_script(tmp_path / "s.json", [write_call("w1")], [{"text": "Refused."}])
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(tmp_path)
        response = await client.request_raw(
            methods.SESSION_SET_MODE, {"sessionId": session_id, "modeId": "plan"}
        )
        messages = client.messages
        changes = client.session_updates_for(session_id)[1:]
        prompt = await client.prompt(session_id, "Write out.txt")
        conversation = client.updates_for(session_id)
    async with running_agent(home, script=script) as client:
        loaded = await client.load(session_id, tmp_path)

    assert response["result"] == {}
    assert before(messages, response["id"])[-2:] == [
        "update:current_mode_update",
        "update:config_option_update",
    ]
    mode, options = changes
    assert mode == types.CurrentModeUpdate(current_mode_id="plan")
    assert isinstance(options, types.ConfigOptionUpdate)
    assert [(o.id, o.current_value) for o in options.config_options] == [
        ("mode", "plan"),
        ("model", "scripted/s"),
        ("thought_level", "default"),
    ]
    # Plan mode is read-only: the write is refused without a question, the model told why.
    assert prompt.stop_reason == types.StopReason.END_TURN
    assert client.permission_requests == []
    assert not (tmp_path / "out.txt").exists()
    failed = [u for u in conversation if getattr(u, "status", None) == types.ToolCallStatus.FAILED]
    assert len(failed) == 1
    # A restarted agent loads the session in the mode it was left in.
    assert loaded.modes is not None
    assert loaded.modes.current_mode_id == "plan"
    assert loaded.config_options is not None
    assert loaded.config_options[0].current_value == "plan"  # type: ignore[union-attr]


async def test_the_mode_option_and_the_legacy_modes_stay_in_step(tmp_path: Path):
    script = write_script(tmp_path / "s.json", [{"text": "."}])
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        response = await client.set_option(session_id, "mode", "accept-edits")
        changes = client.session_updates_for(session_id)[1:]

    assert [(o.id, o.current_value) for o in response.config_options] == [
        ("mode", "accept-edits"),
        ("model", "scripted/s"),
        ("thought_level", "default"),
    ]
    # The answer carries the options; the legacy mode picker hears of the change.
    assert changes == [types.CurrentModeUpdate(current_mode_id="accept-edits")]


async def test_the_model_option_lists_usable_models_and_a_model_without_reasoning_drops_it(
    tmp_path: Path,
):
    script = write_script(tmp_path / "s.json", [{"text": "."}])
    env = agent_env(OPENAI_API_KEY="sk-test")  # makes openai/gpt-4.1 usable
    async with running_agent(tmp_path / "home", script=script, env=env) as client:
        session_id = await client.new_session(tmp_path)
        await client.set_option(session_id, "thought_level", "high")
        switched = await client.set_option(session_id, "model", "openai/gpt-4.1")
        with pytest.raises(InvalidParams) as unknown_model:
            await client.set_option(session_id, "model", "openai/gpt-2")
        with pytest.raises(InvalidParams) as unknown_option:
            await client.set_option(session_id, "thought_level", "high")
        boolean = await client.request_raw(
            methods.SESSION_SET_CONFIG_OPTION,
            {"sessionId": session_id, "configId": "mode", "type": "boolean", "value": True},
        )

    [_, model] = switched.config_options
    assert isinstance(model, types.SessionConfigOptionSelect)
    assert model.category == types.SessionConfigOptionCategory.MODEL
    assert model.current_value == "openai/gpt-4.1"
    assert [o.value for o in model.options] == ["scripted/s", "openai/gpt-4.1"]  # type: ignore[union-attr]
    assert unknown_model.value.message == (
        "Invalid params: value: model: no choice 'openai/gpt-2' "
        "(choices: scripted/s, openai/gpt-4.1)"
    )
    assert unknown_option.value.message == (
        "Invalid params: configId: no option 'thought_level' (options: mode, model)"
    )
    assert boolean["error"]["code"] == InvalidParams.CODE


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


async def test_the_thought_level_reaches_the_provider_as_a_reasoning_effort(
    tmp_path: Path, server: FakeProviderServer
):
    server.add(openai_text("Thought hard."), openai_text("Answered."))
    env = openai_env(server.base_url, model="o3-mini", api_key="sk-test")  # a reasoning model
    async with running_agent(tmp_path / "home", env=env) as client:
        session_id = await client.new_session(tmp_path)
        options = await client.set_option(session_id, "thought_level", "high")
        await client.prompt(session_id, "Think.")
        await client.set_option(session_id, "thought_level", "default")
        await client.prompt(session_id, "Again.")
        updates = client.session_updates_for(session_id)

    thought = options.config_options[2]
    assert isinstance(thought, types.SessionConfigOptionSelect)
    assert thought.category == types.SessionConfigOptionCategory.THOUGHT_LEVEL
    assert [o.value for o in thought.options] == ["default", "low", "medium", "high"]  # type: ignore[union-attr]
    high, default = (request.json() for request in server.requests)
    assert high["reasoning_effort"] == "high"
    assert "reasoning_effort" not in default
    # Options changed by the editor come back in the answers, not as updates.
    assert "config_option_update" not in kinds(updates)
