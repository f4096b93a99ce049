"""Timeline events as ACP `session/update`s, live and in a `session/load` replay.

`UpdateTranslator.translate(event)` returns the updates one event makes:

==============================  ==========================================================
`UserInputAdopted`              a `user_message_chunk` per content block, as the
                                person sent it (a link, not the file read): on
                                replay; live only for a message sent during a turn
                                (`_session/steering`), where the turn took it in
`ModelTextDelta`                `agent_message_chunk` (one per piece of a merged delta;
                                `streamed_text` gives them for the fast path)
`ModelReasoningDelta`           `agent_thought_chunk` (one per piece)
`ModelRequestFailed`            `agent_message_chunk` saying why the reply stopped
`ModelRequestFinished`          `usage_update` (see below)
`SessionMetadataChanged`        replay only: `session_info_update` with the title (live,
                                the adapter sends it as the title is set)
`ToolCallRequested`             `tool_call` (pending; title, kind, locations, `rawInput`)
`ToolCallStarted`               `tool_call_update` in_progress
`ToolCallProgressed`            live only: `tool_call_update` with the content so far
`ToolCallOutputDelta`           live only, for clients that render Zed's terminal `_meta`:
                                `tool_call_update` with `_meta.terminal_output`
`ToolResultRecorded`            `tool_call_update` completed or failed, with content,
                                `rawOutput` (always an object: `raw_object`) and
                                locations (a plan part becomes a plan update: below);
                                a command's says in `_meta["acp-agent"].sandboxed`
                                whether it ran in the command sandbox
`BranchShown`                   a branch shown in its parent's turn: `tool_call` (kind
                                `other`, titled with the branch's title) the first
                                time a showing appears, `tool_call_update` after, in
                                progress while the branch works, completed (failed
                                when it failed) with its steps and report as content;
                                a `usage_update` when what it used grew
`JobEndShown`                   a background job's end: a completed `tool_call`
                                "Job … ended" (`_job_rows`), and live, for clients
                                that advertised `session.notices`, a `notice`
`ConversationRewound`           replay only: an `agent_message_chunk` marking where the
                                session was rewound (what came after the message it
                                went back to is not replayed; live, `/rewind` says it)
`Compaction*` facts             `compaction_update` for clients that advertised
                                `session.compaction`; otherwise a `think` tool call
                                (in progress, then completed with the summary, or
                                failed with the error; a cancelled one is failed);
                                live, a failed one is also a `notice` (warning) for
                                clients that advertised `session.notices`; a
                                recorded one, a `usage_update` (its request)
==============================  ==========================================================

A plan part (the `plan` tool's) goes to a client that advertised `plan` (plan
operations) as `plan_update` (its checklist as `items`, a document as
`markdown`, a file as `file` with its URI; keyed by its `planId`) or
`plan_removed`; to any other as the legacy `plan`, the complete checklist of the
plan last set (a document's or a file's task list; the document itself, or a
link to the file, as the call's content), emptied when that plan is removed.

`usage_update` says what the session used (`usage`: a `UsageTally` of the
events, branches included): `used` is the context main's last request filled
(its input and output), `size` the model's window, `cost` the session's cost
so far where the models' prices are known; `_meta.usage` the session's token
counts (ACP's `Usage` names: input, output, cached read and write, thought,
total; as acpx reads them), and `_meta["acp-agent"].lines` the same by line of
work (main, then each branch by id, with its title).

Chunks carry a `messageId` that is the same live and on replay: a person's
message is named by its turn id (what the prompt's answer returns in
`_meta["acp-agent"].messageId`), a reply by its model request's id (its
thought and text are one message).

Everything else (permission facts, lifecycle, state, configuration) makes no
update. The same translator class serves the live stream and the replay, so
a loaded session shows what the live one showed; a replay merges what each
event makes into as few updates as that takes (`_replay`: a message in one
chunk, a tool call once in its last state, the usage once).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from acp_agent.adapters.acp._job_rows import job_end_notice, job_end_row
from acp_agent.adapters.acp._notices import notice_update
from acp_agent.adapters.acp_content import acp_block, acp_locations, acp_plan, acp_tool_content
from acp_agent.agent import (
    BranchShown,
    CompactionCancelled,
    CompactionFailed,
    CompactionRecorded,
    CompactionStarted,
    CompactionView,
    ConversationRewound,
    Event,
    FailureKind,
    JobEndShown,
    ModelReasoningDelta,
    ModelRequestFailed,
    ModelRequestFinished,
    ModelTextDelta,
    SessionMetadataChanged,
    ToolCallOutputDelta,
    ToolCallProgressed,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultRecorded,
    Usage,
    UsageTally,
    UserInputAdopted,
    compaction_view,
    usage_json,
)
from acp_agent.content import ContentPart, DiffContent, PlanContent, PlanKind, TerminalContent
from acp_agent.toolkit import Notice, NoticeSeverity
from acp_agent.values import Value
from protocol import types
from protocol.text_chunks import TextChunks

if TYPE_CHECKING:
    from acp_agent.models import ModelSource

__all__ = (
    "ModelFacts",
    "UpdateTranslator",
    "failure_text",
    "raw_object",
    "rewind_marker",
    "rewind_text",
    "takes_notices",
    "takes_subagents",
    "translator_for",
)

logger = logging.getLogger(__name__)

_KINDS: Final = {kind.value: kind for kind in types.ToolKind}
#: The states of a branch whose showing ends as a failed tool call.
_FAILED_BRANCH_STATES: Final = frozenset({"failed", "interrupted"})
#: The facts whose translation holds what a translator learns (besides the usage).
_LEARNT_BY_SHOWING: Final = frozenset({ToolResultRecorded, ToolCallProgressed, BranchShown})
#: The facts that make updates (besides streamed text); every other one only feeds the
#: usage tally.
_SHOWN: Final = frozenset(
    {
        ToolCallRequested,
        ToolCallStarted,
        ToolResultRecorded,
        ToolCallProgressed,
        ToolCallOutputDelta,
        ModelRequestFinished,
        ModelRequestFailed,
        UserInputAdopted,
        SessionMetadataChanged,
        BranchShown,
        JobEndShown,
        ConversationRewound,
        CompactionStarted,
        CompactionRecorded,
        CompactionFailed,
        CompactionCancelled,
    }
)


@attrs.frozen
class ModelFacts(Value):
    """What a model's usage updates need: its window and, when known, its prices."""

    context_window: int
    #: What a usage costs in USD at the model's prices; None: no prices known.
    cost_usd: Callable[[Usage], float] | None = None


