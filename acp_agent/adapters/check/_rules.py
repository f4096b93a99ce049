"""The rules `acp-agent check` enforces, each with its level and the text it comes from.

A rule's level is the one its source gives (MUST or SHOULD). Sources: the ACP
specification as summarised in `research/acp-spec.md` (section names below), the
ACP JSON Schema vendored in `protocol/schema/`, JSON-RPC 2.0, and the ACP
conformance kit's rule ids where it has one. A `Finding` is one rule's verdict on
one agent, with the evidence: the offending message, or what was waited for.
"""

from __future__ import annotations

import enum
from typing import Final

import attrs

from acp_agent.records import Record

__all__ = ("RULES", "Finding", "Level", "Rule", "Verdict", "rule")


class Level(enum.StrEnum):
    MUST = "MUST"
    SHOULD = "SHOULD"


class Verdict(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"
    #: The rule could not be decided (no model answered, a prerequisite failed).
    INCONCLUSIVE = "inconclusive"
    #: The agent does not advertise what the rule is about.
    NOT_APPLICABLE = "not applicable"


@attrs.frozen
class Rule(Record):
    id: str
    level: Level
    #: What it requires, in a line.
    text: str
    #: Where that is written.
    source: str


@attrs.frozen
class Finding(Record):
    rule: Rule
    verdict: Verdict
    evidence: str


_SPEC: Final = "ACP spec (research/acp-spec.md)"

RULES: Final = (
    Rule(
        "stdout-json-rpc",
        Level.MUST,
        "stdout carries only JSON-RPC messages, one per line",
        f"{_SPEC} §1 Transport: stdout is for ACP messages only; NDJSON framing",
    ),
    Rule(
        "schema-valid",
        Level.MUST,
        "every message the agent writes is valid against the ACP schema and JSON-RPC 2.0",
        "ACP JSON Schema (protocol/schema/schema.json); JSON-RPC 2.0 §4-5",
    ),
    Rule(
        "schema-no-unknown-keys",
        Level.SHOULD,
        "no keys the schema does not define; extensions go in _meta",
        f"{_SPEC} §14 _meta and extensibility",
    ),
    Rule(
        "initialize-version",
        Level.MUST,
        "initialize with protocolVersion 1 is answered with 1",
        f"{_SPEC} §4 Version negotiation",
    ),
    Rule(
        "initialize-unsupported-version",
        Level.MUST,
        "an unsupported protocolVersion is answered with the agent's own, never echoed",
        f"{_SPEC} §4 Version negotiation (conformance kit ACP-INIT-003)",
    ),
    Rule(
        "session-new-unique-ids",
        Level.MUST,
        "each session/new answers a new, unique sessionId",
        f"{_SPEC} §6 session/new (ACP-SESSION-002)",
    ),
    Rule(
        "prompt-updates-session-id",
        Level.MUST,
        "the updates of a prompt carry the prompt's sessionId",
        f"{_SPEC} §8 session/update",
    ),
    Rule(
        "nothing-after-prompt-response",
        Level.MUST,
        "no session/update for a session follows its prompt's response",
        f"{_SPEC} §6 session/prompt: sent only when the turn is over, all updates sent",
    ),
    Rule(
        "cancel-resolves-cancelled",
        Level.MUST,
        "after session/cancel the prompt is answered with stopReason cancelled",
        f"{_SPEC} §12 Cancellation (ACP-CANCEL-001)",
    ),
    Rule(
        "nothing-after-cancelled-response",
        Level.MUST,
        "no session/update follows a cancelled prompt's response",
        f"{_SPEC} §12 Cancellation (ACP-CANCEL-002)",
    ),
    Rule(
        "load-replays-before-response",
        Level.MUST,
        "session/load replays the conversation before its response",
        f"{_SPEC} §6 session/load: replay rule",
    ),
    Rule(
        "nothing-after-load-response",
        Level.MUST,
        "no session/update follows a session/load response",
        f"{_SPEC} §6 session/load (ACP-LOAD-002)",
    ),
    Rule(
        "load-never-prompted",
        Level.MUST,
        "a session that was never prompted can be loaded",
        f"{_SPEC} §6 session/load: clients may load a session an earlier process made",
    ),
    Rule(
        "resume-replays-nothing",
        Level.MUST,
        "session/resume sends no message chunks before its response",
        f"{_SPEC} §6 session/resume (ACP-RESUME-002)",
    ),
    Rule(
        "resume-never-prompted",
        Level.MUST,
        "a session that was never prompted can be resumed",
        f"{_SPEC} §6 session/resume",
    ),
    Rule(
        "list-sessions",
        Level.MUST,
        "session/list answers a sessions array that includes a session just made",
        f"{_SPEC} §6 session/list (ACP-LIST-002)",
    ),
    Rule(
        "close-session",
        Level.MUST,
        "session/close of an open session answers {}",
        f"{_SPEC} §6 session/close",
    ),
    Rule(
        "delete-session",
        Level.MUST,
        "a deleted session is gone from later lists; an unknown id deletes quietly",
        f"{_SPEC} §6 session/delete",
    ),
    Rule(
        "extension-request-answered",
        Level.MUST,
        "a request whose method starts with _ gets a response",
        f"{_SPEC} §2 JSON-RPC rules (ACP-EXT-001)",
    ),
    Rule(
        "unknown-method-32601",
        Level.SHOULD,
        "an unknown method is answered with -32601 Method not found",
        f"{_SPEC} §2 JSON-RPC rules (ACP-JSONRPC-004); JSON-RPC 2.0 §5.1",
    ),
    Rule(
        "unknown-notification-ignored",
        Level.MUST,
        "an unknown notification gets no response and the agent keeps serving",
        "JSON-RPC 2.0 §4.1: the server MUST NOT reply to a notification",
    ),
    Rule(
        "no-unadvertised-client-calls",
        Level.MUST,
        "no fs/* or terminal/* requests to a client that did not advertise them",
        f"{_SPEC} §7 Client-side methods: gated by clientCapabilities",
    ),
    Rule(
        "exit-after-eof",
        Level.SHOULD,
        "the agent exits within 2 s of the end of its stdin",
        f"{_SPEC} §1 Transport (ACP-SHUTDOWN-001)",
    ),
)

_BY_ID: Final = {r.id: r for r in RULES}


def rule(rule_id: str) -> Rule:
    """The rule named `rule_id` (`KeyError` for an unknown one)."""
    return _BY_ID[rule_id]
