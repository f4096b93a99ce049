"""Code intelligence through the real agent: an edit's new problems reach the model and
the person, from the real ruff server, and pygls loads only when a server is needed.

The model is the fake OpenAI provider over HTTP, so the test reads the very request
that carries the tool result back to the model.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_agent.lsp import BASEDPYRIGHT, default_servers
from protocol import types
from tests.adapters.acp.support import calls_of, text_of_updates
from tests.support import agent_env, openai_env, running_agent, write_script
from tests.support.fake_provider import (
    Exchange,
    FakeProviderServer,
    openai_chunk,
    openai_stream,
    openai_tool_calls,
)
from tests.support.processes import command_lines

pytestmark = pytest.mark.e2e


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def text_reply(text: str) -> Exchange:
    return Exchange(
        chunks=[openai_stream(openai_chunk({"content": text}), openai_chunk({}, "stop"))]
    )


def tool_message(request: Any, call_id: str) -> str:
    messages = request.json()["messages"]
    [message] = [m for m in messages if m["role"] == "tool" and m["tool_call_id"] == call_id]
    return str(message["content"])


def shown_text(update: types.ToolCallProgress) -> str:
    return "\n".join(
        part.content.text
        for part in update.content or []
        if isinstance(part, types.Content) and isinstance(part.content, types.TextContent)
    )


async def modules(client: Any) -> list[str]:
    return list((await client.request_raw("_acp-agent/debug/modules", {}))["result"]["modules"])


async def test_a_write_with_an_undefined_name_tells_the_model_and_the_person(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("old\n")
    server.add(
        openai_tool_calls(("call_md", "write", {"path": "notes.md", "content": "new\n"})),
        text_reply("Noted."),
        openai_tool_calls(
            ("call_py", "write", {"path": "app.py", "content": "def main():\n    return valeu\n"})
        ),
        text_reply("Oops."),
    )
    env = {
        **openai_env(server.base_url),
        "ACP_AGENT_LSP": "1",
        "ACP_AGENT_LSP_SETTLE_S": "10",  # a slow machine's first start; ruff answers in ms
        "ACP_AGENT_DEBUG": "1",
        "ACP_AGENT_WARMUP": "0",
    }
    async with running_agent(tmp_path / "home", env=env) as client:
        session_id = await client.new_session(workspace)
        client.answers = ["allow_always"]
        await client.prompt(session_id, "Write the notes.")
        after_markdown = await modules(client)
        await client.prompt(session_id, "Write the app.")
        after_python = await modules(client)
        updates = client.updates_for(session_id)

    offered = {tool["function"]["name"] for tool in server.requests[0].json()["tools"]}
    assert "diagnostics" in offered
    if BASEDPYRIGHT in default_servers():
        assert {"definition", "references", "hover", "symbols"} <= offered
    # Only a file a server handles starts one: pygls and lsprotocol load then, not before.
    assert not [m for m in after_markdown if m.split(".")[0] in ("pygls", "lsprotocol")]
    assert "pygls" in after_python
    expected = "app.py:2:12: error [ruff F821] Undefined name `valeu`"
    carried = tool_message(server.requests[3], "call_py")
    assert expected in carried
    assert "ruff" not in tool_message(server.requests[1], "call_md")
    final = calls_of(updates, "call_py")[-1]
    assert final.status == types.ToolCallStatus.COMPLETED
    assert expected in shown_text(final)


CLEAN = "def total(items: list[int]) -> int:\n    return sum(items)\n"
#: ruff: F821 (`itemz`); basedpyright: the return type, and `itemz` in its own words.
BROKEN = "def total(items: list[int]) -> str:\n    return sum(itemz)\n"
#: basedpyright alone: a wrong return type (line 6); both ruffs: `missing` (line 9).
WRONG_RETURN = CLEAN + '\n\ndef name() -> int:\n    return "total"\n\n\nprint(missing)\n'


@pytest.mark.skipif(BASEDPYRIGHT not in default_servers(), reason="needs the `types` extra")
async def test_a_cold_first_edit_reports_its_problems_or_says_they_may_be_missing(
    tmp_path: Path,
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "app.py").write_text(CLEAN)
    # A second server that reports exactly what ruff does: its problems are ruff's.
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text(
        f"[lsp.servers.ruff-again]\ncommand = [{sys.executable!r}, '-m', 'ruff', 'server']\n"
        "extensions = ['.py']\nlanguage = 'python'\n"
    )

    def write(call_id: str, content: str) -> list[dict[str, Any]]:
        return [
            {
                "tool_call": {
                    "name": "write",
                    "arguments": {"path": "app.py", "content": content},
                    "id": call_id,
                }
            }
        ]

    script = write_script(
        tmp_path / "script.json",
        [{"tool_call": {"name": "read", "arguments": {"path": "app.py"}, "id": "read"}}],
        write("cold", BROKEN),
        [{"text": "Broke it."}],
        write("warm", WRONG_RETURN),
        [{"text": "Again."}],
    )
    # The default bound (no ACP_AGENT_LSP_SETTLE_S): the one a person gets.
    env = agent_env(ACP_AGENT_LSP="1", ACP_AGENT_WARMUP="0")
    async with running_agent(home, script=script, env=env) as client:
        session_id = await client.new_session(workspace)
        client.answers = ["allow_always"]
        await client.prompt(session_id, "Break it.")
        await client.prompt(session_id, "Again.")
        updates = client.updates_for(session_id)

    cold = shown_text(calls_of(updates, "cold")[-1])
    expected = {
        "ruff": "app.py:2:16: error [ruff F821",
        "ruff-again": "ruff-again F821] Undefined name `itemz`",
        "basedpyright": "app.py:2:12: error [basedpyright reportReturnType]",
    }
    for server, problem in expected.items():
        missing = f"{server} has not finished checking: problems may be missing;"
        assert (problem in cold) != (missing in cold), cold  # one or the other, never neither
    warm = shown_text(calls_of(updates, "warm")[-1]).splitlines()
    assert "app.py:6:12: error [basedpyright reportReturnType] Type" in "\n".join(warm)
    undefined = [line for line in warm if "Undefined name `missing`" in line]
    assert undefined == ["app.py:9:7: error [ruff F821, ruff-again F821] Undefined name `missing`"]
    assert not [line for line in warm if "finished checking" in line or "not running" in line]


async def test_code_intelligence_can_be_switched_off(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    server.add(
        openai_tool_calls(("call_py", "write", {"path": "app.py", "content": "print(valeu)\n"})),
        text_reply("Done."),
    )
    env = {**openai_env(server.base_url), "ACP_AGENT_LSP": "0", "ACP_AGENT_DEBUG": "1"}
    async with running_agent(tmp_path / "home", env=env) as client:
        session_id = await client.new_session(tmp_path)
        client.answers = ["allow_once"]
        await client.prompt(session_id, "Write the app.")
        loaded = await modules(client)

    assert "ruff" not in tool_message(server.requests[1], "call_py")
    assert "acp_agent.lsp._connection" not in loaded
    offered = {tool["function"]["name"] for tool in server.requests[0].json()["tools"]}
    assert "diagnostics" not in offered


async def test_slash_lsp_shows_the_servers(tmp_path: Path) -> None:
    script = write_script(tmp_path / "script.json", [{"text": "unused"}])
    async with running_agent(
        tmp_path / "home", script=script, env=agent_env(ACP_AGENT_LSP="1")
    ) as client:
        session_id = await client.new_session(tmp_path)
        listed = await client.wait_for_update(
            session_id, lambda u: isinstance(u, types.AvailableCommandsUpdate)
        )
        assert isinstance(listed, types.AvailableCommandsUpdate)
        commands = [command.name for command in listed.available_commands]
        await client.prompt(session_id, "/lsp")
        shown = text_of_updates(client.updates_for(session_id))

    assert "lsp" in commands
    assert "Language servers: ruff" in shown
    assert "None is running yet" in shown


async def test_a_workspace_cannot_configure_a_language_server(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".acp-agent").mkdir(parents=True)
    marker = tmp_path / "ran"
    (workspace / ".acp-agent" / "config.toml").write_text(
        f"""
