"""The messages a projection is made of: a branch's events as the model reads them.

Events become messages like this (every rendering is a pure function of the
events, so the same history always gives the same bytes, and a message
never changes once later events arrive: the provider's prompt cache holds):

=============================== ===============================================
events                          message
=============================== ===============================================
`UserInputAdopted`              user: the person's text untagged, attachments as
                                `<attachment>`, images as images
`ModelRequestStarted` ...       assistant: reasoning, text and tool calls of one
(deltas, `ToolCallRequested`)   reply, in order
`ToolResultRecorded`            user: the results for every call of the reply
                                before it, in call order (once all are in); their
                                runtime tag names neutralized (`tags`)
state, rule, notification,      user: one tagged text part each, a message per
branch message facts            batch; facts recorded while a reply or its tool
                                calls are open join the results message after
                                the results (nothing may separate a tool call
                                from its result)
`CompactionRecorded`            user: `<summary>` and `<restatement>` in place of
                                everything up to `covers_lte`
`ConversationRewound`           user: a `<notification>` that the conversation was
                                rewound (files put back, what was not undone);
                                history from its anchor up to it is left out,
                                except rules, state and the guide, which hold
=============================== ===============================================

Facts the model does not read (permissions, turn endings, progress) are
skipped. `MessageBuilder` is the state machine of this table; `Projection`
(`_projection`) feeds it, and notes what else the events say.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import attrs

from acp_agent.capabilities.context._notifications import render_notification
from acp_agent.capabilities.context._rules import render_rule_payload
from acp_agent.capabilities.context._state_sources import render_state, render_state_cleared
from acp_agent.capabilities.context._token_budget import estimate_message_tokens
from acp_agent.content import (
    ContentPart,
    ImageContent,
    ResourceContent,
    ResourceLinkContent,
    TextContent,
)
from acp_agent.core import (
    BranchMessageReceived,
    ConversationRewound,
    Event,
    ModelReasoningDelta,
    ModelReasoningEnded,
    ModelRequestFailed,
    ModelRequestFinished,
    ModelRequestInterrupted,
    ModelRequestStarted,
    ModelTextDelta,
    NotificationReceived,
    Payload,
    RuleExpired,
    RuleReplaced,
    RuleRevoked,
    RuleSet,
    StateCleared,
    StateSet,
    ToolCallRequested,
    ToolOutcome,
    ToolResultRecorded,
    UserInputAdopted,
    compact_json,
    encode_part,
)
from acp_agent.models import Image, Message, Part, Reasoning, Text, ToolCall, ToolResult
from acp_agent.toolkit import neutralize_runtime_tags, tag
from acp_agent.values import Value
from jsonbounds import TOO_DEEP, nesting_exceeds

__all__ = (
    "CONTEXT_FACTS",
    "MISSING_RESULT_TEXT",
    "REWIND_SOURCE",
    "SOURCED_FACTS",
    "MessageBuilder",
    "ProjectedMessage",
    "render_context_fact",
    "user_input_parts",
)

#: What the model reads for a call whose result was never recorded.
MISSING_RESULT_TEXT: Final = (
    "No result was recorded for this call: it may not have run, or may have been cut "
    "off. Check the state before trying again."
)
#: Facts folded into the rule and state ledgers.
SOURCED_FACTS: Final = (StateSet, StateCleared, RuleSet, RuleReplaced, RuleRevoked, RuleExpired)
#: Facts the model reads as tagged blocks.
CONTEXT_FACTS: Final = (
    *SOURCED_FACTS,
    NotificationReceived,
    BranchMessageReceived,
    ConversationRewound,
)
#: What the message builder folds (every other fact it passes over).
_BUILT_FROM: Final = frozenset(
    {
        ModelRequestStarted,
        ModelTextDelta,
        ModelReasoningDelta,
        ModelReasoningEnded,
        ToolCallRequested,
        ModelRequestFinished,
        ModelRequestFailed,
        ModelRequestInterrupted,
        ToolResultRecorded,
        UserInputAdopted,
        *CONTEXT_FACTS,
    }
)
#: The source a rewind's notification names.
REWIND_SOURCE: Final = "session/rewind"


@attrs.frozen
class ProjectedMessage(Value):
    """A message and the newest seq it renders (the cache prefix is decided by it)."""

    message: Message
    last_seq: int
    #: Its estimated tokens, worked out once: every later request carries it again.
    tokens: int = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "tokens", estimate_message_tokens(self.message))


def render_context_fact(payload: Payload) -> str | None:
    """The tagged block for a state, rule, notification or branch-message fact."""
    if isinstance(payload, StateSet):
        return render_state(payload.source, payload.value)
    if isinstance(payload, StateCleared):
        return render_state_cleared(payload.source)
    if isinstance(payload, NotificationReceived):
        return render_notification(payload.source, payload.text)
    if isinstance(payload, BranchMessageReceived):
        return tag("branch-message", [("from", payload.sender_branch_id)], payload.text)
    if isinstance(payload, ConversationRewound):
        return render_notification(REWIND_SOURCE, _rewind_text(payload))
    return render_rule_payload(payload)


def _rewind_text(rewound: ConversationRewound) -> str:
    lines = [
        "The person rewound the conversation to just before one of their messages: what "
        "came after it is no longer part of this conversation, and the files the agent "
        "had changed since are as they were then."
    ]
    if rewound.restored:
        lines.append("Put back: " + ", ".join(rewound.restored))
    if rewound.removed:
        lines.append("Removed (created after that message): " + ", ".join(rewound.removed))
    if rewound.not_undone:
        lines.append(
            "Not undone (these ran, and their effects remain): " + "; ".join(rewound.not_undone)
        )
    return "\n".join(lines)


def user_input_parts(content: Sequence[ContentPart]) -> list[Part]:
    """The person's content parts as message parts (a tool's kinds have no place here)."""
    parts: list[Part] = []
    for part in content:
        if isinstance(part, TextContent):
            if part.text:
                parts.append(Text(part.text))
        elif isinstance(part, ImageContent):
            if part.data:
                parts.append(Image(part.data, part.mime_type or "image/png"))
        elif isinstance(part, ResourceLinkContent):
            attributes = [("uri", part.uri)]
            if part.name:
                attributes.append(("name", part.name))
            parts.append(Text(tag("attachment", attributes)))
        elif isinstance(part, ResourceContent):
            attributes = [("uri", part.uri)]
            if part.mime_type:
                attributes.append(("mime", part.mime_type))
            parts.append(Text(tag("attachment", attributes, part.text or None)))
    return parts


def _result_text(payload: ToolResultRecorded) -> str:
    """What the model reads of a result: outside content, so no runtime tag survives in it."""
    return neutralize_runtime_tags(_raw_result_text(payload))


def _raw_result_text(payload: ToolResultRecorded) -> str:
    if payload.model_text is not None:
        return payload.model_text
    pieces = []
    for part in payload.content:
        if isinstance(part, TextContent):
            pieces.append(part.text)
        else:
            pieces.append(json.dumps(encode_part(part), ensure_ascii=False, sort_keys=True))
    text = "\n".join(pieces)
    if text:
        return text
    if payload.outcome is ToolOutcome.INTERRUPTED:
        return "The call was interrupted; it may have had effects."
    if payload.outcome is ToolOutcome.NOT_EXECUTED:
        return "The call was not executed."
    return "(no output)"


def _arguments_text(arguments: dict[str, Any]) -> str:
    if nesting_exceeds(arguments):
        # Only a store written before arguments were bounded at the edge holds these.
        arguments = {"__invalid_arguments__": f"(arguments {TOO_DEEP}; not shown)"}
    return compact_json(arguments)


@attrs.define
class _Reply:
    """An assistant reply being folded: its parts and its tool calls."""

    request_id: str
    last_seq: int
    parts: list[Part] = attrs.Factory(list)
    text: list[str] = attrs.Factory(list)
    reasoning: list[str] = attrs.Factory(list)
    calls: list[str] = attrs.Factory(list)
    #: The batch that ended the reply (its tool calls may still follow in it), or None.
    ended_batch: int | None = None

    def flush_text(self) -> None:
        if self.text:
            self.parts.append(Text("".join(self.text)))
            self.text.clear()

    def flush_reasoning(self, signature: str | None = None, redacted: bool = False) -> None:
        if self.reasoning or redacted:
            self.parts.append(Reasoning("".join(self.reasoning), signature, redacted))
            self.reasoning.clear()

    def message(self) -> Message | None:
        self.flush_reasoning()
        self.flush_text()
        return Message("assistant", self.parts) if self.parts else None

    def copy(self) -> _Reply:
        return attrs.evolve(
            self,
            parts=list(self.parts),
            text=list(self.text),
            reasoning=list(self.reasoning),
            calls=list(self.calls),
        )


class MessageBuilder:
    """The state machine of the table in the module docstring."""

    def __init__(self) -> None:
        self.messages: list[ProjectedMessage] = []
        self._reply: _Reply | None = None
        #: Calls of the last assistant message still waiting for their results.
        self._pending: list[str] = []
        self._results: dict[str, ToolResult] = {}
        self._results_seq = 0
        #: Facts held back while a reply or its calls are open: (text, seq).
        self._deferred: list[tuple[str, int]] = []
        #: The batch of the last message made of facts (later facts of it join it).
        self._facts_batch: int | None = None

    def copy(self) -> MessageBuilder:
        other = MessageBuilder()
        other.messages = list(self.messages)
        other._reply = self._reply.copy() if self._reply is not None else None
        other._pending = list(self._pending)
        other._results = dict(self._results)
        other._results_seq = self._results_seq
        other._deferred = list(self._deferred)
        other._facts_batch = self._facts_batch
        return other

    @property
    def at_rest(self) -> bool:
        """No reply is open with tool calls and no call waits for its result."""
        reply = self._reply
        open_reply = reply is not None and (reply.ended_batch is None or bool(reply.calls))
        return not open_reply and not self._pending

    def feed(self, event: Event) -> None:
        payload, seq = event.payload, event.seq
        reply = self._reply
        if type(payload) is ModelTextDelta:  # most events of a long history: a few steps
            if reply is not None and payload.request_id == reply.request_id:
                if reply.reasoning:
                    reply.flush_reasoning()
                reply.text.append(payload.text)
                reply.last_seq = seq
            return
        if type(payload) not in _BUILT_FROM:
            return  # a call's steps, a turn's end, a guide: nothing the model reads here
        mine = reply is not None and getattr(payload, "request_id", None) == reply.request_id
        if isinstance(payload, ModelRequestStarted):
            self.settle()
            self._reply = _Reply(payload.request_id, seq)
        elif isinstance(payload, ModelReasoningDelta):
            if mine and reply is not None:
                reply.flush_text()
                reply.reasoning.append(payload.text)
                reply.last_seq = seq
        elif isinstance(payload, ModelReasoningEnded):
            if mine and reply is not None:
                reply.flush_text()
                reply.flush_reasoning(payload.signature, payload.redacted)
                reply.last_seq = seq
        elif isinstance(payload, ToolCallRequested):
            if mine and reply is not None:
                reply.flush_reasoning()
                reply.flush_text()
                arguments = _arguments_text(payload.arguments)
                reply.parts.append(ToolCall(payload.call_id, payload.tool, arguments))
                reply.calls.append(payload.call_id)
                reply.last_seq = seq
        elif isinstance(
            payload, ModelRequestFinished | ModelRequestFailed | ModelRequestInterrupted
        ):
            if mine and reply is not None:
                reply.ended_batch = int(event.batch_id)
                reply.last_seq = seq
        elif isinstance(payload, ToolResultRecorded):
            self._close_reply()
            if payload.call_id in self._pending and payload.call_id not in self._results:
                self._results[payload.call_id] = ToolResult(
                    payload.call_id, _result_text(payload), payload.is_error
                )
                self._results_seq = seq
                if len(self._results) == len(self._pending):
                    self._emit_results()
        elif isinstance(payload, UserInputAdopted):
            self.settle()
            parts = user_input_parts(payload.content)
            if parts:
                self._append(Message("user", parts), seq)
        elif isinstance(payload, CONTEXT_FACTS):
            text = render_context_fact(payload)
            if text is None:
                return
            if reply is not None and reply.ended_batch not in (None, int(event.batch_id)):
                self._close_reply()  # the reply ended in an earlier batch: nothing joins it
            if self._reply is not None or self._pending:
                self._deferred.append((text, seq))
            else:
                self._add_fact(text, seq, int(event.batch_id))

    def settle(self) -> None:
        """Close whatever is open: the reply, its results (missing ones synthesized)."""
        self._close_reply()
        if self._pending:
            for call_id in self._pending:
                if call_id not in self._results:
                    self._results[call_id] = ToolResult(call_id, MISSING_RESULT_TEXT, True)
            self._emit_results()
        elif self._deferred:
            self._emit_deferred()

    def _close_reply(self) -> None:
        reply, self._reply = self._reply, None
        if reply is None:
            return
        message = reply.message()
        if message is not None:
            self._append(message, reply.last_seq)
            self._pending = list(reply.calls)
            self._results = {}
        if not self._pending and self._deferred:
            self._emit_deferred()

    def _emit_results(self) -> None:
        parts: list[Part] = [self._results[call_id] for call_id in self._pending]
        last_seq = self._results_seq
        for text, seq in self._deferred:
            parts.append(Text(text))
            last_seq = max(last_seq, seq)
        self._pending, self._results, self._deferred = [], {}, []
        self._append(Message("user", parts), last_seq)

    def _emit_deferred(self) -> None:
        parts: list[Part] = [Text(text) for text, _ in self._deferred]
        last_seq = max(seq for _, seq in self._deferred)
        self._deferred = []
        self._append(Message("user", parts), last_seq)

    def _add_fact(self, text: str, seq: int, batch: int) -> None:
        if self._facts_batch == batch and self.messages:
            last = self.messages[-1]
            message = Message("user", [*last.message.parts, Text(text)])
            self.messages[-1] = ProjectedMessage(message, seq)
        else:
            self._append(Message("user", [Text(text)]), seq)
        self._facts_batch = batch

    def _append(self, message: Message, last_seq: int) -> None:
        self.messages.append(ProjectedMessage(message, last_seq))
        self._facts_batch = None
