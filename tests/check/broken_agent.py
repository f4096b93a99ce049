"""A small ACP agent that keeps every rule `acp-agent check` knows, unless told to break one.

    python tests/check/broken_agent.py [--break RULE] [--auth-required]

Built on our `AgentConnection`. It advertises loadSession and sessionCapabilities
list, close, delete and resume; keeps its sessions in a JSON file (`BROKEN_AGENT_STORE`,
so a fresh process can load them); answers a prompt with one chunk ("Hello"), or,
for a prompt that asks to count, streams chunks until `session/cancel`. With
`--break RULE` it breaks exactly that rule, as a real agent might; with
`--auth-required` every prompt answers -32000, as an agent without a login does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from acp_agent.stdout_guard import claim_stdout
from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.errors import AcpError, InternalError, ResourceNotFound

#: Where its sessions are kept across processes (the tests give each run its own).
STORE = Path(os.environ.get("BROKEN_AGENT_STORE", ".broken-agent-sessions.json"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--break", dest="broken", default=None)
    parser.add_argument("--auth-required", action="store_true", help="prompts answer -32000")
    args = parser.parse_args()
    broken = args.broken
    if broken == "stdout-json-rpc":
        sys.stdout.write("broken-agent 1.0 starting\n")
        sys.stdout.flush()
    protocol_stdout = claim_stdout()
    conn = AgentConnection()
    sessions: dict[str, list[dict[str, Any]]] = (
        json.loads(STORE.read_text()) if STORE.exists() else {}
    )
    cancelled: dict[str, asyncio.Event] = {}

    def save() -> None:
        STORE.write_text(json.dumps(sessions))

    def raw(message: dict[str, Any]) -> None:
        assert conn.protocol.writer is not None
        conn.protocol.writer.write(json.dumps(message).encode())

    def send(session_id: str, update: dict[str, Any]) -> None:
        raw(
            {
                "jsonrpc": "2.0",
                "method": methods.SESSION_UPDATE,
                "params": {"sessionId": session_id, "update": update},
            }
        )

    def chunk(kind: str, text: str) -> dict[str, Any]:
        return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}

    def later(delay_s: float, action: Any) -> None:
        asyncio.get_running_loop().call_later(delay_s, action)

    def initialize(params: types.InitializeRequest) -> types.InitializeResponse:
        version = 1
        if broken == "initialize-version":
            version = 0
        elif broken == "initialize-unsupported-version":
            version = params.protocol_version
        return types.InitializeResponse(
            protocol_version=version,
            agent_capabilities=types.AgentCapabilities(
                load_session=True,
                session_capabilities=types.SessionCapabilities(
                    list=types.SessionListCapabilities(),
                    close=types.SessionCloseCapabilities(),
                    delete=types.SessionDeleteCapabilities(),
                    resume=types.SessionResumeCapabilities(),
                ),
            ),
            agent_info=types.Implementation(name="broken-agent", version="1.0"),
        )

    def new_session(params: types.NewSessionRequest) -> types.NewSessionResponse:
        session_id = "sess_same" if broken == "session-new-unique-ids" else f"sess_{time.time_ns()}"
        sessions[session_id] = []
        save()
        return types.NewSessionResponse(session_id=session_id)

    async def prompt(params: types.PromptRequest) -> types.PromptResponse:
        session_id = str(params.session_id)
        if session_id not in sessions:
            raise ResourceNotFound(data={"sessionId": session_id})
        if args.auth_required:
            raise AcpError("Authentication required", code=-32000)
        text = "".join(b.text for b in params.prompt if isinstance(b, types.TextContent))
        sessions[session_id].append(chunk("user_message_chunk", text))
        if broken == "no-unadvertised-client-calls":
            await conn.request(
                methods.FS_READ_TEXT_FILE,
                types.ReadTextFileRequest(session_id=session_id, path="/etc/hostname"),
            )
        if text.startswith("Count"):
            stop = cancelled[session_id] = asyncio.Event()
            n = 0
            while not stop.is_set() and n < 3000:
                n += 1
                send(session_id, chunk("agent_message_chunk", f"{n}\n"))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.02)
            if broken == "nothing-after-cancelled-response":
                later(0.2, lambda: send(session_id, chunk("agent_message_chunk", "late")))
            reason = "end_turn" if broken == "cancel-resolves-cancelled" else "cancelled"
            return types.PromptResponse(stop_reason=types.StopReason(reason))
        reply = chunk("agent_message_chunk", "Hello")
        if broken == "schema-valid":
            reply = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}
        if broken == "schema-no-unknown-keys":
            reply = {**reply, "color": "blue"}
        target = "sess_elsewhere" if broken == "prompt-updates-session-id" else session_id
        send(target, reply)
        sessions[session_id].append(chunk("agent_message_chunk", "Hello"))
        save()
        if broken == "nothing-after-prompt-response":
            later(0.2, lambda: send(session_id, chunk("agent_message_chunk", "late")))
        return types.PromptResponse(stop_reason=types.StopReason.END_TURN)

    def cancel(params: types.CancelNotification) -> None:
        event = cancelled.get(str(params.session_id))
        if event is not None:
            event.set()

    def known(session_id: str) -> list[dict[str, Any]]:
        if session_id not in sessions:
            raise ResourceNotFound(data={"sessionId": session_id})
        return sessions[session_id]

    def load(params: types.LoadSessionRequest) -> types.LoadSessionResponse:
        session_id = str(params.session_id)
        history = known(session_id)
        if broken == "load-never-prompted" and not history:
            raise InternalError("Internal error: nothing to load")
        if broken != "load-replays-before-response":
            for update in history:
                send(session_id, update)
        if broken == "nothing-after-load-response":
            later(0.1, lambda: [send(session_id, u) for u in history])
        return types.LoadSessionResponse()

    def resume(params: types.ResumeSessionRequest) -> types.ResumeSessionResponse:
        session_id = str(params.session_id)
        history = known(session_id)
        if broken == "resume-never-prompted" and not history:
            raise InternalError("Internal error: nothing to resume")
        if broken == "resume-replays-nothing":
            for update in history:
                send(session_id, update)
        return types.ResumeSessionResponse()

    def list_sessions(params: types.ListSessionsRequest) -> types.ListSessionsResponse:
        if broken == "list-sessions":
            return types.ListSessionsResponse(sessions=[])
        return types.ListSessionsResponse(
            sessions=[types.SessionInfo(session_id=s, cwd=str(Path.cwd())) for s in sessions]
        )

    def close(params: types.CloseSessionRequest) -> types.CloseSessionResponse:
        if broken == "close-session":
            raise InternalError("Internal error: cannot close")
        return types.CloseSessionResponse()

    def delete(params: types.DeleteSessionRequest) -> types.DeleteSessionResponse:
        if broken != "delete-session":
            sessions.pop(str(params.session_id), None)
            save()
        return types.DeleteSessionResponse()

    async def never_answer(params: Any) -> Any:
        await asyncio.sleep(3600)

    conn.register(methods.INITIALIZE, initialize)
    conn.register(methods.SESSION_NEW, new_session)
    conn.register(methods.SESSION_PROMPT, prompt)
    conn.register(methods.SESSION_CANCEL, cancel)
    conn.register(methods.SESSION_LOAD, load)
    conn.register(methods.SESSION_RESUME, resume)
    conn.register(methods.SESSION_LIST, list_sessions)
    conn.register(methods.SESSION_CLOSE, close)
    conn.register(methods.SESSION_DELETE, delete)
    if broken == "extension-request-answered":
        conn.register("_acp_agent_check/probe", never_answer, kind=methods.MessageKind.REQUEST)
    if broken in ("unknown-notification-ignored", "unknown-method-32601"):
        receive = conn.protocol.receive_line

        def misanswering(line: Any) -> None:
            message = json.loads(line) if isinstance(line, bytes) else None
            method = message.get("method") if isinstance(message, dict) else None
            unknown = isinstance(method, str) and method.startswith("acp_agent_check/")
            if unknown and broken == "unknown-notification-ignored" and "id" not in message:
                error = {"code": -32601, "message": "Method not found"}
                raw({"jsonrpc": "2.0", "id": None, "error": error})
            if unknown and broken == "unknown-method-32601" and "id" in message:
                error = {"code": -32603, "message": "Internal error"}
                raw({"jsonrpc": "2.0", "id": message["id"], "error": error})
                return
            receive(line)

        conn.protocol.receive_line = misanswering  # type: ignore[method-assign]
    conn.start_io(stdin=sys.stdin.buffer, stdout=protocol_stdout, stop_signals=(signal.SIGTERM,))
    if broken == "exit-after-eof":
        time.sleep(3)


if __name__ == "__main__":
    main()