[lsp.servers.evil]
command = ["{sys.executable}", "-c", "open({str(marker)!r}, 'w')"]
extensions = [".py"]
"""
    )
    server.add(
        openai_tool_calls(("call_py", "write", {"path": "app.py", "content": "x = 1\n"})),
        text_reply("Done."),
    )
    env = {**openai_env(server.base_url), "ACP_AGENT_LSP": "1"}
    async with running_agent(tmp_path / "home", env=env) as client:
        session_id = await client.new_session(workspace)
        client.answers = ["allow_once"]
        await client.prompt(session_id, "Write the app.")

    assert (workspace / "app.py").read_text() == "x = 1\n"
    assert not marker.exists()


def servers_in(workspace: Path) -> list[int]:
    """Processes (Linux /proc) running a language server with `workspace` as their cwd."""
    found = []
    for pid, argv in command_lines().items():
        command = " ".join(argv)
        if "ruff" not in command and "basedpyright" not in command:
            continue
        try:
            cwd = Path(f"/proc/{pid}/cwd").resolve()
        except OSError:
            continue
        if cwd == workspace.resolve():
            found.append(pid)
    return found


@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="reads processes from /proc")
async def test_the_servers_end_when_the_agent_does(
    tmp_path: Path, server: FakeProviderServer
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server.add(
        openai_tool_calls(("call_py", "write", {"path": "app.py", "content": "x = 1\n"})),
        text_reply("Done."),
    )
    env = {**openai_env(server.base_url), "ACP_AGENT_LSP": "1", "ACP_AGENT_LSP_SETTLE_S": "10"}
    async with running_agent(tmp_path / "home", env=env) as client:
        session_id = await client.new_session(workspace)
        client.answers = ["allow_once"]
        await client.prompt(session_id, "Write the app.")
        running = servers_in(workspace)
    # running_agent has closed stdin and waited for the agent to exit.

    assert running
    assert servers_in(workspace) == []
