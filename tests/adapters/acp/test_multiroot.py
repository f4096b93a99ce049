"""Multi-root workspaces end to end: `additionalDirectories` on new, load, resume and fork.

The real agent over real pipes (a scripted model, or the fake provider over HTTP
when what reached the model matters), a real SQLite file in the test's home.
Each test's workspace is `app/` with a second root `lib/` beside it, and a
folder `elsewhere/` that is in no root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from protocol.errors import InvalidParams
from tests.adapters.acp.session_support import openai_text
from tests.adapters.acp.support import calls_of
from tests.support import EditorClient, agent_env, openai_env, running_agent, write_script
from tests.support.editor_client import allow_all
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.e2e


class Tree:
    """The test's folders, resolved: the cwd, a second root, a third and one in no root."""

    def __init__(self, tmp_path: Path) -> None:
        base = tmp_path.resolve()
        self.home = base / "home"
        self.app, self.lib, self.docs = base / "app", base / "lib", base / "docs"
        self.elsewhere = base / "elsewhere"
        for folder in (self.app, self.lib, self.docs, self.elsewhere):
            folder.mkdir()


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path)


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments": arguments, "id": call_id}}


async def new_session(client: EditorClient, cwd: Path, *directories: Path | str) -> str:
    response = await client.request(
        methods.SESSION_NEW,
        types.NewSessionRequest(
            cwd=str(cwd), mcp_servers=[], additional_directories=[str(d) for d in directories]
        ),
    )
    return str(response.session_id)


async def load(
    client: EditorClient, session_id: str, cwd: Path, directories: list[Path] | None
) -> None:
    await client.request(
        methods.SESSION_LOAD,
        types.LoadSessionRequest(
            session_id=session_id,
            cwd=str(cwd),
            mcp_servers=[],
            additional_directories=None if directories is None else [str(d) for d in directories],
        ),
    )


async def resume(
    client: EditorClient, session_id: str, cwd: Path, directories: list[Path] | None
) -> None:
    await client.request(
        methods.SESSION_RESUME,
        types.ResumeSessionRequest(
            session_id=session_id,
            cwd=str(cwd),
            additional_directories=None if directories is None else [str(d) for d in directories],
        ),
    )


async def listed_directories(client: EditorClient, session_id: str) -> list[str] | None:
    listed = await client.list_sessions()
    [info] = [info for info in listed.sessions if info.session_id == session_id]
    return info.additional_directories


def question_text(request: types.RequestPermissionRequest) -> str:
    return "\n".join(
        part.content.text
        for part in request.tool_call.content or []
        if isinstance(part, types.Content) and isinstance(part.content, types.TextContent)
    )


async def test_a_read_and_an_edit_in_a_second_root_run_unasked_and_outside_all_roots_is_asked(
    tree: Tree,
):
    util = tree.lib / "util.py"
    util.write_text("VALUE = 1\n")
    secret = tree.elsewhere / "secret.txt"
    secret.write_text("top secret\n")
    script = write_script(
        tree.home.parent / "script.json",
        [call("r1", "read", path=str(util))],
        [call("e1", "edit", path=str(util), old_text="VALUE = 1", new_text="VALUE = 2")],
        [call("o1", "read", path=str(secret))],
        [{"text": "Done."}],
    )
    client = EditorClient(decide=lambda request: "reject_once")
    async with running_agent(tree.home, script=script, client=client) as client:
        session_id = await new_session(client, tree.app, tree.lib)
        await client.set_option(session_id, "mode", "accept-edits")
        await client.prompt(session_id)
        updates = client.updates_for(session_id)

    assert calls_of(updates, "r1")[-1].status == types.ToolCallStatus.COMPLETED
    assert calls_of(updates, "e1")[-1].status == types.ToolCallStatus.COMPLETED
    assert util.read_text() == "VALUE = 2\n"
    # Only the read outside every root was asked about, saying so, and it was refused.
    [asked] = client.permission_requests
    assert asked.tool_call.tool_call_id == "o1"
    assert asked.meta == {"acp-agent": {"outsideRoots": True}}
    assert f"{secret} is outside the workspace" in question_text(asked)
    assert calls_of(updates, "o1")[-1].status == types.ToolCallStatus.FAILED


