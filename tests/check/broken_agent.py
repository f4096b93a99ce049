"""A small ACP agent that keeps every rule `acp-agent check` knows, unless told to break one.

    python tests/check/broken_agent.py [--break RULE] [--auth-required] [--store FILE]

Standard library only, so it starts in a few milliseconds (the check starts it
about ten times a run). It advertises everything a check exercises: loadSession,
list, close, delete, resume and additionalDirectories, every prompt content kind,
two modes and two config options; keeps its sessions in a JSON file
(`--store`, so a fresh process can load them); answers a prompt with
one chunk ("Hello"), or, for a prompt that asks to count, streams chunks until
`session/cancel` or `session/close`. With `--break RULE` it breaks exactly that
rule, as a real agent might; with `--auth-required` every prompt answers -32000.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

_LOCK = threading.Lock()
_UNKNOWN_SESSION = {"code": -32002, "message": "Resource not found"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--break", dest="broken", default="")
    parser.add_argument("--auth-required", action="store_true", help="prompts answer -32000")
    parser.add_argument("--store", type=Path, default=Path(".broken-agent-sessions.json"))
    args = parser.parse_args()
    Agent(args.broken, auth_required=args.auth_required, store=args.store).serve()
    if args.broken == "exit-after-eof":
        time.sleep(3)


class Agent:
    def __init__(self, broken: str, *, auth_required: bool, store: Path) -> None:
        self.broken = broken
        self.auth_required = auth_required
        self.store = store
        #: id -> {"cwd": ..., "history": [updates]}
        self.sessions: dict[str, dict[str, Any]] = (
            json.loads(store.read_text()) if store.exists() else {}
        )
        self.settings: dict[str, dict[str, str]] = {}  # config option values by session
        self.turns: dict[str, dict[str, Any]] = {}  # running counting prompts by session
        self.asked = 0

    # --- the wire ----------------------------------------------------------------------

    def serve(self) -> None:
        if self.broken == "stdout-json-rpc":
            sys.stdout.write("broken-agent 1.0 starting\n")
        for line in sys.stdin:
            message = json.loads(line)
            method = message.get("method")
            if method is None:
                continue  # the answer to our fs/read_text_file: nothing waits on it
            if "id" not in message:
                self.notified(method, message.get("params") or {})
                continue
            if method == "_acp_agent_check/probe" and self.broken == "extension-request-answered":
                continue  # never answered
            handler = getattr(self, "do_" + method.replace("/", "_"), None)
            if handler is None:
                self.unknown(message["id"], method)
                continue
            try:
                self.answer(message["id"], result=handler(message["params"], message["id"]))
            except Refused as refused:
                self.answer(message["id"], error=refused.error)

    def write(self, message: dict[str, Any]) -> None:
        with _LOCK:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def answer(self, msg_id: Any, *, result: Any = None, error: Any = None) -> None:
        if result is Pending:
            return  # a running prompt answers when it ends
        if self.broken == "response-ids-echoed":
            msg_id = str(msg_id)
        key = "error" if error is not None else "result"
        self.write({"jsonrpc": "2.0", "id": msg_id, key: error if error is not None else result})

    def unknown(self, msg_id: Any, method: str) -> None:
        code = -32603 if self.broken == "unknown-method-32601" else -32601
        self.answer(msg_id, error={"code": code, "message": f"Method not found: {method}"})

    def notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/cancel":
            self.end_turn(params.get("sessionId"), "cancelled", by="cancel")
        elif self.broken == "unknown-notification-ignored":
            error = {"code": -32601, "message": "Method not found"}
            self.write({"jsonrpc": "2.0", "id": None, "error": error})

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        params = {"sessionId": session_id, "update": update}
        self.write({"jsonrpc": "2.0", "method": "session/update", "params": params})

    def later(self, delay_s: float, action: Any) -> None:
        threading.Timer(delay_s, action).start()

    def save(self) -> None:
        self.store.write_text(json.dumps(self.sessions))

    def known(self, params: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        session_id = params["sessionId"]
        if session_id not in self.sessions:
            raise Refused(_UNKNOWN_SESSION)
        return session_id, self.sessions[session_id]["history"]

    # --- the methods -------------------------------------------------------------------

    def do_initialize(self, params: dict[str, Any], _: Any) -> dict[str, Any]:
        version = {"initialize-version": 0, "initialize-unsupported-version": None}.get(
            self.broken, 1
        )
        result: dict[str, Any] = {
            "protocolVersion": params["protocolVersion"] if version is None else version,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
                "sessionCapabilities": {
                    name: {}
                    for name in ("list", "close", "delete", "resume", "additionalDirectories")
                },
            },
            "authMethods": [],
        }
        if self.broken != "agent-info":
            result["agentInfo"] = {"name": "broken-agent", "version": "1.0"}
        if self.broken == "auth-methods":
            result["authMethods"] = [{"type": "terminal", "id": "login", "name": "Log in"}]
        return result

    def do_session_new(self, params: dict[str, Any], _: Any) -> dict[str, Any]:
        if params.get("additionalDirectories") and self.broken == "additional-directories":
            raise Refused({"code": -32602, "message": "Invalid params: additionalDirectories"})
        session_id = (
            "sess_same" if self.broken == "session-new-unique-ids" else f"sess_{time.time_ns()}"
        )
        self.sessions[session_id] = {"cwd": params["cwd"], "history": []}
        self.save()
        modes = [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]
        return {
            "sessionId": session_id,
            "modes": {"currentModeId": "ask", "availableModes": modes},
            "configOptions": self.options(session_id),
        }

    def options(self, session_id: str, *only: str) -> list[dict[str, Any]]:
        values = self.settings.setdefault(session_id, {"mode": "ask", "effort": "low"})
        choices = {"mode": ("ask", "code"), "effort": ("low", "high")}
        return [
            {
                "id": name,
                "name": name.title(),
                "type": "select",
                "currentValue": values[name],
                "options": [{"value": v, "name": v.title()} for v in choices[name]],
            }
            for name in (only or values)
        ]

    def do_session_set_mode(self, params: dict[str, Any], _: Any) -> dict[str, Any]:
        if self.broken == "session-modes":
            raise Refused({"code": -32603, "message": "Internal error: cannot switch"})
        return {}

    def do_session_set_config_option(self, params: dict[str, Any], _: Any) -> dict[str, Any]:
        session_id, config_id = params["sessionId"], params["configId"]
        self.options(session_id)
        self.settings[session_id][config_id] = params["value"]
        only = (config_id,) if self.broken == "config-options" else ()
        return {"configOptions": self.options(session_id, *only)}

    def do_session_prompt(self, params: dict[str, Any], msg_id: Any) -> Any:
        session_id, history = self.known(params)
        if self.auth_required:
            raise Refused({"code": -32000, "message": "Authentication required"})
        kinds = {block.get("type") for block in params["prompt"]}
        if "resource_link" in kinds and self.broken == "prompt-content":
            raise Refused({"code": -32602, "message": "Invalid params: resource_link"})
        if kinds & {"image", "audio", "resource"} and self.broken == "prompt-capabilities":
            raise Refused({"code": -32602, "message": "Invalid params: content"})
        words = " ".join(b.get("text", "") for b in params["prompt"])
        history.append(chunk("user_message_chunk", words))
        if self.broken == "no-unadvertised-client-calls":
            self.asked += 1
            request = {"sessionId": session_id, "path": "/etc/hostname"}
            self.write(
                {
                    "jsonrpc": "2.0",
                    "id": f"agent-{self.asked}",
                    "method": "fs/read_text_file",
                    "params": request,
                }
            )
        if words.startswith("Count"):
            turn = self.turns[session_id] = {"id": msg_id, "end": None}
            threading.Thread(target=self.count, args=(session_id, turn), daemon=True).start()
            return Pending
        reply = chunk("agent_message_chunk", "Hello")
        if self.broken == "schema-valid":
            reply = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}
        if self.broken == "schema-no-unknown-keys":
            reply = {**reply, "color": "blue"}
        self.update(
            "sess_elsewhere" if self.broken == "prompt-updates-session-id" else session_id, reply
        )
        history.append(chunk("agent_message_chunk", "Hello"))
        self.save()
        if self.broken == "nothing-after-prompt-response":
            self.later(0.1, lambda: self.update(session_id, chunk("agent_message_chunk", "late")))
        return {"stopReason": "end_turn"}

    def count(self, session_id: str, turn: dict[str, Any]) -> None:
        n = 0
        while turn["end"] is None and n < 500:
            n += 1
            self.update(session_id, chunk("agent_message_chunk", f"{n}\n"))
            time.sleep(0.02)
        reason = turn["end"] or "end_turn"
        if (turn.get("by"), self.broken) in (
            ("cancel", "cancel-resolves-cancelled"),
            ("close", "close-cancels-prompt"),
        ):
            # Ends the turn as if nothing was asked, well after it was (not a race).
            time.sleep(1.0)
            reason = "end_turn"
        self.turns.pop(session_id, None)
        self.answer(turn["id"], result={"stopReason": reason})
        if self.broken == "nothing-after-cancelled-response":
            self.later(0.1, lambda: self.update(session_id, chunk("agent_message_chunk", "late")))

    def end_turn(self, session_id: Any, reason: str, *, by: str) -> None:
        turn = self.turns.get(session_id)
        if turn is not None:
            turn.update(end=reason, by=by)

    def do_session_close(self, params: dict[str, Any], _: Any) -> dict[str, Any]:
        running = params["sessionId"] in self.turns
        if running:
            self.end_turn(
                params["sessionId"],
                "cancelled",
                by="close",
            )
        elif self.broken == "close-session":
            raise Refused({"code": -32603, "message": "Internal error: cannot close"})
        return {}

    def do_session_load(self, params: dict[str, Any], _: Any) -> dict[str, Any]:
        session_id, history = self.known(params)
        if self.broken == "load-never-prompted" and not history:
            raise Refused({"code": -32603, "message": "Internal error: nothing to load"})
        if self.broken != "load-replays-before-response":
            for update in history:
                self.update(session_id, update)
        if self.broken == "nothing-after-load-response":
            self.later(0.1, lambda: [self.update(session_id, u) for u in history])
        return {}

    def do_session_resume(self, params: dict[str, Any], _: Any) -> dict[str, Any]:
        session_id, history = self.known(params)
        if self.broken == "resume-never-prompted" and not history:
            raise Refused({"code": -32603, "message": "Internal error: nothing to resume"})
        if self.broken == "resume-replays-nothing":
            for update in history:
                self.update(session_id, update)
        return {}

    def do_session_list(self, params: dict[str, Any], _: Any) -> dict[str, Any]:
        cwd = params.get("cwd")
        if self.broken == "list-finds-sessions":
            return {"sessions": []}
        listed = [
            {"sessionId": s, "cwd": session["cwd"]}
            for s, session in self.sessions.items()
            if cwd in (None, session["cwd"]) or self.broken == "list-sessions"
        ]
        return {"sessions": listed}

    def do_session_delete(self, params: dict[str, Any], _: Any) -> dict[str, Any]:
        if params["sessionId"] not in self.sessions and self.broken == "delete-unknown-quietly":
            raise Refused(_UNKNOWN_SESSION)
        if self.broken != "delete-session":
            self.sessions.pop(params["sessionId"], None)
            self.save()
        return {}


class Refused(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.error = error


class _Pending:
    """A result still to come: a running prompt answers when it ends."""


Pending = _Pending()


def chunk(kind: str, words: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": words}}


if __name__ == "__main__":
    main()
