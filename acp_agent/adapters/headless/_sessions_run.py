"""One `acp-agent sessions` command, once its agent is starting (`_sessions` parses the
command line and starts it first): everything goes through the agent over ACP.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from acp_agent.adapters.headless._agent_process import AgentProcess, HeldSession, held_by
from acp_agent.adapters.headless._exec import (
    EXIT_FAILED,
    EXIT_HELD,
    EXIT_READER_GONE,
    EXIT_USAGE,
)
from acp_agent.adapters.headless._report import FORMAT_VERSION
from acp_agent.adapters.headless._transcript import Transcript
from acp_agent.stdout_guard import LeavableStdout
from protocol import methods, types
from protocol.errors import AcpError, PeerError

__all__ = ("run",)


class _NotFound(Exception):
    """No stored session has this id."""


class _ReaderGone(Exception):
    """Whoever read stdout went away (`sessions list | head -1`)."""


def _out(text: str) -> None:
    """Write `text` to stdout at once, so a reader that went away is found here (as
    `_ReaderGone`), not in Python's last flush at exit."""
    out = LeavableStdout(sys.stdout)
    out.write(text)
    out.flush()
    if out.gone.is_set():
        raise _ReaderGone


async def run(args: argparse.Namespace, process: subprocess.Popen[bytes]) -> int:
    """Run the command `args` name with `process`, the agent started for it."""
    updates: list[tuple[str, dict[str, Any]]] = []

    async def refuse(request: types.RequestPermissionRequest) -> types.RequestPermissionResponse:
        return types.RequestPermissionResponse(outcome=types.CancelledPermissionOutcome())

    agent = AgentProcess(
        on_update=lambda session_id, update: updates.append((session_id, update)),
        answer=refuse,
    )
    # The connection owns the tasks reading the agent; leaving it stops the agent.
    async with agent:
        try:
            await agent.start(process)
            if args.command == "list":
                return await _list(agent, args)
            info = await _find(agent, args.session_id)
            if args.command == "delete":
                await _delete(agent, info)
                _out(f"deleted {info.session_id}\n")
                return 0
            await _load(agent, info)
            shown = [update for session_id, update in updates if session_id == str(info.session_id)]
            return _write(args, info, shown)
        except _ReaderGone:  # quietly (stdout is silenced), as a tool a SIGPIPE ended
            return EXIT_READER_GONE
        except _NotFound as exc:
            print(f"acp-agent: no session {exc}", file=sys.stderr)
            return EXIT_FAILED
        except HeldSession as exc:
            print(f"acp-agent: {exc}", file=sys.stderr)
            return EXIT_HELD
        except AcpError as exc:
            print(f"acp-agent: {exc.message}", file=sys.stderr)
            return EXIT_FAILED
        except (PeerError, OSError) as exc:
            print(f"acp-agent: the agent stopped: {exc}", file=sys.stderr)
            for line in agent.stderr_tail:
                print(line, file=sys.stderr)
            return EXIT_FAILED
        finally:
            with contextlib.suppress(Exception):
                await agent.stop(timeout_s=5.0)


async def _list(agent: AgentProcess, args: argparse.Namespace) -> int:
    cwd = None if args.cwd is None else _absolute(args.cwd)
    sessions = await agent.stored_sessions(cwd)
    for info in sessions:
        if args.json:
            _out(json.dumps({"version": FORMAT_VERSION, **_info(info)}, ensure_ascii=False) + "\n")
        else:
            title = info.title or "(untitled)"
            _out(f"{info.session_id}  {info.updated_at or '-':<25}  {title}  {info.cwd}\n")
    if not sessions and not args.json:
        print("no sessions" + (f" in {cwd}" if cwd else ""), file=sys.stderr)
    return 0


def _absolute(path: Path) -> str:
    return str(Path(os.path.abspath(path)).resolve())


async def _find(agent: AgentProcess, session_id: str) -> types.SessionInfo:
    info = await agent.stored_session(session_id)
    if info is None:
        raise _NotFound(session_id)
    return info


async def _load(agent: AgentProcess, info: types.SessionInfo) -> None:
    try:
        await agent.request(
            methods.SESSION_LOAD,
            types.LoadSessionRequest(session_id=info.session_id, cwd=info.cwd, mcp_servers=[]),
        )
    except AcpError as exc:
        held = held_by(exc, str(info.session_id))
        raise held or exc from None


async def _delete(agent: AgentProcess, info: types.SessionInfo) -> None:
    try:
        await agent.request(
            methods.SESSION_DELETE, types.DeleteSessionRequest(session_id=info.session_id)
        )
    except AcpError as exc:
        held = held_by(exc, str(info.session_id))
        raise held or exc from None


def _write(args: argparse.Namespace, info: types.SessionInfo, updates: list[dict[str, Any]]) -> int:
    if args.command == "export" and args.format == "json":
        text = json.dumps(
            {"version": FORMAT_VERSION, "session": _info(info), "updates": updates},
            ensure_ascii=False,
            indent=2,
        )
    else:
        transcript = Transcript()
        for update in updates:
            transcript.add(update)
        title = info.title or "(untitled)"
        header = f"# {title}\n\nSession `{info.session_id}` in `{info.cwd}`"
        if info.updated_at:
            header += f", last active {info.updated_at}"
        text = f"{header}\n\n{transcript.markdown()}"
    output = getattr(args, "output", None)
    if output is not None:
        try:
            output.write_text(text if text.endswith("\n") else text + "\n", "utf-8")
        except OSError as exc:
            print(f"acp-agent: cannot write {output}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    else:
        _out(text if text.endswith("\n") else text + "\n")
    return 0


def _info(info: types.SessionInfo) -> dict[str, Any]:
    return {
        "sessionId": str(info.session_id),
        "cwd": info.cwd,
        "additionalDirectories": list(info.additional_directories or []),
        "title": info.title,
        "updatedAt": info.updated_at,
    }
