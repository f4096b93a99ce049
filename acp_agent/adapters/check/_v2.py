"""`acp-agent check --protocol 2`: the rules of ACP v2 as far as the draft states them.

The v2 draft (the one vendored in `protocol/schema/v2/`, the TypeScript SDK 2.4.0's)
and the conformance kit's opt-in v2 suite make these mandatory; each rule cites the
sentence it enforces, in the schema or in the kit. One fresh process of the agent
is driven through a short v2 exchange (initialize, logout when it lists auth
methods, an empty batch, a session, a listing, a prompt read to its end, a resume
replaying from the start), every line it writes kept and validated against the v2
schema at the end. A rule whose prerequisite failed is inconclusive, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from typing import Any, Final

import anyio

from acp_agent.adapters.check._process import AgentProcess, StartSoon
from acp_agent.adapters.check._rules import Cite, Finding, Level, Rule, Verdict
from protocol.validation import WireValidator

__all__ = ("V2_RULES", "check_v2")

_SCHEMA: Final = "protocol/schema/v2/schema.json"
_KIT: Final = "https://github.com/agentclientprotocol/acp-tck (v2 suite)"


def _rule(rule_id: str, text: str, where: str, quote: str, kit: str = "") -> Rule:
    return Rule(rule_id, Level.MUST, text, (Cite(where, quote),), kit)


V2_RULES: Final = (
    _rule(
        "v2-schema-valid",
        "every message the agent writes is valid against the v2 schema",
        _SCHEMA,
        "the ACP JSON Schema, v2 draft",
    ),
    _rule(
        "v2-initialize-version",
        "a v2 initialize is answered with protocolVersion 2",
        _SCHEMA + "#/$defs/InitializeResponse",
        "The highest protocol version supported by the agent that is at or below the "
        "version requested by the client.",
    ),
    _rule(
        "v2-auth-logout",
        "an agent listing authMethods serves auth/logout",
        _SCHEMA + "#/$defs/InitializeResponse",
        "Supplying one or more methods means the agent MUST support both `auth/login` and "
        "`auth/logout`.",
    ),
    _rule(
        "v2-empty-batch",
        "an empty batch gets one -32600 response with a null id, never an array",
        _KIT,
        "An empty array (`[]`) receives a single Invalid Request (`-32600`) response object "
        "with `id: null` -- never a response array.",
        kit="ACP-BATCH-201",
    ),
    _rule(
        "v2-session-list",
        "session/list with no params answers with a sessions array",
        _KIT,
        "`session/list` with `params: {}` succeeds; the result's `sessions` field is present "
        "as an array.",
        kit="ACP-LIST-201",
    ),
    _rule(
        "v2-prompt-message-id",
        "session/prompt is answered with the inserted message's id",
        _SCHEMA + "#/$defs/PromptResponse",
        "Required and non-null. Omission and explicit `null` are both invalid.",
    ),
    _rule(
        "v2-turn-ends-idle",
        "foreground work a prompt started ends with an idle state_update",
        _SCHEMA + "#/$defs/StateUpdate",
        "the agent MUST report `running` when foreground work starts, or `requires_action` "
        "if it starts blocked on user action, and `idle` when it ends.",
    ),
    _rule(
        "v2-user-message-echoed",
        "the prompt's message is echoed with the id the answer named",
        _SCHEMA + "#/$defs/PromptResponse",
        "Agents must echo the message during the live session",
    ),
    _rule(
        "v2-resume-replay-first",
        "a resume replaying from the start sends the replay before its answer, none after",
        _KIT,
        'With `replayFrom: {"type": "start"}`, every `session/update` for the resumed '
        "session arrives before the `session/resume` response, and none arrives within a "
        "quiet period after it.",
        kit="ACP-RESUME-202",
    ),
)


class _Exchange:
    """One process of the agent spoken to in v2: requests, their answers, what else came."""

    def __init__(
        self, command: Sequence[str], cwd: str, timeout_s: float, *, start_soon: StartSoon
    ) -> None:
        self.timeout_s = timeout_s
        self.sent: list[bytes] = []
        self.received: list[bytes] = []
        self.notifications: list[dict[str, Any]] = []
        self._messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._answers: dict[Any, dict[str, Any]] = {}
        self._ids = 0
        self.process = AgentProcess(
            command,
            start_soon=start_soon,
            cwd=cwd,
            on_line=self._line,
            on_oversized=lambda size: None,
        )

    def _line(self, line: bytes) -> None:
        self.received.append(line)
        with contextlib.suppress(ValueError, RecursionError):
            message = json.loads(line)
            if isinstance(message, dict):
                self._messages.put_nowait(message)
            elif isinstance(message, list):
                self._messages.put_nowait({"_batch": message})

    def send(self, data: bytes) -> None:
        self.sent.append(data.rstrip(b"\n"))
        self.process.write(data)

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to a request (None: none within the timeout)."""
        self._ids += 1
        ident = self._ids
        request = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        self.send(json.dumps(request).encode() + b"\n")
        answer: dict[str, Any] | None = await self.until(lambda: self._answers.pop(ident, None))
        return answer

    async def until(self, found: Any, timeout_s: float | None = None) -> Any:
        """Read messages until `found()` is not None; None after the timeout."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.timeout_s if timeout_s is None else timeout_s):
                while (result := found()) is None:
                    self._take(await self._messages.get())
                return result
        return None

    async def next_message(self) -> dict[str, Any] | None:
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(self._messages.get(), self.timeout_s)
        return None

    def _take(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            self._answers[message.get("id")] = message
        elif "id" in message:
            # A question of the agent's: declined (cancelled), never left waiting.
            result: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            if message["method"] != "session/request_permission":
                error = {"code": -32601, "message": "Method not found"}
                answer = {"jsonrpc": "2.0", "id": message["id"], "error": error}
            self.send(json.dumps(answer).encode() + b"\n")
        else:
            self.notifications.append(message)

    def updates(self, session_id: str) -> list[dict[str, Any]]:
        return [
            n["params"]["update"]
            for n in self.notifications
            if n.get("method") == "session/update"
            and isinstance(n.get("params"), dict)
            and n["params"].get("sessionId") == session_id
            and isinstance(n["params"].get("update"), dict)
        ]


async def check_v2(
    command: Sequence[str], *, prompt: str, timeout_s: float, quiet_s: float
) -> list[Finding]:
    """Every v2 rule's finding about the agent `command` starts."""
    verdicts: dict[str, tuple[Verdict, tuple[str, ...]]] = {}

    def judge(rule_id: str, ok: bool | None, *evidence: str) -> None:
        """Record a verdict: passed, failed, or (None) not applicable."""
        verdict = Verdict.NOT_APPLICABLE if ok is None else Verdict.PASS if ok else Verdict.FAIL
        verdicts[rule_id] = (verdict, evidence)

    cwd = tempfile.mkdtemp(prefix="acp-check-v2-")
    # The process is read in this group, which ends once `close` ended the reading.
    async with anyio.create_task_group() as reading:
        run = _Exchange(_resolved(command), cwd, timeout_s, start_soon=reading.start_soon)
        try:
            await run.process.start()
            await _drive(run, judge, prompt=prompt, quiet_s=quiet_s)
        finally:
            with anyio.CancelScope(shield=True):
                await run.process.close()
            shutil.rmtree(cwd, ignore_errors=True)
            reading.cancel_scope.cancel()
    problems = WireValidator(protocol_version=2).problems(run.sent, run.received)
    judge("v2-schema-valid", not problems, *(problems[:5] or [f"{len(run.received)} lines"]))
    return [
        Finding(rule, *verdicts.get(rule.id, (Verdict.INCONCLUSIVE, ("not reached",))))
        for rule in V2_RULES
    ]


