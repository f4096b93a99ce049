"""The rules `acp-agent check` enforces: each with its level and the text it enforces.

A rule's level is the one its cited text gives: MUST only where the specification
says MUST (or MUST NOT), SHOULD otherwise. Every citation is something a user can
open: a page of the ACP specification (`SPEC_PAGES`), the JSON-RPC 2.0
specification the ACP overview defers to, or a file shipped in this repository.
Where the ACP conformance kit (acp-tck) has a requirement for the same thing, the
rule names it; where the rule deliberately checks more than the kit does, `beyond`
says what, and the report says so. A `Finding` is one rule's verdict on one agent,
with its evidence lines.
"""

from __future__ import annotations

import enum
from typing import Final

import attrs

from acp_agent.values import Value

__all__ = (
    "JSON_RPC",
    "RULES",
    "SPEC_PAGES",
    "SPEC_SITE",
    "Cite",
    "Finding",
    "Level",
    "Rule",
    "Verdict",
    "rule",
)

#: The ACP specification's public site; its v1 pages are `SPEC_SITE + page`.
SPEC_SITE: Final = "https://agentclientprotocol.com/protocol/v1/"
#: The pages of the v1 specification (its site's navigation).
SPEC_PAGES: Final = frozenset(
    {
        "overview",
        "initialization",
        "authentication",
        "session-setup",
        "session-list",
        "session-delete",
        "prompt-turn",
        "content",
        "tool-calls",
        "elicitation",
        "file-system",
        "cancellation",
        "terminals",
        "agent-plan",
        "session-modes",
        "session-config-options",
        "slash-commands",
        "extensibility",
        "transports",
        "schema",
    }
)
#: The JSON-RPC 2.0 specification, which the ACP overview's error handling links to.
JSON_RPC: Final = "https://www.jsonrpc.org/specification"


class Level(enum.StrEnum):
    MUST = "MUST"
    SHOULD = "SHOULD"


