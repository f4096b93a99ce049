"""Timeline events: past-tense facts, each carrying the id of what caused it.

An `Event` is one recorded fact in a branch's timeline: where (branch id,
seq, batch id), what (a `Payload`, whose class names its `kind`), who
produced it, and the wall time it was recorded at (informational only:
order is by seq). Producers hand the timeline `EventDraft`s; the timeline
assigns seqs and returns a `Batch`.

A payload of a kind this version does not know (written by a newer
acp-agent) is kept as `UnknownPayload` and passed through, never dropped.

One module past 600 lines on purpose: it is the catalogue of every fact
the timeline records, next to `PAYLOAD_TYPES`, so a new kind is added in one
place and the codec and the projection read one list.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Final

import attrs

from acp_agent.content import ContentPart, Location, as_sent
from acp_agent.core._ids import BatchId, BranchId, CallId, Seq, SessionId, TurnId
from acp_agent.values import Value

__all__ = (
    "EVENT_FORMAT_VERSION",
    "PAYLOAD_TYPES",
    "Batch",
    "BranchCreated",
    "BranchEnded",
    "BranchMessageReceived",
    "BranchShown",
    "CompactionCancelled",
    "CompactionFailed",
    "CompactionRecorded",
    "CompactionStarted",
    "ConfigurationAdopted",
    "ConversationRewound",
    "Event",
    "EventDraft",
    "FailureKind",
    "FileChanged",
    "GuideAdopted",
    "JobEndShown",
    "JobEnded",
    "JobStarted",
    "ModelReasoningDelta",
    "ModelReasoningEnded",
    "ModelRequestFailed",
    "ModelRequestFinished",
    "ModelRequestInterrupted",
    "ModelRequestStarted",
    "ModelStopReason",
    "ModelTextDelta",
    "NotificationReceived",
    "Payload",
    "PermissionAnswered",
    "PermissionAsked",
    "Registration",
    "RuleExpired",
    "RuleReplaced",
    "RuleRevoked",
    "RuleSet",
    "SessionMetadataChanged",
    "StateCleared",
    "StateSet",
    "ToolCallAdmitted",
    "ToolCallCompleted",
    "ToolCallInterrupted",
    "ToolCallOutputDelta",
    "ToolCallProgressed",
    "ToolCallRequested",
    "ToolCallStarted",
    "ToolOutcome",
    "ToolResultRecorded",
    "TurnCancelRequested",
    "TurnEnded",
    "TurnInterrupted",
    "TurnStopReason",
    "UnknownPayload",
    "Usage",
    "UserInputAdopted",
)

#: Bumped when a payload's stored shape changes incompatibly. A stored event with a
#: higher version that this code cannot read is kept as `UnknownPayload`; one with a
#: lower version is read through `core._upgrades`. 2: the person's input as content
#: parts (format 1 kept ACP's content blocks, in ACP's camelCase).
EVENT_FORMAT_VERSION: Final = 2


def _parts(parts: Iterable[ContentPart]) -> tuple[ContentPart, ...]:
    return tuple(parts)


def _sent_parts(parts: Iterable[ContentPart | None]) -> tuple[ContentPart | None, ...]:
    return tuple(parts)


def _locations(locations: Iterable[Location]) -> tuple[Location, ...]:
    return tuple(locations)


def _some_locations(locations: Iterable[Location] | None) -> tuple[Location, ...] | None:
    return None if locations is None else tuple(locations)


class Payload(Value):
    """Base of every event payload: the fact itself; its class names its `kind`."""

    __slots__ = ()
    KIND: ClassVar[str]

    @property
    def kind(self) -> str:
        """The stored tag of this fact, e.g. `tool_call.requested`."""
        return self.KIND


@attrs.frozen
class UnknownPayload(Payload):
    """A fact of a kind this version cannot read, kept verbatim and passed through."""

    unknown_kind: str
    data: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.unknown_kind


# --- input ----------------------------------------------------------------------------


@attrs.frozen
class UserInputAdopted(Payload):
    """What the person sent was taken into the branch.

    `content` is what the model reads. Where the agent changed a part (a link
    read into the file it names, a template expanded), `sent` holds, at that
    part's position, what the person sent: what a replay shows (None where the
    part is as sent; empty when every part is).

    Either it begins a turn (`input_id` is then the turn's id), or it joined a turn
    already running (`joined_turn`: a message sent during the turn, taken in at a
    step boundary, so it reaches the turn's next model request).
    """

    KIND: ClassVar[str] = "user_input.adopted"
    input_id: str
    content: tuple[ContentPart, ...] = attrs.field(converter=_parts)
    sent: tuple[ContentPart | None, ...] = attrs.field(default=(), converter=_sent_parts)
    #: The running turn it joined; None when it began its own turn.
    joined_turn: str | None = None

    def shown(self) -> tuple[ContentPart, ...]:
        """The parts as the person sent them."""
        return as_sent(self.content, self.sent)

    @property
    def turn_id(self) -> TurnId:
        """The turn it belongs to: the one it began, or the one it joined."""
        return TurnId(self.joined_turn if self.joined_turn is not None else self.input_id)

    @property
    def begins_turn(self) -> bool:
        return self.joined_turn is None


# --- model requests -------------------------------------------------------------------


@attrs.frozen
class Usage(Value):
    """Token counts a provider reported for one model request (or a sum of them), and
    what they cost.

    `input_tokens` counts the whole prompt, the part read from or written to the
    provider's cache included; `reasoning_tokens` is the part of `output_tokens`
    spent reasoning, where the provider says. `cost_usd` is None when no price was
    known for the model.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def plus(self, other: Usage) -> Usage:
        """Both together (a cost known for either is counted)."""
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            sum(costs) if costs else None,
        )

    def minus(self, earlier: Usage) -> Usage:
        """What was added since `earlier` (a sum this one grew from)."""
        cost = None
        if self.cost_usd is not None:
            cost = self.cost_usd - (earlier.cost_usd or 0.0)
        return Usage(
            self.input_tokens - earlier.input_tokens,
            self.output_tokens - earlier.output_tokens,
            self.cache_read_tokens - earlier.cache_read_tokens,
            self.cache_write_tokens - earlier.cache_write_tokens,
            self.reasoning_tokens - earlier.reasoning_tokens,
            cost,
        )


@attrs.frozen
class ModelRequestStarted(Payload):
    """A request to the model was sent on behalf of a turn.

    `guide_version` names the `GuideAdopted` whose text was the request's system
    prompt (None in events written before guides were versioned).
    """

    KIND: ClassVar[str] = "model_request.started"
    request_id: str
    turn_id: TurnId
    model: str
    guide_version: str | None = None


@attrs.frozen
class ModelTextDelta(Payload):
    """Text the model streamed for a request.

    Deltas recorded together (one group commit) may share one event: `text` is
    then their concatenation and `pieces` the deltas as they came, in order, so
    each can still be shown as its own chunk. None means one piece, `text`.
    """

    KIND: ClassVar[str] = "model_request.text_delta"
    request_id: str
    text: str
    pieces: list[str] | None = None


@attrs.frozen
class ModelReasoningDelta(Payload):
    """Reasoning the model streamed for a request (`pieces` as for `ModelTextDelta`)."""

    KIND: ClassVar[str] = "model_request.reasoning_delta"
    request_id: str
    text: str
    pieces: list[str] | None = None


@attrs.frozen
class ModelReasoningEnded(Payload):
    """A reasoning block is complete: its text is the reasoning deltas since the last one.

    `signature` is the provider's proof the text is unmodified (sent back with it in
    later requests); for `redacted` reasoning it carries the opaque data instead.
    """

    KIND: ClassVar[str] = "model_request.reasoning_ended"
    request_id: str
    signature: str | None = None
    redacted: bool = False


# A member added to one of these enums is a new stored value older versions cannot
# read: it changes the event format (`EVENT_FORMAT_VERSION`).


class ModelStopReason(enum.StrEnum):
    """Why the model's reply ended (`ModelRequestFinished`)."""

    #: It finished its answer.
    END_TURN = "end_turn"
    #: It wants its tool calls run and their results sent back.
    TOOL_USE = "tool_use"
    #: It hit the output token cap (or the context window) mid-reply.
    MAX_TOKENS = "max_tokens"
    #: It declined, or the provider's content filter stopped it.
    REFUSAL = "refusal"


class FailureKind(enum.StrEnum):
    """Why a model request gave no complete reply (`ModelRequestFailed`)."""

    #: No model is configured (or its provider has no key).
    NOT_CONFIGURED = "not_configured"
    #: The reply broke off part way.
    STREAM_BROKEN = "stream_broken"
    RATE_LIMITED = "rate_limited"
    #: The account's quota or credit is used up.
    QUOTA = "quota"
    OVERLOADED = "overloaded"
    #: The request did not fit the model's context window.
    CONTEXT_WINDOW = "context_window"
    AUTHENTICATION = "authentication"
    MODEL_NOT_FOUND = "model_not_found"
    TIMEOUT = "timeout"
    #: The provider could not be reached.
    CONNECT = "connect"
    #: The connection dropped before the reply began.
    CONNECTION_LOST = "connection_lost"
    #: The provider answered something that is not a reply.
    INVALID_RESPONSE = "invalid_response"
    #: Any other failure the provider reported.
    PROVIDER_ERROR = "provider_error"


@attrs.frozen
class ModelRequestFinished(Payload):
    """The model's response ended, with why and what it cost."""

    KIND: ClassVar[str] = "model_request.finished"
    request_id: str
    stop_reason: ModelStopReason
    usage: Usage = Usage()


@attrs.frozen
class ModelRequestFailed(Payload):
    """The model gave no complete response; what it streamed before stays, incomplete.

    `error` names the failure, `message` says it for a person.
    """

    KIND: ClassVar[str] = "model_request.failed"
    request_id: str
    error: FailureKind
    message: str


@attrs.frozen
class ModelRequestInterrupted(Payload):
    """The request was cancelled (or found unfinished on restart); its stream is incomplete."""

    KIND: ClassVar[str] = "model_request.interrupted"
    request_id: str
    reason: str


# --- tool calls: proposed -> admitted -> running -> finished -> recorded --------------


class ToolOutcome(enum.StrEnum):
    """How a recorded tool result came to be."""

    #: The handler ran and returned (successfully or with an error result).
    FINISHED = "finished"
    #: The call was running and was cancelled; it may have had side effects.
    INTERRUPTED = "interrupted"
    #: The call never ran (interrupted before admission, or found unfinished on restart).
    NOT_EXECUTED = "not_executed"


@attrs.frozen
class ToolCallRequested(Payload):
    """The model proposed a tool call in a response (an intent, not an action)."""

    KIND: ClassVar[str] = "tool_call.requested"
    request_id: str
    call_id: CallId
    tool: str
    arguments: dict[str, Any]
    #: How the call is shown (the tool's presentation when it was proposed), so a
    #: replay can show it exactly without the tool loaded.
    title: str | None = None
    tool_kind: str | None = None
    locations: tuple[Location, ...] = attrs.field(default=(), converter=_locations)


@attrs.frozen
class ToolCallAdmitted(Payload):
    """Admission (permission) passed for a proposed call."""

    KIND: ClassVar[str] = "tool_call.admitted"
    call_id: CallId
    permission_id: str | None = None


@attrs.frozen
class ToolCallStarted(Payload):
    """The bound handler started running the call."""

    KIND: ClassVar[str] = "tool_call.started"
    call_id: CallId


@attrs.frozen
class ToolCallCompleted(Payload):
    """The handler returned; its result is recorded separately."""

    KIND: ClassVar[str] = "tool_call.completed"
    call_id: CallId
    succeeded: bool


@attrs.frozen
class ToolResultRecorded(Payload):
    """The result the model will see for a call; the store tracks it for `has_result`."""

    KIND: ClassVar[str] = "tool_call.result"
    call_id: CallId
    request_id: str
    #: What the editor shows.
    content: tuple[ContentPart, ...] = attrs.field(converter=_parts)
    is_error: bool
    outcome: ToolOutcome = ToolOutcome.FINISHED
    #: What the model reads as the call's result (None: the text parts of `content`).
    model_text: str | None = None
    #: The tool's structured output (ACP `rawOutput`), JSON data.
    raw_output: Any = None
    #: Places the call touched, if they differ from its presentation's.
    locations: tuple[Location, ...] | None = attrs.field(default=None, converter=_some_locations)


@attrs.frozen
class ToolCallProgressed(Payload):
    """A running call replaced what it shows (e.g. the output so far)."""

    KIND: ClassVar[str] = "tool_call.progressed"
    call_id: CallId
    content: tuple[ContentPart, ...] = attrs.field(converter=_parts)


@attrs.frozen
class ToolCallOutputDelta(Payload):
    """A locally run command of a call wrote more output to its terminal."""

    KIND: ClassVar[str] = "tool_call.output_delta"
    call_id: CallId
    terminal_id: str
    data: str


@attrs.frozen
class ToolCallInterrupted(Payload):
    """A running or admitted call was cancelled."""

    KIND: ClassVar[str] = "tool_call.interrupted"
    call_id: CallId
    reason: str


# --- permissions ----------------------------------------------------------------------


@attrs.frozen
class PermissionAsked(Payload):
    """The person was asked whether a call may run."""

    KIND: ClassVar[str] = "permission.asked"
    permission_id: str
    call_id: CallId
    options: list[str]


@attrs.frozen
class PermissionAnswered(Payload):
    """The person answered a permission question (an option id, or `cancelled`)."""

    KIND: ClassVar[str] = "permission.answered"
    permission_id: str
    call_id: CallId
    outcome: str


# --- sourced values the model reads: state, rules, notifications ----------------------


@attrs.frozen
class StateSet(Payload):
    """A dynamic value from a source (e.g. `environment/date`); a later one overrides it."""

    KIND: ClassVar[str] = "state.set"
    source: str
    value: str


@attrs.frozen
class StateCleared(Payload):
    """A source withdrew its value."""

    KIND: ClassVar[str] = "state.cleared"
    source: str


@attrs.frozen
class RuleSet(Payload):
    """A rule (AGENTS.md, user rule) took effect in a scope."""

    KIND: ClassVar[str] = "rule.set"
    rule_id: str
    scope: str
    text: str


@attrs.frozen
class RuleReplaced(Payload):
    """A rule's text was replaced in its scope."""

    KIND: ClassVar[str] = "rule.replace"
    rule_id: str
    scope: str
    text: str


@attrs.frozen
class RuleRevoked(Payload):
    """A rule was revoked; the revocation is kept as a record."""

    KIND: ClassVar[str] = "rule.revoke"
    rule_id: str
    scope: str
    reason: str = ""


@attrs.frozen
class RuleExpired(Payload):
    """A rule's validity ended (e.g. its file disappeared)."""

    KIND: ClassVar[str] = "rule.expired"
    rule_id: str
    scope: str


@attrs.frozen
class NotificationReceived(Payload):
    """A background completion, distinct from what the person typed."""

    KIND: ClassVar[str] = "notification"
    source: str
    text: str


# --- branches -------------------------------------------------------------------------


@attrs.frozen
class BranchCreated(Payload):
    """A branch began at a cut of its parent; the first event of every child branch."""

    KIND: ClassVar[str] = "branch.created"
    branch_id: BranchId
    parent_id: BranchId
    cut_seq: Seq
    label: str | None = None
    #: What the line of work is for (a branch the model started has one).
    task: str | None = None


@attrs.frozen
class BranchMessageReceived(Payload):
    """Another branch of the session sent this branch a message."""

    KIND: ClassVar[str] = "branch.message"
    sender_branch_id: BranchId
    message_id: str
    text: str


@attrs.frozen
class BranchShown(Payload):
    """How a child line of work is shown in its parent's turn, at this moment.

    Recorded on the parent, only while a parent turn runs, so a replay shows
    what the live turn showed: `display_id` names one showing (a child that
    works again later gets a new one); `done` says the showing is over (the
    child stopped working). A showing still working when the parent's turn
    ends stays open and goes on, or ends, at the parent's next turn.
    """

    KIND: ClassVar[str] = "branch.shown"
    branch_id: BranchId
    display_id: str
    title: str
    #: `running`, `waiting` (for the person's approval), `finished`, `failed`,
    #: `interrupted`, `closed`; `detached` in older records (a showing closed, done,
    #: while the child still ran).
    state: str
    #: The child's steps so far, a line each (bounded), then its report.
    lines: list[str] = attrs.field(factory=list)
    report: str | None = None
    done: bool = False
    #: What the child's model requests used so far, all its turns together (None in
    #: older records).
    usage: Usage | None = None


@attrs.frozen
class BranchEnded(Payload):
    """The branch was closed: its line of work ended; the last event it records.

    (Named `Ended` so it does not shadow the misuse error `BranchClosed`.)
    """

    KIND: ClassVar[str] = "branch.closed"
    branch_id: BranchId
    reason: str


# --- background jobs ------------------------------------------------------------------


@attrs.frozen
class JobStarted(Payload):
    """A command started in the background by a tool call of this branch; it runs on.

    `pgid` and `start_mark` (`acp_agent.process_marks`) identify a local job's
    process group after a restart, so a surviving group is killed, never
    mistaken for another; a job in a client terminal has `terminal_id` instead.
    `host` is the machine it runs on (None: recorded before hosts were): another
    agent that takes the session over elsewhere cannot reach it.
    """

    KIND: ClassVar[str] = "job.started"
    job_id: str
    call_id: CallId
    command: str
    cwd: str
    #: `local` (a process group of ours) or `client` (an editor's terminal).
    via: str
    pgid: int | None = None
    start_mark: str | None = None
    terminal_id: str | None = None
    host: str | None = None


@attrs.frozen
class JobEnded(Payload):
    """A background job ended; the last fact about it.

    `state`: `exited` (by itself, see `exit_code` / `signal`), `stopped` (by the
    model or the person), `killed` (its line, session or agent closed),
    `interrupted` (the agent died while it ran; it is never restarted), or
    `lost` (it could no longer be followed, so it was ended).
    """

    KIND: ClassVar[str] = "job.ended"
    job_id: str
    state: str
    exit_code: int | None = None
    signal: str | None = None
    duration_s: float | None = None
    #: Its output, bounded (head and tail kept, the truncation stated).
    output: str = ""
    output_bytes: int = 0
    #: Who stopped it, for `stopped` (`model` or `person`).
    stopped_by: str | None = None


@attrs.frozen
class JobEndShown(Payload):
    """A background job's end as the person is shown it, in a turn of the main line.

    Recorded on main only while a turn of main runs: the one running when the job
    ended, or else main's next one, at its start; so the person reads the end
    before the model's reply to it, and a replay shows it where the live turn
    did. `display_id` names the row; the rest is what it says.
    """

    KIND: ClassVar[str] = "job.end_shown"
    job_id: str
    display_id: str
    command: str
    #: As `JobEnded.state`, and how it ended for the person ("exited with code 0").
    state: str
    outcome: str
    exit_code: int | None = None
    signal: str | None = None
    duration_s: float | None = None
    #: The line of work that started it: `main`, or a branch's title.
    line: str = "main"
    #: The last lines of its output (bounded).
    tail: str = ""
    #: The client terminal it ran in (None: it ran here; its output is kept).
    terminal_id: str | None = None


@attrs.frozen
class FileChanged(Payload):
    """A tool call is about to change a file: what it holds now and what it will hold.

    Recorded before the change, so a rewind knows what to restore even when the
    agent dies halfway. Digests are SHA-256 of the bytes, None for no file.
    `before_saved`: the prior bytes are in the session's checkpoint store under
    `before` (False when the file was too large to keep); `before_link`: the entry
    was a symlink to there; `before_mode`: its permission bits; `made_dirs`: the
    directories the change creates to hold the file (a rewind removes them, empty).
    """

    KIND: ClassVar[str] = "file.changed"
    call_id: CallId
    path: str
    before: str | None
    after: str | None
    before_saved: bool = False
    before_link: str | None = None
    before_mode: int | None = None
    made_dirs: list[str] = attrs.field(factory=list)


@attrs.frozen
class ConversationRewound(Payload):
    """The person rewound the session to just before one of their messages.

    History from `anchor_seq` (that message's `UserInputAdopted`) up to this event
    stays recorded but is out of the model's context and of a replay from now on.
    The files the session changed since were restored (`restored`, `removed`);
    `not_undone` names what no rewind can undo (commands run, fetches, MCP calls).
    """

    KIND: ClassVar[str] = "conversation.rewound"
    rewind_id: str
    message_id: str
    anchor_seq: int
    restored: list[str] = attrs.field(factory=list)
    removed: list[str] = attrs.field(factory=list)
    not_undone: list[str] = attrs.field(factory=list)


# --- history, configuration and the session -------------------------------------------


@attrs.frozen
class CompactionStarted(Payload):
    """A compaction of history up to `covers_lte` began (`trigger`: why: auto, overflow, ...)."""

    KIND: ClassVar[str] = "compaction.started"
    compaction_id: str
    covers_lte: Seq
    trigger: str


@attrs.frozen
class CompactionRecorded(Payload):
    """History up to `covers_lte` is summarised; a fact, never thrown away as cache."""

    KIND: ClassVar[str] = "compaction.recorded"
    compaction_id: str
    covers_lte: Seq
    summary: str
    #: What the summary's model request used (its cost is not known here).
    usage: Usage = Usage()


@attrs.frozen
class CompactionFailed(Payload):
    """A started compaction produced no summary; history stays as it was."""

    KIND: ClassVar[str] = "compaction.failed"
    compaction_id: str
    error: str


@attrs.frozen
class CompactionCancelled(Payload):
    """A started compaction was cancelled before it recorded a summary."""

    KIND: ClassVar[str] = "compaction.cancelled"
    compaction_id: str


@attrs.frozen
class GuideAdopted(Payload):
    """The branch's later model requests use this guide as their system prompt.

    `guide_version` is derived from `text`; `entry_ids` name the registered
    entries it was assembled from, in order. Earlier requests keep the guide
    adopted before them.
    """

    KIND: ClassVar[str] = "guide.adopted"
    guide_version: str
    entry_ids: list[str]
    text: str


@attrs.frozen
class ConfigurationAdopted(Payload):
    """The branch adopted configuration values (model, mode, limits)."""

    KIND: ClassVar[str] = "configuration.adopted"
    config_id: str
    values: dict[str, Any]


@attrs.frozen
class SessionMetadataChanged(Payload):
    """The session's title changed; the store keeps the sessions row in step."""

    KIND: ClassVar[str] = "session.metadata_changed"
    title: str | None


# --- turns ----------------------------------------------------------------------------


@attrs.frozen
class TurnCancelRequested(Payload):
    """Someone asked to cancel a turn (asked, not yet taken effect)."""

    KIND: ClassVar[str] = "turn.cancel_requested"
    turn_id: TurnId


@attrs.frozen
class TurnInterrupted(Payload):
    """A turn's work was cancelled and has settled; the turn is over."""

    KIND: ClassVar[str] = "turn.interrupted"
    turn_id: TurnId


class TurnStopReason(enum.StrEnum):
    """Why a turn ended (`TurnEnded`); a cancelled one ends with `TurnInterrupted`."""

    #: The model finished its answer.
    END_TURN = "end_turn"
    #: The reply hit its cap, or the request did not fit the window even compacted.
    MAX_TOKENS = "max_tokens"
    #: The turn made as many model requests as it may.
    MAX_TURN_REQUESTS = "max_turn_requests"
    #: The model declined.
    REFUSAL = "refusal"
    #: The turn's work failed (a defect, or a store that could not record it).
    ERROR = "error"


@attrs.frozen
class TurnEnded(Payload):
    """A turn finished normally, with why it stopped."""

    KIND: ClassVar[str] = "turn.ended"
    turn_id: TurnId
    stop_reason: TurnStopReason


#: Every payload class this version reads, by stored kind.
PAYLOAD_TYPES: Final[dict[str, type[Payload]]] = {
    cls.KIND: cls
    for cls in (
        UserInputAdopted,
        ModelRequestStarted,
        ModelTextDelta,
        ModelReasoningDelta,
        ModelReasoningEnded,
        ModelRequestFinished,
        ModelRequestFailed,
        ModelRequestInterrupted,
        ToolCallRequested,
        ToolCallAdmitted,
        ToolCallStarted,
        ToolCallCompleted,
        ToolResultRecorded,
        ToolCallProgressed,
        ToolCallOutputDelta,
        ToolCallInterrupted,
        PermissionAsked,
        PermissionAnswered,
        StateSet,
        StateCleared,
        RuleSet,
        RuleReplaced,
        RuleRevoked,
        RuleExpired,
        NotificationReceived,
        BranchCreated,
        BranchMessageReceived,
        BranchShown,
        BranchEnded,
        JobStarted,
        JobEnded,
        JobEndShown,
        FileChanged,
        ConversationRewound,
        CompactionStarted,
        CompactionRecorded,
        CompactionFailed,
        CompactionCancelled,
        GuideAdopted,
        ConfigurationAdopted,
        SessionMetadataChanged,
        TurnCancelRequested,
        TurnInterrupted,
        TurnEnded,
    )
}


# --- the envelope ---------------------------------------------------------------------


@attrs.frozen
class Event(Value):
    """One recorded fact in a branch's timeline."""

    #: The branch the fact was recorded in (an ancestor's, for inherited history).
    branch_id: BranchId
    seq: Seq
    batch_id: BatchId
    payload: Payload
    #: The component that recorded it, e.g. `capabilities.tools`.
    producer: str
    #: Wall time in seconds since the epoch; informational, order is by `seq`.
    recorded_at: float
    format_version: int = EVENT_FORMAT_VERSION

    @property
    def kind(self) -> str:
        """The stored tag of the payload."""
        return self.payload.kind

    @property
    def starts_batch(self) -> bool:
        """Whether this is its batch's first event (a batch is named by its first seq)."""
        return int(self.seq) == int(self.batch_id)


#: Called with an assigned event under the timeline's write lock, before the store sees
#: its batch. It may return an undo, called if the batch is abandoned.
Registration = Callable[[Event], Callable[[], None] | None]


@attrs.frozen
class EventDraft(Value):
    """A fact a producer wants recorded; the timeline gives it a place."""

    payload: Payload
    producer: str
    #: Links producer state to the event atomically with the batch (see `Registration`).
    register: Registration | None = None


@attrs.frozen
class Batch(Value):
    """Events appended together: stored in one transaction, published together."""

    session_id: SessionId
    branch_id: BranchId
    events: tuple[Event, ...] = attrs.field()

    @events.validator
    def _dense_and_nonempty(self, _: object, events: tuple[Event, ...]) -> None:
        if not events or events[-1].seq - events[0].seq != len(events) - 1:
            raise ValueError("a batch holds one or more events with consecutive seqs")

    @property
    def batch_id(self) -> BatchId:
        return self.events[0].batch_id

    @property
    def first_seq(self) -> Seq:
        return self.events[0].seq

    @property
    def last_seq(self) -> Seq:
        return self.events[-1].seq