async def test_an_edit_in_a_second_root_is_asked_as_any_edit_and_always_is_kept_for_its_folder(
    tree: Tree,
):
    (tree.lib / "io").mkdir()
    first, second = tree.lib / "io" / "a.py", tree.lib / "io" / "b.py"
    first.write_text("A = 1\n")
    second.write_text("B = 1\n")
    script = write_script(
        tree.home.parent / "script.json",
        [call("r1", "read", path=str(first)), call("r2", "read", path=str(second))],
        [call("e1", "edit", path=str(first), old_text="A = 1", new_text="A = 2")],
        [call("e2", "edit", path=str(second), old_text="B = 1", new_text="B = 2")],
        [{"text": "Done."}],
    )
    async with running_agent(tree.home, script=script) as client:
        session_id = await new_session(client, tree.app, tree.lib)
        client.answers = ["allow_always"]
        await client.prompt(session_id)
        updates = client.updates_for(session_id)

    # Ask mode asks about the first edit (no rule allows it), not as outside the workspace.
    [asked] = client.permission_requests
    assert asked.tool_call.tool_call_id == "e1"
    assert asked.meta == {"acp-agent": {"outsideRoots": False}}
    assert "outside" not in question_text(asked)
    labels = {option.option_id: option.name for option in asked.options}
    assert labels["allow_always"] == (
        f"Always allow edits to files under {tree.lib}/io/ in this workspace"
    )
    # The rule it kept covers the folder of that root: the second edit ran unasked.
    assert calls_of(updates, "e2")[-1].status == types.ToolCallStatus.COMPLETED
    assert (first.read_text(), second.read_text()) == ("A = 2\n", "B = 2\n")


async def test_the_agents_md_of_a_second_root_and_the_roots_reach_the_model(tree: Tree):
    (tree.app / "AGENTS.md").write_text("Run the tests of the app.\n")
    (tree.lib / "AGENTS.md").write_text("Keep the public API of the library stable.\n")
    (tree.elsewhere / "AGENTS.md").write_text("Not a rule of this session.\n")
    with FakeProviderServer() as server:
        server.add(openai_text("Noted."))
        env = openai_env(server.base_url)
        async with running_agent(tree.home, env=env) as client:
            session_id = await new_session(client, tree.app, tree.lib)
            await client.prompt(session_id, "Which rules hold?")
        [request] = server.requests

    messages = request.json()["messages"]
    text = "\n".join(m["content"] for m in messages[1:] if isinstance(m.get("content"), str))
    assert (
        '<rule op="set" source="workspace/AGENTS.md" scope=".">Run the tests of the app.</rule>'
    ) in text
    assert (
        f'<rule op="set" source="root:{tree.lib}/AGENTS.md" scope="{tree.lib}">'
        "Keep the public API of the library stable.</rule>"
    ) in text
    assert f'<state source="environment/cwd">{tree.app}</state>' in text
    assert f'<state source="environment/additional_directories">{tree.lib}</state>' in text
    assert "Not a rule" not in text


async def test_the_list_reports_the_directories_a_list_sent_replaces_them_and_none_keeps_them(
    tree: Tree,
):
    note = tree.docs / "note.txt"
    note.write_text("docs\n")
    script = write_script(
        tree.home.parent / "script.json",
        [call("d1", "read", path=str(note))],
        [{"text": "Read."}],
        [call("d2", "read", path=str(note))],
        [{"text": "Read again."}],
    )
    async with running_agent(tree.home, script=script) as client:
        session_id = await new_session(client, tree.app, tree.lib, tree.app, tree.lib)
        assert await listed_directories(client, session_id) == [str(tree.lib)]

    # Another process: a resume with a list activates it and keeps it in place of the old.
    async with running_agent(tree.home, script=script) as client:
        await resume(client, session_id, tree.app, [tree.docs, tree.lib])
        assert await listed_directories(client, session_id) == [str(tree.docs), str(tree.lib)]
        await client.prompt(session_id)
        assert client.permission_requests == []  # docs/ is a root now: read unasked

    # A load without a list keeps the kept list, but activates none (as ACP says).
    client = EditorClient(decide=lambda request: "reject_once")
    async with running_agent(tree.home, script=script, client=client) as client:
        assert await listed_directories(client, session_id) == [str(tree.docs), str(tree.lib)]
        await load(client, session_id, tree.app, None)
        assert await listed_directories(client, session_id) == [str(tree.docs), str(tree.lib)]
        await client.prompt(session_id)
        [asked] = client.permission_requests
        assert asked.meta == {"acp-agent": {"outsideRoots": True}}
        # An empty list sent replaces the kept one: none any more.
        await load(client, session_id, tree.app, [])
        assert await listed_directories(client, session_id) is None


