"""Rich prompts: links read through the editor or the disk, embedded resources, images.

The model's side is checked at the fake provider (what the request carried);
the editor's side in the replay (what the person sent, not what was read).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_agent.adapters.acp import MAX_ATTACHMENT_CHARS
from protocol import types
from tests.adapters.acp.session_support import openai_text
from tests.support import EditorClient, agent_env, openai_env, running_agent
from tests.support.fake_provider import FakeProviderServer
from tests.support.messages import unnamed

pytestmark = pytest.mark.e2e

IMAGE = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
    "RU5ErkJggg=="
)

#: An editor that offers `fs/read_text_file` (answered from the client's buffers).
READS_FILES = types.ClientCapabilities(
    fs=types.FileSystemCapabilities(read_text_file=True, write_text_file=False)
)


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        fake.add(*(openai_text("Seen.") for _ in range(4)))
        yield fake


def env_for(server: FakeProviderServer) -> dict[str, str]:
    return openai_env(server.base_url, model="gpt-4.1", api_key="sk-test")  # takes images


def sent_to_model(server: FakeProviderServer, index: int = -1) -> Any:
    """The last user message of request `index`, as the provider received it."""
    return server.requests[index].json()["messages"][-1]["content"]


def text(value: str) -> types.TextContent:
    return types.TextContent(text=value)


def link(path: Path) -> types.ResourceLink:
    return types.ResourceLink(uri=path.as_uri(), name=path.name)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "notes.md").write_text("saved on disk\n")
    return folder


async def prompt_and_replay(
    client: EditorClient, workspace: Path, *blocks: types.ContentBlock
) -> list[types.SessionUpdate]:
    session_id = await client.new_session(workspace)
    response = await client.prompt_blocks(session_id, *blocks)
    assert response.stop_reason == types.StopReason.END_TURN
    start = len(client.updates_for(session_id))
    await client.load(session_id, workspace)
    return client.updates_for(session_id)[start:]


async def test_a_linked_workspace_file_is_read_through_the_editor_unsaved_text_included(
    tmp_path: Path, workspace: Path, server: FakeProviderServer
):
    notes = workspace / "notes.md"
    async with running_agent(
        tmp_path / "home", env=env_for(server), capabilities=READS_FILES
    ) as client:
        client.buffers[str(notes)] = "unsaved in the editor\n"
        replayed = await prompt_and_replay(client, workspace, text("Summarise"), link(notes))

    assert client.reads == [str(notes)]
    content = sent_to_model(server)
    assert "unsaved in the editor" in content
    assert "saved on disk" not in content
    # The thread shows what the person sent: the link, not the file.
    assert unnamed(replayed)[:2] == [
        types.UserMessageChunk(content=text("Summarise")),
        types.UserMessageChunk(content=link(notes)),
    ]


async def test_without_the_editors_file_system_a_linked_file_is_read_from_disk(
    tmp_path: Path, workspace: Path, server: FakeProviderServer
):
    big = workspace / "big.txt"
    big.write_text("x" * (MAX_ATTACHMENT_CHARS + 10))
    async with running_agent(tmp_path / "home", env=env_for(server)) as client:
        session_id = await client.new_session(workspace)
        await client.prompt_blocks(session_id, text("Read"), link(workspace / "notes.md"))
        await client.prompt_blocks(session_id, text("And"), link(big))

    assert client.reads == []
    assert "saved on disk" in sent_to_model(server, 0)
    cut = sent_to_model(server, 1)
    assert f"the file is cut here, after {MAX_ATTACHMENT_CHARS} of" in cut
    assert "x" * (MAX_ATTACHMENT_CHARS + 1) not in cut


async def test_a_link_outside_the_workspace_is_not_read(
    tmp_path: Path, workspace: Path, server: FakeProviderServer
):
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("do not read me")
    (workspace / "escape").symlink_to(secret)
    async with running_agent(
        tmp_path / "home", env=env_for(server), capabilities=READS_FILES
    ) as client:
        session_id = await client.new_session(workspace)
        await client.prompt_blocks(session_id, text("Look"), link(secret))
        await client.prompt_blocks(session_id, text("And"), link(workspace / "escape"))

    assert client.reads == []
    for index in (0, 1):
        content = sent_to_model(server, index)
        assert "do not read me" not in content
        assert "<attachment" in content  # the model still sees the link, and may ask to read it


async def test_embedded_resources_reach_the_model_text_and_utf8_blobs_as_text(
    tmp_path: Path, workspace: Path, server: FakeProviderServer
):
    embedded_text = types.EmbeddedResource(
        resource=types.TextResourceContents(uri="file:///w/a.py", text="print('a')")
    )
    utf8_blob = types.EmbeddedResource(
        resource=types.BlobResourceContents(
            uri="file:///w/b.txt", blob=base64.b64encode(b"blob text").decode()
        )
    )
    binary_blob = types.EmbeddedResource(
        resource=types.BlobResourceContents(
            uri="file:///w/c.bin", blob=base64.b64encode(b"\x00\xff").decode()
        )
    )
    async with running_agent(tmp_path / "home", env=env_for(server)) as client:
        replayed = await prompt_and_replay(
            client, workspace, text("These"), embedded_text, utf8_blob, binary_blob
        )

    content = sent_to_model(server)
    assert "print('a')" in content
    assert "blob text" in content
    assert 'uri="file:///w/c.bin"' in content
    assert [type(u.content) for u in replayed[:4]] == [  # type: ignore[union-attr]
        types.TextContent,
        types.EmbeddedResource,
        types.EmbeddedResource,
        types.EmbeddedResource,
    ]


async def test_an_image_reaches_a_model_that_takes_images_and_is_advertised(
    tmp_path: Path, workspace: Path, server: FakeProviderServer
):
    image = types.ImageContent(data=IMAGE, mime_type="image/png")
    async with running_agent(tmp_path / "home", env=env_for(server)) as client:
        initialize = next(m for m in client.messages if m.get("id") == 1)
        replayed = await prompt_and_replay(client, workspace, text("What is this?"), image)

    prompt = initialize["result"]["agentCapabilities"]["promptCapabilities"]
    assert prompt == {"image": True, "embeddedContext": True}  # false is left out
    parts = sent_to_model(server)
    assert isinstance(parts, list)
    assert {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{IMAGE}"}} in parts
    assert unnamed(replayed)[1] == types.UserMessageChunk(content=image)


async def test_a_local_model_without_images_is_advertised_without_them(tmp_path: Path):
    env = agent_env(ACP_AGENT_MODEL="ollama/qwen3")
    async with running_agent(tmp_path / "home", env=env) as client:
        initialize = next(m for m in client.messages if m.get("id") == 1)

    prompt = initialize["result"]["agentCapabilities"]["promptCapabilities"]
    assert prompt == {"embeddedContext": True}  # no image, no audio
