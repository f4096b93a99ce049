"""One prompt from the editor, from its start to the reply the person reads.

The turn takes its place in the session's queue, its steps show as work-done
progress (where the client has it), and when it is over the reply arrives as a
message (`window/showMessage`) and, where the client opens documents, the session's
Markdown transcript opens. Whatever fails, the person gets a message.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Final

import anyio
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path

from acp_agent.adapters.lsp_front._editor import EditorTraits
from acp_agent.adapters.lsp_front._requests import request
from acp_agent.adapters.lsp_front._session import FolderSession
from acp_agent.adapters.lsp_front._transcript import write_transcript

__all__ = ("run_turn",)

logger = logging.getLogger(__name__)

#: How long the editor may take to accept a progress token before the turn goes without.
_PROGRESS_CREATE_S: Final = 5.0
#: How much of the reply the message shows (the transcript has all of it).
_MESSAGE_CHARS: Final = 4000


async def run_turn(
    server: LanguageServer,
    traits: EditorTraits,
    session: FolderSession,
    prompt: str,
    *,
    transcripts: Path,
) -> str:
    """Run one turn of `prompt` in `session` (see the module docstring); the message shown."""
    token = f"acp-agent-{uuid.uuid4().hex[:12]}"
    progress = traits.progress and await _start_progress(server, token)

    def report(step: str) -> None:
        if progress:
            server.work_done_progress.report(token, types.WorkDoneProgressReport(message=step))

    session.progress_token = token if progress else None
    shown: str
    kind = types.MessageType.Info
    try:
        end = await session.run(prompt, report)
        if end.cancelled:
            shown = "acp-agent: cancelled." + (f"\n\n{end.reply}" if end.reply else "")
        elif end.failure is not None:
            kind = types.MessageType.Error
            shown = f"acp-agent: the model failed: {end.failure}"
        else:
            shown = end.reply or "acp-agent: done (no reply text)."
        session.last_reply = end.reply
    except Exception as exc:
        logger.exception("turn in %s failed", session.folder)
        kind, shown = types.MessageType.Error, f"acp-agent: the turn failed: {exc}"
    finally:
        session.progress_token = None
        if progress:
            server.work_done_progress.end(token, types.WorkDoneProgressEnd(message="Done"))
    if len(shown) > _MESSAGE_CHARS:
        shown = shown[:_MESSAGE_CHARS] + "…"
    server.window_show_message(types.ShowMessageParams(type=kind, message=shown))
    await _show_transcript(server, traits, session, transcripts)
    return shown


async def _start_progress(server: LanguageServer, token: str) -> bool:
    """Ask the editor for a progress token and begin it; False if it does not take it."""
    try:
        await request(
            server,
            types.WINDOW_WORK_DONE_PROGRESS_CREATE,
            types.WorkDoneProgressCreateParams(token=token),
            timeout_s=_PROGRESS_CREATE_S,
        )
    except Exception:
        logger.info("the editor did not create progress %s", token, exc_info=True)
        return False
    server.work_done_progress.begin(
        token,
        types.WorkDoneProgressBegin(title="acp-agent", message="Starting", cancellable=True),
    )
    return True


async def _show_transcript(
    server: LanguageServer, traits: EditorTraits, session: FolderSession, folder: Path
) -> None:
    """Write the session's transcript, and open it where the editor can."""
    try:
        path = await write_transcript(folder, session.id, await session.transcript())
        if traits.shows_documents:
            with anyio.move_on_after(_PROGRESS_CREATE_S):
                await request(
                    server,
                    types.WINDOW_SHOW_DOCUMENT,
                    types.ShowDocumentParams(
                        uri=from_fs_path(str(path)) or str(path), take_focus=False
                    ),
                    timeout_s=_PROGRESS_CREATE_S,
                )
    except Exception:
        logger.warning("the transcript of %s was not shown", session.id, exc_info=True)