def _resolved(command: Sequence[str]) -> list[str]:
    """`command` with its program as an absolute path: the agent runs in a folder of its
    own, so a relative one is found from here first."""
    program = shutil.which(command[0])
    return [os.path.abspath(program or command[0]), *command[1:]]


async def _drive(
    run: _Exchange, judge: Callable[..., None], *, prompt: str, quiet_s: float
) -> None:
    """The exchange, each rule judged as soon as its evidence is in."""
    initialize = {
        "protocolVersion": 2,
        "info": {"name": "acp-agent check", "version": "2"},
        "capabilities": {},
    }
    answer = await run.call("initialize", initialize)
    result = (answer or {}).get("result") or {}
    version = result.get("protocolVersion")
    judge("v2-initialize-version", version == 2, f"initialize answered {answer}"[:300])
    if version != 2:
        return
    if result.get("authMethods"):
        logout = await run.call("auth/logout", {})
        served = logout is not None and (logout.get("error") or {}).get("code") != -32601
        judge("v2-auth-logout", served, f"auth/logout answered {logout}"[:300])
    else:
        judge("v2-auth-logout", None, "no authMethods listed: nothing to serve")
    run.send(b"[]\n")
    reply = await run.next_message()
    empty_ok = (
        reply is not None
        and reply.get("id", "absent") is None
        and (reply.get("error") or {}).get("code") == -32600
    )
    judge("v2-empty-batch", empty_ok, f"[] answered {reply}"[:300])
    opened = await run.call("session/new", {"cwd": run.process.cwd})
    session_id = ((opened or {}).get("result") or {}).get("sessionId")
    listing = await run.call("session/list", {})
    sessions = ((listing or {}).get("result") or {}).get("sessions")
    judge("v2-session-list", isinstance(sessions, list), f"session/list answered {listing}"[:300])
    if not isinstance(session_id, str):
        return
    blocks = [{"type": "text", "text": prompt}]
    accepted = await run.call("session/prompt", {"sessionId": session_id, "prompt": blocks})
    message_id = ((accepted or {}).get("result") or {}).get("messageId")
    judge("v2-prompt-message-id", isinstance(message_id, str), f"answered {accepted}"[:300])
    if not isinstance(message_id, str):
        return

    def idle() -> dict[str, Any] | None:
        return next(
            (
                u
                for u in run.updates(session_id)
                if u.get("sessionUpdate") == "state_update" and u.get("state") == "idle"
            ),
            None,
        )

    ended = await run.until(idle)
    judge("v2-turn-ends-idle", ended is not None, f"idle: {ended}"[:300])
    echoed = [
        u
        for u in run.updates(session_id)
        if u.get("sessionUpdate") in ("user_message", "user_message_chunk")
    ]
    judge(
        "v2-user-message-echoed",
        any(u.get("messageId") == message_id for u in echoed),
        f"{len(echoed)} user message update(s); the answer named {message_id}",
    )
    before = len(run.updates(session_id))
    resume = {"sessionId": session_id, "cwd": run.process.cwd, "replayFrom": {"type": "start"}}
    resumed = await run.call("session/resume", resume)
    replayed = len(run.updates(session_id)) - before
    await run.until(lambda: None, timeout_s=quiet_s)
    after = len(run.updates(session_id)) - before - replayed
    judge(
        "v2-resume-replay-first",
        resumed is not None and "result" in resumed and after == 0,
        f"{replayed} update(s) before the answer, {after} after it; answered {resumed}"[:300],
    )