async def test_directories_that_cannot_be_roots_are_invalid_params_and_change_nothing(
    tree: Tree,
):
    script = write_script(tree.home.parent / "script.json", [{"text": "Hello."}])
    async with running_agent(tree.home, script=script) as client:
        with pytest.raises(InvalidParams) as relative:
            await new_session(client, tree.app, tree.lib, "lib")
        assert relative.value.message == (
            "Invalid params: additionalDirectories[1]: must be an absolute path"
        )
        assert (await client.list_sessions()).sessions == []
        session_id = await new_session(client, tree.app, tree.lib)
        with pytest.raises(InvalidParams) as missing:
            await resume(client, session_id, tree.app, [tree.docs, tree.app / "gone"])
        assert missing.value.message == (
            f"Invalid params: additionalDirectories[1]: {tree.app / 'gone'} does not exist"
        )
        readme = tree.docs / "README.md"
        readme.write_text("docs\n")
        with pytest.raises(InvalidParams) as a_file:
            await load(client, session_id, tree.app, [readme])
        assert a_file.value.message == (
            f"Invalid params: additionalDirectories[0]: {readme} is not a directory"
        )
        assert await listed_directories(client, session_id) == [str(tree.lib)]


async def test_a_new_session_whose_cwd_is_no_directory_is_invalid_params_and_not_stored(
    tree: Tree,
):
    # Stored, it would refuse every prompt as "read-only: its workspace is not on this
    # machine", which is for a session taken over from elsewhere.
    script = write_script(tree.home.parent / "script.json", [{"text": "Hello."}])
    readme = tree.app / "README.md"
    readme.write_text("app\n")
    async with running_agent(tree.home, script=script) as client:
        with pytest.raises(InvalidParams) as missing:
            await new_session(client, tree.app / "gone")
        with pytest.raises(InvalidParams) as a_file:
            await new_session(client, readme)
        assert (await client.list_sessions()).sessions == []

    assert missing.value.message == f"Invalid params: cwd: {tree.app / 'gone'} does not exist"
    assert a_file.value.message == f"Invalid params: cwd: {readme} is not a directory"


async def test_a_fork_keeps_the_source_directories_unless_it_sends_its_own(tree: Tree):
    script = write_script(tree.home.parent / "script.json", [{"text": "Hello."}])
    client = EditorClient(unstable=True, decide=allow_all)
    async with running_agent(tree.home, script=script, client=client, unstable=True) as client:
        source = await new_session(client, tree.app, tree.lib)
        await client.prompt(source)
        forks = []
        for directories in (None, [tree.docs]):
            response = await client.request(
                methods.SESSION_FORK,
                types.ForkSessionRequest(
                    session_id=source,
                    cwd=str(tree.app),
                    additional_directories=(
                        None if directories is None else [str(d) for d in directories]
                    ),
                ),
            )
            forks.append(str(response.session_id))
        assert await listed_directories(client, forks[0]) == [str(tree.lib)]
        assert await listed_directories(client, forks[1]) == [str(tree.docs)]
        assert await listed_directories(client, source) == [str(tree.lib)]


async def test_the_language_servers_take_the_second_root(tree: Tree):
    module = tree.lib / "util.py"
    script = write_script(
        tree.home.parent / "script.json",
        [call("w1", "write", path=str(module), content="def main():\n    return valeu\n")],
        [{"text": "Oops."}],
    )
    env = {
        **agent_env(),
        "ACP_AGENT_LSP": "1",
        "ACP_AGENT_LSP_SETTLE_S": "10",  # a slow machine's first start; ruff answers in ms
    }
    client = EditorClient(decide=lambda request: "reject_once")
    async with running_agent(tree.home, script=script, env=env, client=client) as client:
        session_id = await new_session(client, tree.app, tree.lib)
        await client.set_option(session_id, "mode", "accept-edits")
        await client.prompt(session_id)
        updates = client.updates_for(session_id)

    final = calls_of(updates, "w1")[-1]
    assert final.status == types.ToolCallStatus.COMPLETED
    shown = "\n".join(
        part.content.text
        for part in final.content or []
        if isinstance(part, types.Content) and isinstance(part.content, types.TextContent)
    )
    # Started for the root that holds the file, which names it relative to that root.
    assert "util.py:2:12: error [ruff F821] Undefined name `valeu`" in shown