def translator_for(
    capabilities: types.ClientCapabilities | None,
    models: ModelSource,
    *,
    replay: bool,
) -> UpdateTranslator:
    """The translator for a client with `capabilities`: live, or for a `session/load` replay."""
    capabilities = capabilities or types.ClientCapabilities()
    session_capabilities = capabilities.session
    #: A model's facts, looked up once (a replay prices thousands of requests).
    known: dict[str, ModelFacts] = {}

    def model_facts(model_id: str) -> ModelFacts:
        facts = known.get(model_id)
        if facts is None:
            facts = known[model_id] = look_up(model_id)
        return facts

    def look_up(model_id: str) -> ModelFacts:
        pricing = models.pricing(model_id)
        cost: Callable[[Usage], float] | None = None
        if pricing is not None:
            from acp_agent.models import UsageReported

            def cost(usage: Usage) -> float:
                return pricing.cost_usd(
                    UsageReported(
                        usage.input_tokens,
                        usage.output_tokens,
                        usage.cache_read_tokens,
                        usage.cache_write_tokens,
                    )
                )

        return ModelFacts(models.context_window(model_id), cost)

    return UpdateTranslator(
        replay=replay,
        terminal_output=(capabilities.meta or {}).get("terminal_output") is True,
        model_facts=model_facts,
        compaction_updates=(
            session_capabilities is not None and session_capabilities.compaction is not None
        ),
        subagents=takes_subagents(capabilities),
        notices=takes_notices(capabilities),
        plan_operations=capabilities.plan is not None,
    )


