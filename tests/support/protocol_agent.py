"""A small agent built directly on `AgentConnection`, for protocol-level tests.

Run as a subprocess (`python tests/support/protocol_agent.py [--unstable]`).
What it does on purpose, so tests can watch the connection do its part:

- `session/prompt` asks the client for `fs/read_text_file` (path = the
  prompt's text) and streams the content back before ending the turn;
  prompt text "sleep" sleeps instead, until cancelled (saying so on stderr);
- `_test/echo` returns its params; `_test/crash` raises (an internal error);
- `_test/print` prints to stdout and runs a child that writes to stdout:
  the stdout guard must keep both off the protocol stream;
- `_test/notified` is a notification it remembers; `_test/notified_count`
  tells how many arrived;
- `_test/stop` calls `stop()` from another thread: the agent ends as if its
  stdin had; SIGTERM does the same (`stop_signals`);
- with `--unstable`, it serves the unstable `session/fork`, and its prompt
  results carry the unstable `usage` (the connection writes an unstable field
  it is given whatever its flag: the agent decides, as ours does by what the
  client advertised);
- `initialize` answers, in `_meta.clientCapabilities`, the client's
  capabilities as the connection decoded them (unstable ones included).
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import threading

import anyio

from acp_agent.stdout_guard import claim_stdout
from protocol import methods, types
from protocol.connection import AgentConnection
from protocol.errors import ResourceNotFound


def main() -> None:
    unstable = "--unstable" in sys.argv[1:]
    protocol_stdout = claim_stdout()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    conn = AgentConnection(unstable=unstable)
    sessions: set[str] = set()
    notified: list[object] = []

    def initialize(params: types.InitializeRequest) -> types.InitializeResponse:
        decoded = conn.protocol.converter.unstructure(params.client_capabilities)
        return types.InitializeResponse(
            protocol_version=types.PROTOCOL_VERSION, meta={"clientCapabilities": decoded}
        )

    def new_session(params: types.NewSessionRequest) -> types.NewSessionResponse:
        session_id = f"session-{len(sessions) + 1}"
        sessions.add(session_id)
        return types.NewSessionResponse(session_id=session_id)

    async def prompt(params: types.PromptRequest) -> types.PromptResponse:
        if params.session_id not in sessions:
            raise ResourceNotFound(data={"sessionId": params.session_id})
        text = "".join(b.text for b in params.prompt if isinstance(b, types.TextContent))
        if text == "sleep":
            # Said once the prompt is here: a test signals only after it (a signal that
            # comes before the line is read ends an agent that never got the prompt).
            logging.getLogger("protocol_agent").warning("prompt sleeps until cancelled")
            await anyio.sleep(60)
        read = await conn.request(
            methods.FS_READ_TEXT_FILE,
            types.ReadTextFileRequest(session_id=params.session_id, path=text),
        )
        conn.notify(
            methods.SESSION_UPDATE,
            types.SessionNotification(
                session_id=params.session_id,
                update=types.AgentMessageChunk(content=types.TextContent(text=read.content)),
            ),
        )
        # `usage` is unstable: this agent sends it only when opted in.
        usage = types.Usage(total_tokens=3, input_tokens=1, output_tokens=2) if unstable else None
        return types.PromptResponse(stop_reason=types.StopReason.END_TURN, usage=usage)

    def crash(params: object) -> object:
        raise RuntimeError("deliberate crash in _test/crash")

    def stray_print(params: object) -> object:
        print("stray print from a handler")
        subprocess.run(["sh", "-c", "echo stray output from a child process"], check=True)
        return {"printed": True}

    conn.register(methods.INITIALIZE, initialize)
    conn.register(methods.SESSION_NEW, new_session)
    conn.register(methods.SESSION_PROMPT, prompt)
    conn.register("_test/echo", lambda params: params)
    conn.register("_test/crash", crash)
    conn.register("_test/print", stray_print)
    conn.register("_test/notified", notified.append, kind=methods.MessageKind.NOTIFICATION)
    conn.register("_test/notified_count", lambda _: len(notified))
    conn.register("_test/stop", lambda _: threading.Thread(target=conn.stop).start())
    if unstable:

        def fork(params: types.ForkSessionRequest) -> types.ForkSessionResponse:
            return types.ForkSessionResponse(session_id=f"{params.session_id}-fork")

        conn.register(methods.SESSION_FORK, fork)
    conn.start_io(stdin=sys.stdin.buffer, stdout=protocol_stdout, stop_signals=(signal.SIGTERM,))


if __name__ == "__main__":
    main()
