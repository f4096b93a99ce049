"""`session/new` answered before its session is assembled, by the store's first write alone.

A process killed right after the answer leaves a session that loads as it was
answered (its mode, its model, the client's instructions); a session whose assembly
fails tells each of its prompts why, at once, and the agent goes on serving.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from protocol import methods
from tests.adapters.acp.session_support import openai_text
from tests.support import EditorClient, openai_env, running_agent
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.e2e

#: Installed as `sitecustomize` in the agent process: the runtime's capabilities cannot
#: be imported (a broken install), so every session's assembly fails after its answer.
BROKEN_CAPABILITIES = """
import importlib.abc
import sys


class BrokenCapabilities(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "acp_agent.capabilities._assembly":
            raise ImportError("a broken install: the capabilities cannot be imported")
        return None


sys.meta_path.insert(0, BrokenCapabilities())
"""


async def new_session(client: EditorClient, cwd: Path, **extra: Any) -> dict[str, Any]:
    return await client.request_raw(
        methods.SESSION_NEW, {"cwd": str(cwd), "mcpServers": [], **extra}
    )


async def test_a_session_killed_right_after_its_answer_loads_as_it_was_answered(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    french = {"mode": "append", "content": [{"type": "text", "text": "Answer in French."}]}
    with FakeProviderServer() as server:
        server.add(openai_text("Bonjour."))
        env = {**openai_env(server.base_url), "ACP_AGENT_MODE": "plan"}
        async with running_agent(home, env=env) as client:
            answered = (await new_session(client, tmp_path, systemPrompt=french))["result"]
            # Killed as soon as the answer is read: the session's assembly, which imports
            # the runtime behind the answer, has not run yet.
            assert client.process is not None
            client.process.send_signal(signal.SIGKILL)
        session_id = answered["sessionId"]
        # Another agent process, its mode and model the defaults again.
        async with running_agent(home, env=openai_env(server.base_url)) as client:
            loaded = await client.load(session_id, tmp_path)
            reply = await client.prompt(session_id, "Hello.")
        system = server.requests[0].json()["messages"][0]

    assert answered["modes"]["currentModeId"] == "plan"
    assert loaded.modes is not None
    assert loaded.modes.current_mode_id == "plan"
    options = {option.id: option.current_value for option in loaded.config_options or []}
    assert options["model"] == "openai/gpt-fake"
    assert reply.stop_reason.value == "end_turn"
    assert system["role"] == "system"
    assert "Answer in French." in system["content"]


async def test_a_session_whose_assembly_fails_answers_each_prompt_with_why(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BROKEN_CAPABILITIES)
    env = {**openai_env("http://127.0.0.1:9"), "PYTHONPATH": str(site), "ACP_AGENT_WARMUP": "0"}
    async with running_agent(tmp_path / "home", env=env) as client:
        answered = await new_session(client, tmp_path)
        session_id = answered["result"]["sessionId"]
        prompts = [
            await client.request_raw(
                methods.SESSION_PROMPT,
                {"sessionId": session_id, "prompt": [{"type": "text", "text": "Go"}]},
                timeout_s=10,
            )
            for _ in range(2)
        ]
        again = await new_session(client, tmp_path)

    for prompt in prompts:
        assert prompt["error"]["code"] == -32603
        assert prompt["error"]["message"] == (
            f"Internal error: session {session_id} could not be opened: "
            "a broken install: the capabilities cannot be imported"
        )
    # The agent goes on serving: another session is answered too (and would fail alike).
    assert "sessionId" in again["result"]
