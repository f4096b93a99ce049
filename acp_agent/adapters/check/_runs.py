"""The runs of `acp-agent check`: each starts fresh agent processes and decides its rules.

`Checker.run()` goes through the groups in order (negotiation, sessions and a
prompt, cancellation, persistence: load and resume in fresh processes), skipping
a group none of whose rules were asked for. Every process it started is then held
to the rules that hold for all messages: stdout, the schema, the client methods it
did not advertise, and the exit after the end of stdin.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from pathlib import Path
from typing import Any, Final

from acp_agent.adapters.check._probe import Probe
from acp_agent.adapters.check._rules import RULES, Finding, Verdict, rule
from protocol import methods
from protocol.errors import MethodNotFound, PeerError
from protocol.validation import UNDEFINED_KEY, WireValidator

__all__ = ("CANCEL_PROMPT", "DEFAULT_PROMPT", "Checker")

DEFAULT_PROMPT: Final = "Say hello in one word."
#: A prompt that keeps a model busy long enough to be cancelled.
CANCEL_PROMPT: Final = (
    "Count from 1 to 300, one number per line, and say a sentence about each number."
)
#: How long after a response the checker watches for updates that must not come.
DEFAULT_QUIET_S: Final = 1.0
#: How long the agent may take to exit after its stdin ends (ACP-SHUTDOWN-001).
EXIT_BOUND_S: Final = 2.0
#: The error code of `auth_required`: an agent that needs a login cannot be prompted.
AUTH_REQUIRED: Final = -32000

_MESSAGE_CHUNKS: Final = {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"}
#: The update kinds a prompt's turn produces (the rest describe the session).
_TURN_UPDATES: Final = {*_MESSAGE_CHUNKS, "tool_call", "tool_call_update", "plan"}


class _Inconclusive(Exception):
    """A rule's prerequisite failed: the rule cannot be decided on this agent."""


