"""A prompt's content blocks as the session records them: links read, blobs decoded.

Each block becomes a content part (`acp_agent.adapters.acp_content`), and
then (the model reads the recorded parts):

- `text`: as is.
- `resource_link` to a `file:` URI inside the workspace (its resolved path,
  symlinks followed, under one of the session's roots): read through the
  editor's `fs/read_text_file` when it offers it (unsaved changes included),
  else from disk, and recorded as an embedded text `resource`. A link outside
  the workspace, to another scheme, to a binary file or to a file that
  cannot be read stays a link: the model sees its name and may read it with
  its tools, which ask before reaching outside the workspace.
- `resource` with `text`: as is; with a `blob` whose bytes are UTF-8 text:
  recorded with that text instead; any other blob stays as it is.
- `image`: as is, when the session's model takes images
  (`ModelSource.traits`); otherwise the prompt is refused (invalid params).
- `audio`: refused (not advertised).

Files are truncated at `MAX_ATTACHMENT_CHARS`, with a note saying so. A lone surrogate
anywhere in a block (the text typed, a file the editor returned) is recorded as
U+FFFD (`acp_agent.lone_surrogates`). For a link read into its file, the link
the person sent is recorded beside it (`UserInputAdopted.sent`), and
`session/load` replays that, so a reloaded thread shows the link, not the file.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import anyio
import anyio.to_thread
import attrs

from acp_agent.adapters.acp_content import part_of
from acp_agent.content import (
    ContentPart,
    ResourceContent,
    ResourceLinkContent,
    valid_part,
)
from acp_agent.lone_surrogates import replace_lone_surrogates
from acp_agent.toolkit import ClientBridge, ClientTimedOut
from protocol import types
from protocol.errors import AcpError, ConnectionClosed, InvalidParams, PeerError

__all__ = ("MAX_ATTACHMENT_CHARS", "PromptContent")

logger = logging.getLogger(__name__)

#: The longest file text attached to a prompt.
MAX_ATTACHMENT_CHARS: Final = 100_000


class PromptContent:
    """Turns one prompt's blocks into what the session records.

    **Parameters:**

    * `client`: the editor's file system (used when it offers reading).
    * `roots`: the session's workspace roots (absolute, resolved).
    * `images`: whether the session's model takes images (and which model, for the error).
    """

    def __init__(
        self, client: ClientBridge, roots: Sequence[Path], *, images: bool, model: str | None
    ) -> None:
        self._client = client
        self._roots = tuple(roots)
        self._images = images
        self._model = model

    def check(self, blocks: Sequence[types.ContentBlock]) -> None:
        """Refuse kinds the session cannot take (before anything is recorded)."""
        for index, block in enumerate(blocks):
            if isinstance(block, types.ImageContent) and not self._images:
                model = f"model {self._model}" if self._model else "model"
                raise InvalidParams(
                    f"Invalid params: prompt[{index}]: the session's {model} does not take images"
                )
            if not isinstance(
                block,
                types.TextContent
                | types.ResourceLink
                | types.EmbeddedResource
                | types.ImageContent,
            ):
                kind = getattr(block, "type", type(block).__name__)
                raise InvalidParams(
                    f"Invalid params: prompt[{index}]: {kind} content is not supported"
                )

    async def record(
        self, blocks: Sequence[types.ContentBlock]
    ) -> tuple[list[ContentPart], list[ContentPart | None]]:
        """The blocks as recorded (see the module docstring), and what the person sent
        for each one changed (`UserInputAdopted.sent`)."""
        recorded: list[ContentPart] = []
        sent: list[ContentPart | None] = []
        for block in blocks:
            part = valid_part(part_of(block))
            if isinstance(part, ResourceLinkContent):
                read = await self._link(part)
                recorded.append(read)
                sent.append(None if read is part else part)
                continue
            if isinstance(part, ResourceContent) and part.blob is not None:
                part = _decoded_blob(part)
            recorded.append(part)
            sent.append(None)
        return recorded, sent if any(sent) else []

    async def _link(self, link: ResourceLinkContent) -> ContentPart:
        path = _file_path(link.uri)
        if path is None:
            return link
        resolved = Path(await anyio.to_thread.run_sync(os.path.realpath, path))
        if not any(resolved == root or resolved.is_relative_to(root) for root in self._roots):
            logger.info("a prompt links to %s, outside the workspace; not read", resolved)
            return link
        text = await self._read(resolved)
        if text is None:
            return link
        text = replace_lone_surrogates(text)
        if len(text) > MAX_ATTACHMENT_CHARS:
            total = len(text)
            text = (
                f"{text[:MAX_ATTACHMENT_CHARS]}\n[acp-agent: the file is cut here, after "
                f"{MAX_ATTACHMENT_CHARS} of {total} characters]"
            )
        return ResourceContent(uri=link.uri, text=text, mime_type=link.mime_type or None)

    async def _read(self, path: Path) -> str | None:
        if self._client.can_read_files:
            try:
                return await self._client.read_text_file(str(path))
            except (
                AcpError,
                PeerError,
                ConnectionClosed,
                NotImplementedError,
                ClientTimedOut,
            ) as exc:
                logger.info("the editor could not read %s (%s); reading the disk", path, exc)

        def read_disk() -> str | None:
            try:
                with path.open("rb") as file:
                    data = file.read(MAX_ATTACHMENT_CHARS * 4 + 4)
            except OSError as exc:
                logger.info("a linked file cannot be read: %s", exc)
                return None
            if b"\x00" in data:
                return None  # binary
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as exc:
                # Cut inside a character at the read limit: keep the whole characters.
                if exc.start >= len(data) - 4:
                    return data[: exc.start].decode("utf-8")
                return None

        return await anyio.to_thread.run_sync(read_disk)


def _file_path(uri: str) -> str | None:
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    # Imported here: it costs start-up time the agent need not pay early.
    from urllib.request import url2pathname

    path = url2pathname(parsed.path)
    return path if os.path.isabs(path) else None


def _decoded_blob(resource: ResourceContent) -> ResourceContent:
    """A blob of UTF-8 text as that text (the document's own `_meta` is not kept); any other
    blob as it is."""
    try:
        data = base64.b64decode(resource.blob or "", validate=True)
        text = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return resource
    if "\x00" in text:
        return resource
    mime_type = resource.mime_type or None
    return attrs.evolve(resource, text=text, blob=None, mime_type=mime_type, resource_meta=None)