def takes_subagents(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether branches are shown to this client as subagent sessions: it advertised
    `clientCapabilities.subagents`, an object (`true` is no object: the decoder drops it)."""
    return capabilities is not None and capabilities.subagents is not None


def takes_notices(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client advertised `session.notices` (else it gets no `notice`)."""
    session = None if capabilities is None else capabilities.session
    return session is not None and session.notices is not None


def failure_text(error: FailureKind, message: str) -> str:
    """What the person reads when a model request failed."""
    if error == FailureKind.NOT_CONFIGURED:
        return message
    return f"The model request failed: {message}"


class UpdateTranslator:
    """Turns one session's events into `session/update`s (see the module docstring).

    **Parameters:**

    * `replay`: for `session/load`: user messages and titles are included, progress is not.
    * `terminal_output`: the client renders Zed's `_meta.terminal_*` extension.
    * `model_facts`: a model id's window and prices (for `usage_update`).
    * `compaction_updates`: the client advertised `session.compaction`.
    * `subagents`: branches are shown as subagent sessions, not as tool calls.
    * `notices`: the client advertised `session.notices` (live only: never replayed).
    * `plan_operations`: the client advertised `plan` (`plan_update`, `plan_removed`).
    """

    def __init__(
        self,
        *,
        replay: bool = False,
        terminal_output: bool = False,
        model_facts: Callable[[str], ModelFacts] | None = None,
        compaction_updates: bool = False,
        subagents: bool = False,
        notices: bool = False,
        plan_operations: bool = False,
    ) -> None:
        self.replay = replay
        self.subagents = subagents
        #: Notices are live events, never history: none on a replay.
        self.notices = notices and not replay
        self.plan_operations = plan_operations
        #: The plan the legacy `plan` shows now (None: none), for a client without them.
        self._legacy_plan: str | None = None
        self.terminal_output = terminal_output
        self.compaction_updates = compaction_updates
        self._model_facts = model_facts
        #: What the session used, folded from the events this translator saw.
        self.usage = UsageTally(price=self._price)
        #: Whether an event that grows the usage makes a `usage_update` (a replay shows
        #: the usage once, at the end of it: `usage_update`).
        self.usage_updates = True
        #: How many events grew the usage so far.
        self.usage_growths = 0
        #: Requests that streamed visible text (a failure message starts a new paragraph).
        self._texted: set[str] = set()
        #: Calls shown with a locally run terminal: call id -> terminal id.
        self._local_terminals: dict[str, str] = {}
        #: Branch showings already sent as a `tool_call`.
        self._showings: set[str] = set()

    def streamed_text(self, event: Event) -> TextChunks | None:
        """The chunks of `event` if it is streamed text (a text or reasoning delta), else
        None; `translate` makes the same chunks, as typed updates."""
        payload = event.payload
        if isinstance(payload, ModelTextDelta):
            self._texted.add(payload.request_id)
            pieces = payload.pieces or (payload.text,)
            return TextChunks("agent_message_chunk", payload.request_id, pieces)
        if isinstance(payload, ModelReasoningDelta):
            pieces = payload.pieces or (payload.text,)
            return TextChunks("agent_thought_chunk", payload.request_id, pieces)
        return None

    def translate(self, event: Event) -> list[types.SessionUpdate]:
        chunks = self.streamed_text(event)
        if chunks is not None:
            return chunks.updates()
        payload = event.payload
        used_more = self.usage.feed(event)
        if used_more:
            self.usage_growths += 1
            used_more = self.usage_updates
        if type(payload) not in _SHOWN:
            return []
        if isinstance(payload, ToolCallRequested):
            return [self._tool_call(payload)]
        if isinstance(payload, ToolCallStarted):
            return [
                types.ToolCallProgress(
                    tool_call_id=payload.call_id, status=types.ToolCallStatus.IN_PROGRESS
                )
            ]
        if isinstance(payload, ToolResultRecorded):
            return self._result(payload)
        if isinstance(payload, ToolCallProgressed):
            return [] if self.replay else self._progress(payload.call_id, payload.content)
        if isinstance(payload, ToolCallOutputDelta):
            if self.replay or not self.terminal_output:
                return []
            output = {"terminal_id": payload.terminal_id, "data": payload.data}
            return [
                types.ToolCallProgress(
                    tool_call_id=payload.call_id, meta={"terminal_output": output}
                )
            ]
        if isinstance(payload, ModelRequestFinished):
            return self.usage_update() if used_more else []
        if isinstance(payload, ModelRequestFailed):
            text = failure_text(payload.error, payload.message)
            if payload.request_id in self._texted:
                text = f"\n\n{text}"
            return [
                types.AgentMessageChunk(
                    content=types.TextContent(text=text), message_id=payload.request_id
                )
            ]
        if isinstance(payload, UserInputAdopted):
            # A prompt's words the editor shows itself; a steering message, where it joined.
            visible = self.replay or not payload.begins_turn
            return self._user_input(payload) if visible else []
        if isinstance(payload, SessionMetadataChanged) and self.replay:
            title = types.JSON_NULL if payload.title is None else payload.title
            return [types.SessionInfoUpdate(title=title)]
        if isinstance(payload, BranchShown):
            rows = [] if self.subagents else [self._branch(payload)]
            return rows + (self.usage_update() if used_more else [])
        if isinstance(payload, JobEndShown):
            row: list[types.SessionUpdate] = [job_end_row(payload)]
            return [*row, notice_update(job_end_notice(payload))] if self.notices else row
        if isinstance(payload, ConversationRewound):
            return [rewind_marker(payload)] if self.replay else []
        view = compaction_view(payload)
        if view is not None:
            shown: list[types.SessionUpdate] = [self._compaction(view)]
            if self.notices and view.status == "failed":
                failed = Notice(NoticeSeverity.WARNING, view.title, view.error)
                shown.append(notice_update(failed))
            return [*shown, *(self.usage_update() if used_more else [])]
        return []

    def learn(self, event: Event) -> None:
        """What `translate` learns from `event` (the usage, the replies that streamed text,
        the calls' terminals, the plan shown, the branch showings sent), making only the
        updates of the events whose translation holds some of it."""
        payload = event.payload
        if isinstance(payload, ModelTextDelta):
            self._texted.add(payload.request_id)
        elif isinstance(payload, ToolResultRecorded | ToolCallProgressed) and not any(
            isinstance(part, PlanContent | TerminalContent) for part in payload.content
        ):
            # All a call's content teaches is its plan and terminals (`_content`); without
            # them only the result's end of its terminal is learnt, with no update made
            # (a long session's load learns a result per call).
            if isinstance(payload, ToolResultRecorded):
                self._local_terminals.pop(payload.call_id, None)
        elif type(payload) in _LEARNT_BY_SHOWING:
            self.translate(event)
        elif self.usage.feed(event):
            self.usage_growths += 1

    def _compaction(self, view: CompactionView) -> types.SessionUpdate:
        summary: list[types.ContentBlock] | None = (
            [types.TextContent(text=view.summary)] if view.summary else None
        )
        if self.compaction_updates:
            return types.CompactionUpdate(
                compaction_id=view.compaction_id,
                status=types.CompactionStatus(view.status),
                summary=summary,
                error=view.error,
            )
        if view.status == "in_progress":
            return types.ToolCall(
                tool_call_id=view.compaction_id,
                title=view.title,
                kind=types.ToolKind.THINK,
                status=types.ToolCallStatus.IN_PROGRESS,
            )
        text = view.summary if view.status == "completed" else (view.error or view.title)
        return types.ToolCallProgress(
            tool_call_id=view.compaction_id,
            title=view.title,
            status=(
                types.ToolCallStatus.COMPLETED
                if view.status == "completed"
                else types.ToolCallStatus.FAILED
            ),
            content=[types.Content(content=types.TextContent(text=text))] if text else None,
        )

    def _branch(self, shown: BranchShown) -> types.SessionUpdate:
        status = (
            types.ToolCallStatus.IN_PROGRESS
            if not shown.done
            else types.ToolCallStatus.FAILED
            if shown.state in _FAILED_BRANCH_STATES
            else types.ToolCallStatus.COMPLETED
        )
        text = "\n".join(shown.lines)
        if shown.report:
            text = f"{text}\n\n{shown.report}" if text else shown.report
        content: list[types.ToolCallContent] | None = (
            [types.Content(content=types.TextContent(text=text))] if text else None
        )
        title = f"Branch: {shown.title}"
        meta = {"branch": {"branch_id": shown.branch_id, "state": shown.state}}
        if shown.display_id not in self._showings:
            self._showings.add(shown.display_id)
            return types.ToolCall(
                tool_call_id=shown.display_id,
                title=title,
                kind=types.ToolKind.OTHER,
                status=status,
                content=content,
                meta=meta,
            )
        return types.ToolCallProgress(
            tool_call_id=shown.display_id, title=title, status=status, content=content, meta=meta
        )

    # --- parts ------------------------------------------------------------------------

    def _tool_call(self, payload: ToolCallRequested) -> types.ToolCall:
        return types.ToolCall(
            tool_call_id=payload.call_id,
            title=payload.title or payload.tool,
            name=payload.tool,
            kind=_KINDS.get(payload.tool_kind or "", types.ToolKind.OTHER),
            status=types.ToolCallStatus.PENDING,
            locations=acp_locations(payload.locations) or None,
            raw_input=payload.arguments,
        )

    def _progress(self, call_id: str, content: Sequence[ContentPart]) -> list[types.SessionUpdate]:
        updates: list[types.SessionUpdate] = []
        parts, meta = self._content(call_id, content, updates)
        updates.append(types.ToolCallProgress(tool_call_id=call_id, content=parts, meta=meta))
        return updates

    def _result(self, payload: ToolResultRecorded) -> list[types.SessionUpdate]:
        updates: list[types.SessionUpdate] = []
        parts, meta = self._content(payload.call_id, payload.content, updates)
        terminal_id = self._local_terminals.pop(payload.call_id, None)
        raw = payload.raw_output if isinstance(payload.raw_output, Mapping) else {}
        if isinstance(raw.get("sandboxed"), bool):
            meta = {**(meta or {}), "acp-agent": {"sandboxed": raw["sandboxed"]}}
        if terminal_id is not None:
            exit_code = raw.get("exit_code")
            meta = {
                **(meta or {}),
                "terminal_exit": {
                    "terminal_id": terminal_id,
                    "exit_code": exit_code if isinstance(exit_code, int) else None,
                    "signal": raw.get("signal") if isinstance(raw.get("signal"), str) else None,
                },
            }
        updates.append(
            types.ToolCallProgress(
                tool_call_id=payload.call_id,
                status=(
                    types.ToolCallStatus.FAILED
                    if payload.is_error
                    else types.ToolCallStatus.COMPLETED
                ),
                content=parts,
                locations=(None if payload.locations is None else acp_locations(payload.locations)),
                raw_output=raw_object(payload.raw_output),
                meta=meta,
            )
        )
        return updates

    def _content(
        self, call_id: str, parts: Sequence[ContentPart], updates: list[types.SessionUpdate]
    ) -> tuple[list[types.ToolCallContent], dict[str, Any] | None]:
        """The ACP content of a call's parts; a plan part goes to `updates` as a plan
        update (and, for a client without plan operations, a document or a file also
        shows in the call)."""
        shown: list[types.ToolCallContent] = []
        meta: dict[str, Any] | None = None
        for part in parts:
            if isinstance(part, PlanContent):
                updates.extend(self._plan(part, shown))
            elif isinstance(part, TerminalContent):
                if part.local_cwd is None:
                    shown.append(types.Terminal(terminal_id=part.terminal_id))
                elif self.terminal_output and not self.replay:
                    shown.append(types.Terminal(terminal_id=part.terminal_id))
                    if call_id not in self._local_terminals:
                        self._local_terminals[call_id] = part.terminal_id
                        info = {"terminal_id": part.terminal_id, "cwd": part.local_cwd}
                        meta = {**(meta or {}), "terminal_info": info}
            else:
                shown.append(acp_tool_content(part))
        return shown, meta

    def _plan(
        self, plan: PlanContent, shown: list[types.ToolCallContent]
    ) -> list[types.SessionUpdate]:
        """A plan part's update (see the module docstring)."""
        if self.plan_operations:
            if plan.kind is PlanKind.REMOVED:
                return [types.PlanRemoved(plan_id=plan.plan_id)]
            content: types.PlanUpdateContent
            if plan.kind is PlanKind.MARKDOWN and plan.markdown is not None:
                content = types.PlanMarkdown(plan_id=plan.plan_id, content=plan.markdown)
            elif plan.kind is PlanKind.FILE and plan.uri is not None:
                content = types.PlanFile(plan_id=plan.plan_id, uri=plan.uri)
            else:
                entries = acp_plan(plan).entries
                content = types.PlanItems(plan_id=plan.plan_id, entries=entries)
            return [types.PlanUpdate(plan=content)]
        if plan.kind is PlanKind.MARKDOWN and plan.markdown is not None:
            shown.append(types.Content(content=types.TextContent(text=plan.markdown)))
        elif plan.kind is PlanKind.FILE and plan.uri is not None:
            name = plan.uri.rsplit("/", 1)[-1]
            shown.append(types.Content(content=types.ResourceLink(uri=plan.uri, name=name)))
        if plan.kind is PlanKind.REMOVED or (plan.kind is not PlanKind.ITEMS and not plan.entries):
            if self._legacy_plan != plan.plan_id:
                return []  # not the plan shown: nothing to take away
            self._legacy_plan = None
            return [types.Plan(entries=[])]
        self._legacy_plan = plan.plan_id
        return [acp_plan(plan)]

    def usage_update(self) -> list[types.SessionUpdate]:
        """The session's usage now (see the module docstring)."""
        model = self.usage.last_model
        if self._model_facts is None or model is None:
            return []
        used = self.usage.last_context
        session = self.usage.session
        cost = session.total.cost_usd
        counts = usage_json(session.total)
        del counts["cost"]
        return [
            types.UsageUpdate(
                used=used,
                size=max(self._model_facts(model).context_window, used),
                cost=None if cost is None else types.Cost(amount=round(cost, 6), currency="USD"),
                meta={"usage": counts, "acp-agent": {"lines": session.as_json()["lines"]}},
            )
        ]

    def _price(self, model: str, usage: Usage) -> float | None:
        """What `usage` of `model` costs at today's prices (for records without a cost)."""
        facts = None if self._model_facts is None else self._model_facts(model)
        if facts is None or facts.cost_usd is None:
            return None
        return facts.cost_usd(usage)

    def _user_input(self, adopted: UserInputAdopted) -> list[types.SessionUpdate]:
        updates: list[types.SessionUpdate] = []
        for part in adopted.shown():
            if isinstance(part, DiffContent | TerminalContent | PlanContent):
                logger.warning("a person's message holds a %s part; not replayed", part.KIND)
                continue
            block = acp_block(part)
            updates.append(types.UserMessageChunk(content=block, message_id=adopted.input_id))
        return updates


def rewind_marker(rewound: ConversationRewound) -> types.AgentMessageChunk:
    """Where a replay shows that the session was rewound, and what that did."""
    return types.AgentMessageChunk(
        content=types.TextContent(text=rewind_text(rewound)), message_id=rewound.rewind_id
    )


def rewind_text(rewound: ConversationRewound) -> str:
    """What the person reads of a rewind: live (its command's answer) and on replay."""
    lines = [
        "**Rewound here**: the conversation went back to this point, and the files the "
        "agent changed after it are as they were then."
    ]
    if rewound.restored:
        lines.append("Put back: " + ", ".join(f"`{path}`" for path in rewound.restored))
    if rewound.removed:
        lines.append("Removed: " + ", ".join(f"`{path}`" for path in rewound.removed))
    if rewound.not_undone:
        lines.append(
            "Not undone (these ran, and their effects remain): " + "; ".join(rewound.not_undone)
        )
    return "\n\n".join(lines)


def raw_object(raw: Any) -> dict[str, Any] | None:
    """`rawOutput` as a JSON object, as strict clients type it (Toad drops an update whose
    `rawOutput` is not one): a list goes under `items`, any other value under `value`."""
    if raw is None or isinstance(raw, dict):
        return raw
    if isinstance(raw, list):
        return {"items": raw}
    return {"value": raw}