class Checker:
    """Checks one agent command against the rules in `only` (all when empty)."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        only: Collection[str] = (),
        prompt: str = DEFAULT_PROMPT,
        timeout_s: float = 30.0,
        quiet_s: float = DEFAULT_QUIET_S,
    ) -> None:
        self.command = list(command)
        self.quiet_s = quiet_s
        self.only = set(only) or {r.id for r in RULES}
        self.prompt = prompt
        self.timeout_s = timeout_s
        self._findings: dict[str, Finding] = {}
        self._probes: list[Probe] = []
        self._exits: list[float | None] = []
        #: The cwd of every session the checker makes (agents may write there).
        self._scratch = Path(tempfile.mkdtemp(prefix="acp-agent-check-"))

    async def run(self) -> list[Finding]:
        """Every asked-for rule's finding, in catalogue order."""
        groups: list[tuple[set[str], Callable[[], Awaitable[None]]]] = [
            ({"initialize-version", "initialize-unsupported-version"}, self._negotiation),
            (
                {
                    "session-new-unique-ids",
                    "prompt-updates-session-id",
                    "nothing-after-prompt-response",
                    "extension-request-answered",
                    "unknown-method-32601",
                    "unknown-notification-ignored",
                    "list-sessions",
                    "close-session",
                    "delete-session",
                },
                self._sessions,
            ),
            ({"cancel-resolves-cancelled", "nothing-after-cancelled-response"}, self._cancel),
            (
                {
                    "load-replays-before-response",
                    "nothing-after-load-response",
                    "load-never-prompted",
                    "resume-replays-nothing",
                    "resume-never-prompted",
                },
                self._persistence,
            ),
        ]
        everywhere = {
            "stdout-json-rpc",
            "schema-valid",
            "schema-no-unknown-keys",
            "no-unadvertised-client-calls",
            "exit-after-eof",
        }
        try:
            for rules, group in groups:
                if rules & self.only or everywhere & self.only:
                    await group()
        finally:
            shutil.rmtree(self._scratch, ignore_errors=True)
        self._judge_every_message()
        return [
            self._findings.get(r.id, Finding(r, Verdict.INCONCLUSIVE, "not reached"))
            for r in RULES
            if r.id in self.only
        ]

    # --- bookkeeping ---------------------------------------------------------------------

    def _find(self, rule_id: str, verdict: Verdict, evidence: str) -> None:
        """Record a verdict; a failure is never overwritten by a later pass."""
        known = self._findings.get(rule_id)
        if known is not None and known.verdict is Verdict.FAIL:
            return
        if known is not None and verdict is Verdict.PASS and known.verdict is not Verdict.PASS:
            return
        self._findings[rule_id] = Finding(rule(rule_id), verdict, evidence)

    def _undecided(self, *rule_ids: str, why: str) -> None:
        """`rule_ids` cannot be decided on this agent, for the reason `why`."""
        for rule_id in rule_ids:
            self._find(rule_id, Verdict.INCONCLUSIVE, why)

    async def _probe(self) -> Probe:
        probe = Probe(self.command, timeout_s=self.timeout_s)
        self._probes.append(probe)
        await probe.start()
        return probe

    async def _finish(self, probe: Probe) -> None:
        # Waited a little past the bound: later than that fails the rule however late.
        # Once one process was that slow, the others are not waited for.
        slow_already = any(e is None for e in self._exits)
        self._exits.append(await probe.end_input(0.2 if slow_already else EXIT_BOUND_S + 0.5))
        await probe.close()

    async def _ready(self, probe: Probe) -> dict[str, Any]:
        """Initialize with version 1; the result (`_Inconclusive` when it fails)."""
        response = await probe.initialize()
        result = response.get("result")
        if not isinstance(result, dict):
            raise _Inconclusive(f"initialize failed: {response.get('error')}")
        return result

    async def _new(self, probe: Probe) -> str:
        response = await probe.raw_request(
            methods.SESSION_NEW, {"cwd": str(self._scratch), "mcpServers": []}
        )
        result = response.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("sessionId"), str):
            raise _Inconclusive(f"session/new failed: {response.get('error') or response}")
        return str(result["sessionId"])

    async def _prompt(self, probe: Probe, session_id: str, text: str) -> dict[str, Any]:
        """A prompt's response message; `_Inconclusive` when no model could answer."""
        response = await probe.raw_request(
            methods.SESSION_PROMPT,
            {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
        )
        error = response.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            why = "needs authentication" if code == AUTH_REQUIRED else "failed"
            raise _Inconclusive(f"the prompt {why}: {error.get('message')} ({code})")
        return response

    async def _nothing_after(
        self, probe: Probe, session_id: str, answered: float, rule_id: str
    ) -> None:
        """Watch for `quiet_s` after a response answered at `answered`: any update of the
        session then fails `rule_id`."""
        await asyncio.sleep(self.quiet_s)
        late = [r.message for r in probe.updates(session_id, since=answered)]
        self._find(
            rule_id,
            Verdict.FAIL if late else Verdict.PASS,
            f"{len(late)} update(s) after the response, first: {_short(late[0])}"
            if late
            else f"nothing in the {self.quiet_s:g} s after the response",
        )

    # --- the groups --------------------------------------------------------------------

    async def _negotiation(self) -> None:
        for version, rule_id in (
            (1, "initialize-version"),
            (65535, "initialize-unsupported-version"),
        ):
            probe = await self._probe()
            try:
                response = await probe.initialize(version)
            except TimeoutError:
                self._find(rule_id, Verdict.FAIL, f"no answer to initialize({version})")
                continue
            finally:
                await self._finish(probe)
            answered = (response.get("result") or {}).get("protocolVersion")
            if version == 1:
                ok = answered == 1
            else:
                ok = isinstance(answered, int) and answered != version
            self._find(
                rule_id,
                Verdict.PASS if ok else Verdict.FAIL,
                f"initialize({version}) -> protocolVersion {answered!r}"
                + ("" if "result" in response else f"; error {response.get('error')}"),
            )

    async def _sessions(self) -> None:
        probe = await self._probe()
        try:
            capabilities = (await self._ready(probe)).get("agentCapabilities") or {}
            first, second = await self._new(probe), await self._new(probe)
            self._find(
                "session-new-unique-ids",
                Verdict.PASS if first != second else Verdict.FAIL,
                f"two session/new -> {first!r}, {second!r}",
            )
            await self._protocol_probes(probe)
            await self._prompt_rules(probe, first)
            await self._session_methods(probe, capabilities.get("sessionCapabilities") or {})
        except _Inconclusive as exc:
            self._undecided("session-new-unique-ids", "prompt-updates-session-id", why=str(exc))
        except (TimeoutError, PeerError) as exc:
            self._find("session-new-unique-ids", Verdict.INCONCLUSIVE, _gone(exc, probe))
        finally:
            await self._finish(probe)

    async def _protocol_probes(self, probe: Probe) -> None:
        try:
            answer = await probe.raw_request("_acp_agent_check/probe", {})
            self._find("extension-request-answered", Verdict.PASS, f"answered: {_short(answer)}")
        except TimeoutError:
            self._find(
                "extension-request-answered", Verdict.FAIL, "no response to _acp_agent_check/probe"
            )
        try:
            answer = await probe.raw_request("acp_agent_check/unknown", {})
            code = (answer.get("error") or {}).get("code")
            self._find(
                "unknown-method-32601",
                Verdict.PASS if code == MethodNotFound.CODE else Verdict.FAIL,
                f"acp_agent_check/unknown -> {_short(answer)}",
            )
        except TimeoutError:
            self._find("unknown-method-32601", Verdict.FAIL, "no response to an unknown method")
        sent_at = time.monotonic()
        probe.raw_send({"jsonrpc": "2.0", "method": "acp_agent_check/notified", "params": {}})
        try:
            await probe.raw_request("_acp_agent_check/after-notification", {})
        except TimeoutError:
            self._find(
                "unknown-notification-ignored",
                Verdict.FAIL,
                "after an unknown notification the agent answered nothing more",
            )
            return
        replies = [
            r.message
            for r in probe.received
            if r.at > sent_at
            and isinstance(r.message, dict)
            and "method" not in r.message
            and r.message.get("id") is None
        ]
        self._find(
            "unknown-notification-ignored",
            Verdict.FAIL if replies else Verdict.PASS,
            f"replied to a notification: {_short(replies[0])}"
            if replies
            else "no reply to acp_agent_check/notified; the next request was answered",
        )

    async def _prompt_rules(self, probe: Probe, session_id: str) -> None:
        began = time.monotonic()
        try:
            await self._prompt(probe, session_id, self.prompt)
        except _Inconclusive as exc:
            self._undecided(
                "prompt-updates-session-id", "nothing-after-prompt-response", why=str(exc)
            )
            return
        answered = time.monotonic()
        # The turn's own updates; a session-level one (commands, title) of another
        # session may be late from its session/new and is no part of this prompt.
        during = [
            r.message
            for r in probe.updates(since=began)
            if r.at <= answered and _update_kind(r.message) in _TURN_UPDATES
        ]
        foreign = [m for m in during if (m.get("params") or {}).get("sessionId") != session_id]
        self._find(
            "prompt-updates-session-id",
            Verdict.FAIL if foreign else Verdict.PASS if during else Verdict.INCONCLUSIVE,
            f"an update of another session during the prompt: {_short(foreign[0])}"
            if foreign
            else f"{len(during)} update(s), all of {session_id}"
            if during
            else "the prompt sent no updates",
        )
        await self._nothing_after(probe, session_id, answered, "nothing-after-prompt-response")

    async def _session_methods(self, probe: Probe, session_caps: dict[str, Any]) -> None:
        created = await self._new(probe)
        if "list" not in session_caps:
            self._find(
                "list-sessions", Verdict.NOT_APPLICABLE, "sessionCapabilities.list not advertised"
            )
        else:
            listed = await probe.raw_request(methods.SESSION_LIST, {})
            ids = [s.get("sessionId") for s in (listed.get("result") or {}).get("sessions") or []]
            self._find(
                "list-sessions",
                Verdict.PASS if created in ids else Verdict.FAIL,
                f"session/list -> {len(ids)} session(s); {created} "
                + ("listed" if created in ids else f"missing: {_short(listed)}"),
            )
        if "close" not in session_caps:
            self._find(
                "close-session", Verdict.NOT_APPLICABLE, "sessionCapabilities.close not advertised"
            )
        else:
            closed = await probe.raw_request(methods.SESSION_CLOSE, {"sessionId": created})
            result = closed.get("result")
            ok = isinstance(result, dict) and set(result) <= {"_meta"}
            self._find(
                "close-session",
                Verdict.PASS if ok else Verdict.FAIL,
                f"session/close -> {_short(closed)}",
            )
        if "delete" not in session_caps:
            self._find(
                "delete-session",
                Verdict.NOT_APPLICABLE,
                "sessionCapabilities.delete not advertised",
            )
            return
        deleted = await probe.raw_request(methods.SESSION_DELETE, {"sessionId": created})
        unknown = await probe.raw_request(
            methods.SESSION_DELETE, {"sessionId": "sess_acp_agent_check_unknown"}
        )
        still = False
        if "list" in session_caps:
            listed = await probe.raw_request(methods.SESSION_LIST, {})
            still = created in [
                s.get("sessionId") for s in (listed.get("result") or {}).get("sessions") or []
            ]
        problems = [
            text
            for failed, text in (
                ("result" not in deleted, f"session/delete -> {_short(deleted)}"),
                ("result" not in unknown, f"deleting an unknown id -> {_short(unknown)}"),
                (still, f"{created} still listed after session/delete"),
            )
            if failed
        ]
        self._find(
            "delete-session",
            Verdict.FAIL if problems else Verdict.PASS,
            "; ".join(problems) or "deleted, gone from the list; an unknown id deleted quietly",
        )

    async def _cancel(self) -> None:
        probe = await self._probe()
        try:
            await self._ready(probe)
            session_id = await self._new(probe)
            began = time.monotonic()
            prompt = asyncio.ensure_future(self._prompt(probe, session_id, CANCEL_PROMPT))
            deadline = began + min(self.timeout_s, 10.0)
            while not prompt.done() and not probe.updates(session_id, since=began):
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.02)
            if prompt.done():
                response = prompt.result()  # raises _Inconclusive when no model answered
                raise _Inconclusive(
                    f"the prompt ended before it could be cancelled: {_short(response)}"
                )
            probe.raw_send(
                {
                    "jsonrpc": "2.0",
                    "method": methods.SESSION_CANCEL,
                    "params": {"sessionId": session_id},
                }
            )
            try:
                response = await prompt
            except TimeoutError:
                self._find(
                    "cancel-resolves-cancelled",
                    Verdict.FAIL,
                    "the prompt was not answered after session/cancel",
                )
                return
            answered = time.monotonic()
            stop = (response.get("result") or {}).get("stopReason")
            self._find(
                "cancel-resolves-cancelled",
                Verdict.PASS if stop == "cancelled" else Verdict.FAIL,
                f"after session/cancel the prompt answered {_short(response)}",
            )
            rule_id = "nothing-after-cancelled-response"
            await self._nothing_after(probe, session_id, answered, rule_id)
        except _Inconclusive as exc:
            self._undecided(
                "cancel-resolves-cancelled", "nothing-after-cancelled-response", why=str(exc)
            )
        except (TimeoutError, PeerError) as exc:
            self._find("cancel-resolves-cancelled", Verdict.INCONCLUSIVE, _gone(exc, probe))
        finally:
            await self._finish(probe)

    async def _persistence(self) -> None:
        maker = await self._probe()
        prompted: str | None = None
        try:
            result = await self._ready(maker)
            capabilities = result.get("agentCapabilities") or {}
            never = await self._new(maker)
            candidate = await self._new(maker)
            try:
                await self._prompt(maker, candidate, self.prompt)
                prompted = candidate
            except _Inconclusive as exc:
                self._undecided(
                    "load-replays-before-response", "nothing-after-load-response", why=str(exc)
                )
        except (_Inconclusive, TimeoutError, PeerError) as exc:
            self._undecided("load-never-prompted", "resume-never-prompted", why=str(exc))
            return
        finally:
            await self._finish(maker)
        load = bool(capabilities.get("loadSession"))
        resume = "resume" in (capabilities.get("sessionCapabilities") or {})
        if not load:
            for rule_id in (
                "load-replays-before-response",
                "nothing-after-load-response",
                "load-never-prompted",
            ):
                self._find(rule_id, Verdict.NOT_APPLICABLE, "loadSession not advertised")
        else:
            await self._reopen(methods.SESSION_LOAD, prompted, never)
        if not resume:
            for rule_id in ("resume-replays-nothing", "resume-never-prompted"):
                self._find(
                    rule_id, Verdict.NOT_APPLICABLE, "sessionCapabilities.resume not advertised"
                )
        else:
            await self._reopen(methods.SESSION_RESUME, prompted, never)

    async def _reopen(self, method: str, prompted: str | None, never: str) -> None:
        """Load or resume, in a fresh process, the prompted and the never-prompted session."""
        probe = await self._probe()
        loading = method == methods.SESSION_LOAD
        try:
            await self._ready(probe)
            for session_id in (prompted, never):
                if session_id is None:
                    continue
                began = time.monotonic()
                params = {"sessionId": session_id, "cwd": str(self._scratch), "mcpServers": []}
                response = await probe.raw_request(method, params)
                answered = time.monotonic()
                ok = isinstance(response.get("result"), dict)
                before = [
                    r.message for r in probe.updates(session_id, since=began) if r.at <= answered
                ]
                if session_id == never:
                    self._find(
                        "load-never-prompted" if loading else "resume-never-prompted",
                        Verdict.PASS if ok else Verdict.FAIL,
                        f"{method} of a never-prompted session -> "
                        + ("answered" if ok else _short(response)),
                    )
                    continue
                if not ok:
                    rule_id = (
                        "load-replays-before-response" if loading else "resume-replays-nothing"
                    )
                    self._find(rule_id, Verdict.FAIL, f"{method} -> {_short(response)}")
                    continue
                if loading:
                    self._find(
                        "load-replays-before-response",
                        Verdict.PASS if before else Verdict.FAIL,
                        f"{len(before)} update(s) replayed before the response",
                    )
                    rule_id = "nothing-after-load-response"
                    await self._nothing_after(probe, session_id, answered, rule_id)
                else:
                    chunks = [m for m in before if _update_kind(m) in _MESSAGE_CHUNKS]
                    self._find(
                        "resume-replays-nothing",
                        Verdict.FAIL if chunks else Verdict.PASS,
                        f"replayed before the response: {_short(chunks[0])}"
                        if chunks
                        else "no message chunks before the response",
                    )
        except (_Inconclusive, TimeoutError, PeerError) as exc:
            rule_id = "load-never-prompted" if loading else "resume-never-prompted"
            self._find(rule_id, Verdict.INCONCLUSIVE, str(exc) or type(exc).__name__)
        finally:
            await self._finish(probe)

    # --- every message -------------------------------------------------------------------

    def _judge_every_message(self) -> None:
        validator = WireValidator()
        not_json: list[bytes] = []
        invalid: list[str] = []
        undefined: list[str] = []
        unadvertised: list[tuple[str, Any]] = []
        for probe in self._probes:
            not_json.extend(probe.not_json)
            unadvertised.extend(probe.unadvertised_calls)
            lines = [r.line for r in probe.received if r.message is not None]
            for problem in validator.problems(probe.sent, lines):
                (undefined if UNDEFINED_KEY in problem else invalid).append(problem)
        checked = sum(len(p.received) for p in self._probes)
        self._find(
            "stdout-json-rpc",
            Verdict.FAIL if not_json else Verdict.PASS,
            f"not JSON: {not_json[0][:200]!r}" if not_json else f"{checked} line(s), all JSON",
        )
        self._find(
            "schema-valid",
            Verdict.FAIL if invalid else Verdict.PASS,
            invalid[0][:300] if invalid else f"{checked} line(s) valid",
        )
        self._find(
            "schema-no-unknown-keys",
            Verdict.FAIL if undefined else Verdict.PASS,
            undefined[0][:300] if undefined else "no undefined keys",
        )
        self._find(
            "no-unadvertised-client-calls",
            Verdict.FAIL if unadvertised else Verdict.PASS,
            f"the agent called {unadvertised[0][0]}" if unadvertised else "none made",
        )
        slow = [e for e in self._exits if e is None or e > EXIT_BOUND_S]
        self._find(
            "exit-after-eof",
            Verdict.FAIL if slow else Verdict.PASS if self._exits else Verdict.INCONCLUSIVE,
            (
                f"still running {EXIT_BOUND_S + 0.5:g} s after stdin ended"
                if slow and slow[0] is None
                else f"exited {slow[0]:.1f} s after stdin ended"
                if slow
                else f"{len(self._exits)} exit(s), slowest {max(e or 0 for e in self._exits):.2f} s"
            ),
        )


def _update_kind(message: dict[str, Any]) -> Any:
    return ((message.get("params") or {}).get("update") or {}).get("sessionUpdate")


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "…"


def _gone(exc: BaseException, probe: Probe) -> str:
    tail = " | ".join(probe.stderr_tail[-3:])
    what = "no answer in time" if isinstance(exc, TimeoutError) else f"the agent went away ({exc})"
    return what + (f"; stderr: {tail}" if tail else "")
