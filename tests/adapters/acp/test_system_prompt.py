"""The client's system prompt (`systemPrompt`) end to end: the stdio agent, the fake provider.

`append` adds the client's text to the agent's instructions, `override` puts it
in their place; either way the guide (how to read the input) stays in every
request, and the system prompt and the history already sent stay byte-identical
from one request to the next. The text is kept with the session: a load that
sends none keeps it, one that sends another replaces it; a fork keeps its
source's unless it sends its own; a branch's requests carry it. What cannot be
applied is -32602 and creates nothing. The provider's request log says what
the model was sent. With `--unstable`: the vendored schema marks `systemPrompt`
(and `session/fork`) unstable, and every line is checked against it.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from protocol.errors import InvalidParams
from tests.adapters.acp.session_support import openai_text
from tests.support import EditorClient, line_of_request, openai_env, running_agent
from tests.support.fake_provider import FakeProviderServer, openai_tool_calls

pytestmark = pytest.mark.e2e

ROLE = "You are acp-agent, a coding agent."
#: The guide's heading every request must keep, whatever the client sends.
GUIDE = "## How to read your input"


def system_prompt(mode: str, *texts: str) -> dict[str, Any]:
    return {"mode": mode, "content": [{"type": "text", "text": text} for text in texts]}


async def new_session(client: EditorClient, cwd: Path, **extra: Any) -> dict[str, Any]:
    return await client.request_raw(
        methods.SESSION_NEW, {"cwd": str(cwd), "mcpServers": [], **extra}
    )


def system_of(body: dict[str, Any]) -> str:
    [first] = [m for m in body["messages"][:1] if m["role"] == "system"]
    return str(first["content"])


async def test_append_and_override_keep_the_guide_and_a_stable_prefix_across_requests(
    tmp_path: Path,
):
    with FakeProviderServer(route=line_of_request) as server:
        server.add(
            openai_tool_calls(("m1", "branch", {"task": "Say hi", "title": "hi"})),
            openai_tool_calls(("m2", "branch_wait", {"all": True, "timeout_s": 20})),
            openai_text("Bonjour."),
            openai_text("Encore."),
            openai_text("Bob here."),
            queue="main",
        )
        server.add(openai_text("Hi."), queue="branch")
        client = EditorClient(unstable=True)
        async with running_agent(
            tmp_path / "home", env=openai_env(server.base_url), client=client, unstable=True
        ):
            advertised = client.messages[0]["result"]["agentCapabilities"]["sessionCapabilities"]
            appended = await new_session(
                client, tmp_path, systemPrompt=system_prompt("append", "Answer in French.")
            )
            french = appended["result"]["sessionId"]
            await client.prompt(french, "Greet me.")
            await client.prompt(french, "Again.")
            overridden = await new_session(
                client,
                tmp_path,
                systemPrompt=system_prompt("override", "You are Bob.", "Be brief."),
            )
            await client.prompt(overridden["result"]["sessionId"], "Who are you?")
        requests = [(line_of_request(r.body), r.json()) for r in server.requests]

    assert advertised["systemPrompt"] == {"mode": {"override": {}}}
    mains = [body for line, body in requests if line == "main"]
    [branch] = [body for line, body in requests if line == "branch"]
    french_requests, bob = mains[:4], mains[4]
    # append: the agent's role, then the client's text, then the guide; the same guide in
    # every request of the session, its branch's included.
    system = system_of(french_requests[0])
    assert system.index(ROLE) < system.index("Answer in French.") < system.index(GUIDE)
    assert {system_of(body) for body in [*french_requests, branch]} == {system}
    # Each request repeats the one before it, byte for byte, and adds to its end.
    for before, after in itertools.pairwise(french_requests):
        sent = before["messages"]
        assert json.dumps(after["messages"][: len(sent)]) == json.dumps(sent)
    # override: the client's text in place of the agent's role; the guide stays.
    assert system_of(bob).startswith("You are Bob.\n\nBe brief.\n\n## How to read your input")
    assert ROLE not in system_of(bob)
    assert system_of(bob).endswith(system.partition("Answer in French.")[2])


async def test_a_load_keeps_or_replaces_the_kept_prompt_and_a_fork_keeps_or_takes_its_own(
    tmp_path: Path,
):
    with FakeProviderServer() as server:
        server.add(*(openai_text(f"Reply {n}.") for n in range(5)))
        client = EditorClient(unstable=True)
        home = tmp_path / "home"
        async with running_agent(
            home, env=openai_env(server.base_url), client=client, unstable=True
        ):
            created = await new_session(
                client, tmp_path, systemPrompt=system_prompt("append", "Answer in French.")
            )
            session_id = created["result"]["sessionId"]
            await client.prompt(session_id, "One.")  # request 0
            kept_fork = await client.request(
                methods.SESSION_FORK,
                types.ForkSessionRequest(session_id=session_id, cwd=str(tmp_path)),
            )
            await client.prompt(str(kept_fork.session_id), "In the fork.")  # request 1
            own_fork = await client.request_raw(
                methods.SESSION_FORK,
                {
                    "sessionId": session_id,
                    "cwd": str(tmp_path),
                    "systemPrompt": system_prompt("override", "You are Carol."),
                },
            )
            await client.prompt(own_fork["result"]["sessionId"], "In the other fork.")  # 2
        # Another agent process: the prompt was kept with the session.
        client = EditorClient(unstable=True)
        async with running_agent(
            home, env=openai_env(server.base_url), client=client, unstable=True
        ):
            await client.load(session_id, tmp_path)
            await client.prompt(session_id, "Two.")  # request 3: kept
            await client.request(
                methods.SESSION_LOAD,
                types.LoadSessionRequest(
                    session_id=session_id,
                    cwd=str(tmp_path),
                    mcp_servers=[],
                    system_prompt=types.SystemPrompt(
                        mode=types.SystemPromptMode.APPEND,
                        content=[types.TextContent(text="Answer in German.")],
                    ),
                ),
            )
            await client.prompt(session_id, "Three.")  # request 4: replaced
        systems = [system_of(r.json()) for r in server.requests]

    french, kept, carol, reloaded, german = systems
    assert "Answer in French." in french
    assert kept == french
    assert carol.startswith("You are Carol.")
    assert "French" not in carol
    assert GUIDE in carol
    assert reloaded == french
    assert "Answer in German." in german
    assert "French" not in german
    assert ROLE in german


async def test_a_prompt_the_agent_cannot_apply_is_invalid_params_and_creates_nothing(
    tmp_path: Path,
):
    client = EditorClient(unstable=True)
    async with running_agent(tmp_path / "home", client=client, unstable=True):
        custom = await new_session(client, tmp_path, systemPrompt=system_prompt("_replace", "x"))
        image = await new_session(
            client,
            tmp_path,
            systemPrompt={
                "mode": "append",
                "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}],
            },
        )
        empty = await new_session(client, tmp_path, systemPrompt={"mode": "append", "content": []})
        listed = await client.list_sessions()

    for answer in (custom, image, empty):
        assert answer["error"]["code"] == InvalidParams.CODE
    assert custom["error"]["message"] == (
        "Invalid params: systemPrompt.mode: '_replace' is not supported (it takes append, override)"
    )
    assert image["error"]["message"] == (
        "Invalid params: systemPrompt.content[0]: only text blocks are supported"
    )
    assert listed.sessions == []


async def test_without_unstable_it_is_not_advertised_yet_applied_in_either_form_sent(
    tmp_path: Path,
):
    with FakeProviderServer() as server:
        server.add(openai_text("Hola."), openai_text("Bob."), openai_text("Eve."))
        async with running_agent(tmp_path / "home", env=openai_env(server.base_url)) as client:
            advertised = client.messages[0]["result"]["agentCapabilities"]["sessionCapabilities"]
            # acpx's --append-system-prompt and --system-prompt, as claude-agent-acp takes them.
            appended = await new_session(
                client, tmp_path, _meta={"systemPrompt": {"append": "Answer in Spanish."}}
            )
            await client.prompt(appended["result"]["sessionId"], "Hi")
            replaced = await new_session(client, tmp_path, _meta={"systemPrompt": "You are Bob."})
            await client.prompt(replaced["result"]["sessionId"], "Who?")
            acp = await new_session(
                client, tmp_path, systemPrompt=system_prompt("override", "You are Eve.")
            )
            await client.prompt(acp["result"]["sessionId"], "Who?")
        spanish, bob, eve = (system_of(r.json()) for r in server.requests)

    assert "systemPrompt" not in advertised
    assert spanish.index(ROLE) < spanish.index("Answer in Spanish.") < spanish.index(GUIDE)
    assert bob.startswith("You are Bob.\n\n" + GUIDE)
    assert eve.startswith("You are Eve.\n\n" + GUIDE)