class Verdict(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"
    #: Nothing to judge: a prerequisite failed, no model answered, the agent went away.
    INCONCLUSIVE = "inconclusive"
    #: The agent does not advertise what the rule is about.
    NOT_APPLICABLE = "not applicable"


@attrs.frozen
class Cite(Value):
    """One sentence a rule enforces, and where it is written."""

    #: A page of `SPEC_PAGES`, a full URL, or a path in this repository.
    where: str
    quote: str

    @property
    def url(self) -> str:
        """Where a person opens it."""
        return SPEC_SITE + self.where if self.where in SPEC_PAGES else self.where

    def __str__(self) -> str:
        return f'{self.url}: "{self.quote}"'


@attrs.frozen
class Rule(Value):
    id: str
    level: Level
    #: What it requires, in a line.
    text: str
    cites: tuple[Cite, ...]
    #: The conformance kit's requirement ids for the same thing ("" when it has none).
    kit: str = ""
    #: What this rule checks that the kit does not ("" when nothing).
    beyond: str = ""
    #: Why the level is what it is, where that needs saying.
    note: str = ""

    @property
    def source(self) -> str:
        """Every citation, and how the rule stands to the kit, in a line."""
        parts = [str(c) for c in self.cites]
        if self.kit:
            parts.append(f"conformance kit {self.kit}")
        if self.beyond:
            parts.append(f"beyond the kit: {self.beyond}")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


@attrs.frozen
class Finding(Value):
    rule: Rule
    verdict: Verdict
    #: What was seen, one line each (the first says it all when there is one).
    evidence: tuple[str, ...]


def _r(
    rule_id: str,
    level: Level,
    text: str,
    *cites: tuple[str, str],
    kit: str = "",
    beyond: str = "",
    note: str = "",
) -> Rule:
    return Rule(rule_id, level, text, tuple(Cite(w, q) for w, q in cites), kit, beyond, note)


_TRANSPORT_MUST: Final = (
    "transports",
    "The agent MUST NOT write anything to its stdout that is not a valid ACP message.",
)
_SESSION_MUST_NOT_REPLAY: Final = (
    "session-setup",
    "Unlike session/load, the Agent MUST NOT replay the conversation history via "
    "session/update notifications before responding.",
)
_BOTH_CONTEXTS: Final = "checked in a fresh process as well as on the same connection"

MUST, SHOULD = Level.MUST, Level.SHOULD

RULES: Final = (
    _r(
        "stdout-json-rpc",
        MUST,
        "stdout carries only JSON-RPC messages, one per line",
        _TRANSPORT_MUST,
        (
            "transports",
            "Messages are delimited by newlines (\\n), and MUST NOT contain embedded newlines.",
        ),
        kit="ACP-TRANSPORT-001",
    ),
    _r(
        "schema-valid",
        MUST,
        "every message the agent writes is valid against the ACP schema and JSON-RPC 2.0",
        _TRANSPORT_MUST,
        ("protocol/schema/schema.json", "the ACP JSON Schema, v1"),
        kit="ACP-SCHEMA-001",
        beyond="every message of every process, not only those of a basic exchange",
    ),
    _r(
        "schema-no-unknown-keys",
        SHOULD,
        "no keys the schema does not define; extensions go in _meta",
        (
            "extensibility",
            "Implementations MUST NOT add any custom fields at the root of a type that's part "
            "of the specification.",
        ),
        kit="ACP-SCHEMA-002 (advisory)",
        beyond="nested objects too",
        note="SHOULD, as the kit holds it advisory: the schema leaves objects open, so which "
        "keys it defines is a reading of it",
    ),
    _r(
        "response-ids-echoed",
        MUST,
        "every response carries the id of a request, as sent (number or string)",
        (JSON_RPC, "It MUST be the same as the value of the id member in the Request Object."),
        kit="ACP-JSONRPC-001",
    ),
    _r(
        "initialize-version",
        MUST,
        "initialize with protocolVersion 1 is answered with 1",
        (
            "initialization",
            "If the Agent supports the requested version, it MUST respond with the same version.",
        ),
        kit="ACP-INIT-002",
    ),
    _r(
        "initialize-unsupported-version",
        MUST,
        "an unsupported protocolVersion is answered with the agent's own, never echoed",
        (
            "initialization",
            "Otherwise, the Agent MUST respond with the latest version it supports.",
        ),
        kit="ACP-INIT-003",
    ),
    _r(
        "agent-info",
        SHOULD,
        "initialize answers agentInfo with a name and a version",
        ("initialization", "It SHOULD also provide a name and version to the Client as well"),
        kit="ACP-INIT-004 (advisory)",
    ),
    _r(
        "auth-methods",
        MUST,
        "no terminal auth method to a client that did not advertise auth.terminal",
        (
            "initialization",
            "Clients and Agents MUST treat all capabilities omitted in the initialize request "
            "as UNSUPPORTED.",
        ),
        (
            "authentication",
            "An Agent may advertise a terminal method only when this capability is true.",
        ),
        kit="ACP-AUTH-002",
    ),
    _r(
        "session-new-unique-ids",
        MUST,
        "each session/new answers a new, unique sessionId",
        (
            "session-setup",
            "The Agent MUST respond with a unique Session ID that identifies this conversation",
        ),
        kit="ACP-SESSION-001, ACP-SESSION-002",
    ),
    _r(
        "prompt-updates-session-id",
        SHOULD,
        "the message and tool-call updates sent during a prompt carry the prompt's sessionId",
        ("schema", "sessionId: The ID of the session this update pertains to."),
        kit="ACP-PROMPT-002 (mandatory there)",
        note="SHOULD: no text says MUST",
    ),
    _r(
        "nothing-after-prompt-response",
        SHOULD,
        "no message or tool-call update of a session follows its prompt's response",
        (
            "prompt-turn",
            "If there are no pending tool calls, the turn ends and the Agent MUST respond to the "
            "original session/prompt request with a StopReason",
        ),
        beyond="the kit checks this only after a cancelled prompt",
        note="SHOULD: the text says the response ends the turn, not what may follow it",
    ),
    _r(
        "prompt-content",
        MUST,
        "a prompt of text and a resource_link is answered with a stop reason",
        (
            "initialization",
            "As a baseline, all Agents MUST support ContentBlock::Text and "
            "ContentBlock::ResourceLink in session/prompt requests.",
        ),
        kit="ACP-PROMPT-001, ACP-PROMPT-003 (advisory there)",
    ),
    _r(
        "prompt-capabilities",
        SHOULD,
        "a prompt with each content kind the agent advertises (image, audio, resource) is answered",
        (
            "initialization",
            "Optionally, they MAY support richer types of content by specifying the following "
            "capabilities",
        ),
        kit="ACP-PROMPTCAP-001, -002, -003",
        note="one prompt carries every advertised kind, where the kit sends one each",
    ),
    _r(
        "cancel-resolves-cancelled",
        MUST,
        "after session/cancel the prompt is answered with stopReason cancelled",
        (
            "prompt-turn",
            "After all ongoing operations have been successfully aborted and pending updates have "
            "been sent, the Agent MUST respond to the original session/prompt request with the "
            "cancelled stop reason.",
        ),
        kit="ACP-CANCEL-001",
    ),
    _r(
        "nothing-after-cancelled-response",
        MUST,
        "no message or tool-call update follows a cancelled prompt's response",
        (
            "prompt-turn",
            "The Agent MAY send session/update notifications with content or tool call updates "
            "after receiving the session/cancel notification, but it MUST ensure that it does so "
            "before responding to the session/prompt request.",
        ),
        kit="ACP-CANCEL-002",
        note="narrower than the kit: session-level updates (title, commands, usage) after it "
        "are shown, not failed, as the text speaks of content and tool call updates",
    ),
    _r(
        "close-cancels-prompt",
        MUST,
        "session/close during a prompt ends the prompt with stopReason cancelled",
        (
            "session-setup",
            "The Agent MUST cancel any ongoing work for that session as if session/cancel had been "
            "called, then free the resources associated with the session.",
        ),
        kit="ACP-CLOSE-002",
    ),
    _r(
        "load-replays-before-response",
        MUST,
        "session/load replays the conversation before its response",
        (
            "session-setup",
            "The Agent MUST replay the entire conversation to the Client in the form of "
            "session/update notifications (like session/prompt).",
        ),
        kit="ACP-LOAD-001",
        beyond="asks for at least one replayed update of a prompted session; " + _BOTH_CONTEXTS,
    ),
    _r(
        "nothing-after-load-response",
        MUST,
        "no replayed message or tool-call update follows a session/load response",
        (
            "session-setup",
            "When all the conversation entries have been streamed to the Client, the Agent MUST "
            "respond to the original session/load request.",
        ),
        kit="ACP-LOAD-002",
        beyond=_BOTH_CONTEXTS,
    ),
    _r(
        "load-never-prompted",
        SHOULD,
        "a session that was never prompted can be loaded",
        (
            "session-setup",
            "This feature enables persistence across restarts and sharing sessions between "
            "different Client instances.",
        ),
        kit="ACP-LOAD-003 (advisory)",
        beyond=_BOTH_CONTEXTS,
    ),
    _r(
        "resume-replays-nothing",
        MUST,
        "session/resume sends no message chunks before its response",
        _SESSION_MUST_NOT_REPLAY,
        kit="ACP-RESUME-002",
        beyond=_BOTH_CONTEXTS,
    ),
    _r(
        "resume-never-prompted",
        SHOULD,
        "a session that was never prompted can be resumed",
        (
            "session-setup",
            "Agents that advertise sessionCapabilities.resume allow Clients to reconnect to an "
            "existing session without replaying the conversation history.",
        ),
        kit="ACP-RESUME-001 (a capability requirement there)",
        beyond=_BOTH_CONTEXTS,
        note="SHOULD: no text says MUST",
    ),
    _r(
        "list-sessions",
        MUST,
        "session/list answers a sessions array, an empty one for a cwd no session has",
        (
            "session-list",
            "The Agent MUST respond with a list of sessions and optional pagination metadata",
        ),
        (
            "session-list",
            "When no sessions match the criteria, the Agent MUST return an empty sessions array.",
        ),
        kit="ACP-LIST-001, ACP-LIST-002",
    ),
    _r(
        "list-finds-sessions",
        SHOULD,
        "a prompted session is listed, on its own connection and by a fresh process",
        (
            "session-list",
            "The session/list method allows Clients to discover sessions known to an Agent.",
        ),
        beyond="the kit does not look for a known session in the list",
    ),
    _r(
        "close-session",
        SHOULD,
        "session/close of an open, idle session answers {}",
        ("session-setup", "On success, the Agent responds with an empty result object"),
        kit="ACP-CLOSE-001 (a capability requirement there)",
        note="SHOULD: no text says MUST",
    ),
    _r(
        "delete-session",
        SHOULD,
        "session/delete answers {} and the session is gone from later lists",
        ("session-delete", "Deleted sessions no longer appear in future session/list results."),
        kit="ACP-DELETE-001",
        beyond="looks for the deleted session in a later list",
    ),
    _r(
        "delete-unknown-quietly",
        SHOULD,
        "deleting a session that never existed succeeds",
        (
            "session-delete",
            "Deleting an already-deleted session, or a session that never existed, SHOULD "
            "succeed silently.",
        ),
        kit="ACP-DELETE-002 (advisory)",
    ),
    _r(
        "session-modes",
        SHOULD,
        "the current mode is one of those offered; session/set_mode to another answers {}",
        (
            "session-modes",
            "The current mode can be changed at any point during a session, whether the Agent is "
            "idle or generating a response.",
        ),
        kit="ACP-MODES-001, ACP-MODES-002",
    ),
    _r(
        "config-options",
        MUST,
        "set_config_option answers every option, the new value set; no boolean options unasked",
        (
            "session-config-options",
            "The Agent MUST respond with the complete list of all configuration options and "
            "their current values",
        ),
        (
            "session-config-options",
            'Agents MUST NOT include type: "boolean" options in configOptions payloads unless '
            "the Client advertised support.",
        ),
        kit="ACP-CONFIG-001, -002, -003",
    ),
    _r(
        "additional-directories",
        SHOULD,
        "session/new with an absolute additionalDirectories entry is accepted",
        (
            "session-setup",
            "Agents that advertise sessionCapabilities.additionalDirectories allow Clients to "
            "include additionalDirectories on supported session lifecycle requests",
        ),
        kit="ACP-ADDDIRS-001 (a capability requirement there)",
        note="SHOULD: no text says MUST",
    ),
    _r(
        "extension-request-answered",
        MUST,
        "a request whose method starts with _ gets a response",
        (
            "extensibility",
            "Upon receiving a custom request, implementations MUST respond accordingly with the "
            "provided id",
        ),
        kit="ACP-EXT-001",
    ),
    _r(
        "unknown-method-32601",
        SHOULD,
        "an unknown method is answered with -32601 Method not found",
        (
            "extensibility",
            "If the receiving end doesn't recognize the custom method name, it should respond "
            'with the standard "Method not found" error',
        ),
        kit="ACP-JSONRPC-004 (advisory)",
        beyond="asks it of a method outside the _ namespace too (JSON-RPC 2.0's -32601)",
    ),
    _r(
        "unknown-notification-ignored",
        MUST,
        "an unknown notification gets no response and the agent keeps serving",
        ("overview", "Notifications never receive responses (success or error)"),
        (JSON_RPC, "The Server MUST NOT reply to a Notification"),
        ("extensibility", "implementations SHOULD ignore unrecognized notifications."),
        kit="ACP-JSONRPC-003",
    ),
    _r(
        "no-unadvertised-client-calls",
        MUST,
        "no fs/*, terminal/* or elicitation/create requests to a client that offered none",
        (
            "file-system",
            "If readTextFile or writeTextFile is false or not present, the Agent MUST NOT attempt "
            "to call the corresponding filesystem method.",
        ),
        (
            "terminals",
            "If terminal is false or not present, the Agent MUST NOT attempt to call any terminal "
            "methods.",
        ),
        kit="ACP-CLIENTCAP-001, -002, -003",
    ),
    _r(
        "exit-after-eof",
        SHOULD,
        "the agent exits within 2 s of the end of its stdin",
        ("transports", "Client->>Agent Process: Close stdin, terminate subprocess (its diagram)"),
        kit="ACP-SHUTDOWN-001 (advisory)",
    ),
)

_BY_ID: Final = {r.id: r for r in RULES}


def rule(rule_id: str) -> Rule:
    """The rule named `rule_id` (`KeyError` for an unknown one)."""
    return _BY_ID[rule_id]
