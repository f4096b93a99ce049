"""Runs a branch's tool calls: binding, admission, execution, and a result for every call.

The loop hands the executor each tool batch it recorded (`accept`). For every
call, in order, the executor:

1. finds the handler bound to the call's model request (`ToolBindings`): the
   tool of the generation that request was offered, never "today's tool of
   the same name"; no binding is an error result the model reads;
2. passes admission (`permissions.decide`): runs, is refused with an
   explanation, or asks the person (`PermissionAsked`, the prompter, then
   `PermissionAnswered`; "always" answers become rules). In the sandboxed mode
   a command runs in the session's command sandbox (`SessionSandbox`: its
   context gets the sandbox) without a question; a command asking to leave it
   is asked about, the question saying what the sandbox kept it in; where the
   sandbox cannot run, every command is asked about and the first question
   (or, allowed by a rule, the first result) says why;
3. runs it as a task of the turn, tracked by the executor (`ToolCallAdmitted`,
   `ToolCallStarted`, progress as `ToolCallProgressed`/`ToolCallOutputDelta`);
4. caps each copy of the result (`ResultBudget`: the model's text, the editor's
   content, the raw output), then records `ToolCallCompleted` and the
   `ToolResultRecorded` the model sees, in one batch, tied to the request and
   call ids. A failure is a result too.

Calls go through their stages: proposed -> (asking) -> admitted -> running ->
finished -> recorded. An interrupt (the turn cancelled, the executor told by
`TurnCancelRequested`, the tools reloaded) cancels what is in flight and
records, shielded, what each call's stage calls for: a running call is
`interrupted` (it may have had effects), the others `not_executed`; a
pending question is answered `cancelled`. A batch that arrives after its
turn's interrupt gets "not executed" results and never runs.

Rebuild (on load) reads positions, not memory: every requested call with no
recorded result (`Branch.has_result`) gets a synthesized terminal result,
"interrupted by restart; not re-run", and its handler is never called again.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final

import anyio
import attrs

from acp_agent.capabilities.controls import SessionControls
from acp_agent.capabilities.execution._content import json_safe, with_valid_text
from acp_agent.capabilities.execution._recorder import CoalescingRecorder
from acp_agent.capabilities.execution._result_budget import ResultBudget
from acp_agent.capabilities.jobs import JobManager
from acp_agent.capabilities.permissions import (
    Ask,
    PermissionAnswer,
    PermissionChoice,
    PermissionMode,
    PermissionPrompter,
    PermissionQuestion,
    Refuse,
    confined,
    decide,
    remember,
)
from acp_agent.capabilities.sandboxing import SessionSandbox
from acp_agent.capabilities.session import (
    CallChanges,
    ChangedFile,
    ChangeReview,
    CheckpointStore,
    RootsIndex,
    ToolBindings,
    UnboundCall,
)
from acp_agent.content import valid_part
from acp_agent.core import (
    Branch,
    CallId,
    Event,
    EventDraft,
    Payload,
    PermissionAnswered,
    PermissionAsked,
    ScopeClosed,
    Seq,
    Store,
    StoreError,
    Timeline,
    ToolCallAdmitted,
    ToolCallCompleted,
    ToolCallInterrupted,
    ToolCallOutputDelta,
    ToolCallProgressed,
    ToolCallRequested,
    ToolCallStarted,
    ToolOutcome,
    ToolResultRecorded,
    Turn,
    TurnCancelRequested,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    TurnState,
    new_id,
)
from acp_agent.lone_surrogates import replace_lone_surrogates
from acp_agent.sandbox import SandboxSupport
from acp_agent.toolkit import (
    ClientBridge,
    CommandSandbox,
    ContentPart,
    EditorRefused,
    Effect,
    MemoryReadStamps,
    PermissionNeed,
    PreviewingTool,
    ProgressSink,
    TextContent,
    Tool,
    ToolContext,
    ToolInputError,
    ToolKind,
    ToolResult,
    truncate_middle,
)

__all__ = (
    "CANCELLED_ANSWER",
    "INVALID_ARGUMENTS_KEY",
    "INVALID_REASON_KEY",
    "PROGRESS_CHARS",
    "RESTART_NOT_STARTED",
    "RESTART_RUNNING",
    "TOOLS_PRODUCER",
    "CallStage",
    "ToolExecutor",
)

logger = logging.getLogger(__name__)

#: The facts a rebuild reads: calls proposed, started and answered, questions asked.
_REBUILT_FROM: Final = frozenset(
    {ToolCallRequested, ToolResultRecorded, ToolCallStarted, PermissionAsked, PermissionAnswered}
)

#: What a progress report of a running call may show (it is replaced by the next).
PROGRESS_CHARS: Final = 64_000
#: The producer of the executor's facts.
TOOLS_PRODUCER: Final = "capabilities.tools"
#: The only key of recorded arguments that were not a JSON object; its value is the raw text.
INVALID_ARGUMENTS_KEY: Final = "__invalid_arguments__"
#: Beside `INVALID_ARGUMENTS_KEY`, when it is not simply "not a JSON object": why they were refused.
INVALID_REASON_KEY: Final = "__invalid_reason__"
#: `PermissionAnswered.outcome` for a question withdrawn unanswered.
CANCELLED_ANSWER: Final = "cancelled"
#: `PermissionAnswered.outcome` for a question the client failed to answer (an error).
UNANSWERED_ANSWER: Final = "unanswered"
#: What the model reads for a call found running after a restart.
RESTART_RUNNING: Final = (
    "Interrupted by restart; not re-run. The agent stopped while this call was running, "
    "so it may have had effects: check the state before retrying."
)
#: What the model reads for a call found admitted or proposed but not started after a restart.
RESTART_NOT_STARTED: Final = (
    "Interrupted by restart; not re-run. The agent stopped before this call started."
)
_CANCELLED_RUNNING = (
    "Interrupted: the turn was cancelled while this call was running, so it may have had "
    "effects. Check the state before retrying."
)
_CANCELLED_BEFORE = "Not run: the turn was cancelled before this call started."
#: A call cancelled on its own (`ToolExecutor.cancel_call`); the turn goes on.
_CANCELLED_ALONE_RUNNING = (
    "Interrupted: the person cancelled this call while it was running, so it may have had "
    "effects. Check the state before retrying."
)
_CANCELLED_ALONE_BEFORE = "Not run: the person cancelled this call before it started."
_CANCELLED_ASKING = "Not run: the turn was cancelled while the person was being asked."
_UNBOUND = "Not run: the tools this call was proposed with are gone."
_RELOADED_RUNNING = (
    "Interrupted: the tools were reloaded while this call was running, so it may have had "
    "effects. Check the state before retrying."
)
#: What the person reads instead of a text that also tells the model what to do next.
_FOR_PERSON: Final = {
    RESTART_RUNNING: (
        "Interrupted: the agent stopped while this ran, so it may have done part of its "
        "work. It is not run again."
    ),
    RESTART_NOT_STARTED: "Not run: the agent stopped before this started.",
    _CANCELLED_RUNNING: (
        "Interrupted: the turn was cancelled while this ran, so it may have done part of its work."
    ),
    _CANCELLED_ASKING: "Not run: the turn was cancelled while you were being asked.",
    _RELOADED_RUNNING: (
        "Interrupted: the tools were reloaded while this ran, so it may have done part of its work."
    ),
}


class CallStage(enum.Enum):
    """Where one call is, from proposal to its recorded result."""

    #: The model proposed it; nothing ran.
    PROPOSED = "proposed"
    #: The person is being asked whether it may run.
    ASKING = "asking"
    #: Admission passed; the handler has not started.
    ADMITTED = "admitted"
    #: The handler is running.
    RUNNING = "running"
    #: The handler returned; its result is not recorded yet.
    FINISHED = "finished"
    #: Its result is durable.
    RECORDED = "recorded"


@attrs.define(eq=False)
class _Call:
    """One call the executor owns, and what it knows about it so far."""

    request: ToolCallRequested
    turn_id: TurnId
    stage: CallStage = CallStage.PROPOSED
    permission_id: str | None = None
    scope: anyio.CancelScope | None = None
    progress: CoalescingRecorder | None = None
    #: The result computed but not yet recorded (stage FINISHED).
    result: ToolResult | None = None
    #: What interrupted it, when something did (`cancelled`, `reloaded`).
    interrupted_by: str = "cancelled"
    #: The sandbox its commands run in (None: they run as they are).
    sandbox: CommandSandbox | None = None
    #: Said to the person before its result (the sandbox cannot run here).
    notice: str | None = None
    #: Cancelled on its own (`ToolExecutor.cancel_call`), not with its turn.
    cancelled_alone: bool = False

    @property
    def call_id(self) -> CallId:
        return self.request.call_id


class _Silent:
    """The progress of a preview: it reports nothing (it runs nothing)."""

    async def content(self, parts: Sequence[ContentPart]) -> None:
        return None

    async def terminal_output(self, terminal_id: str, data: str) -> None:
        return None

    async def flush(self) -> None:
        return None


_NO_PROGRESS: Final = _Silent()
#: The most a call's cleanup after its result may take.
_AFTER_S: Final = 10.0


class _Progress:
    """A running call's `ProgressSink`: its reports become coalesced progress facts."""

    def __init__(self, call_id: CallId, recorder: CoalescingRecorder) -> None:
        self._call_id = call_id
        self._recorder = recorder

    async def content(self, parts: Sequence[ContentPart]) -> None:
        shown = [
            attrs.evolve(
                part,
                text=truncate_middle(part.text, PROGRESS_CHARS, "{omitted} characters left out"),
            )
            if isinstance(part, TextContent)
            else part
            for part in valid_part(tuple(parts))
        ]
        self._recorder.add(EventDraft(ToolCallProgressed(self._call_id, shown), TOOLS_PRODUCER))

    async def terminal_output(self, terminal_id: str, data: str) -> None:
        if data:
            data = replace_lone_surrogates(data)
            self._recorder.add(
                EventDraft(ToolCallOutputDelta(self._call_id, terminal_id, data), TOOLS_PRODUCER)
            )

    async def flush(self) -> None:
        await self._recorder.flush()


class ToolExecutor:
    """Owns one branch's tool calls from proposal to recorded result (a branch service).

    **Parameters:**

    * `branch`: where the calls' facts are recorded.
    * `controls`: the session's mode, roots, editor and prompter.
    * `store`: where "always" answers are kept as permission rules.
    * `clock`: wall time for rules (seconds since the epoch).
    * `budget`: caps each copy of a result before it is recorded (`result_budget`).
    * `prompter`: asks the person instead of the session's (a child's questions
      wait for a turn of main).
    * `client`: the editor the calls use instead of the session's (asked at each
      call: a child shown as a row of main runs its commands without terminals).
    * `jobs`: the session's background jobs, handed to calls as `ToolContext.jobs`.
    * `checkpoints`: where calls keep what files held before they change them
      (`ToolContext.changes`; None: not kept, no rewind).
    * `review`: what looks at the files a call changed once it has (the session's
      language servers); what it says is added to the call's result.
    * `sandbox`: the session's command sandbox, which the sandboxed mode runs
      commands in (None: there is none; that mode then asks about every command).
    * `roots_index`: what the files under the roots held, to compare around a
      sandboxed command (None: its changes are not tracked).
    """

    name = "tool executor"

    def __init__(
        self,
        branch: Branch,
        controls: SessionControls,
        store: Store,
        *,
        clock: Callable[[], float],
        budget: ResultBudget | None = None,
        prompter: PermissionPrompter | None = None,
        client: Callable[[], ClientBridge] | None = None,
        jobs: JobManager | None = None,
        checkpoints: CheckpointStore | None = None,
        review: ChangeReview | None = None,
        sandbox: SessionSandbox | None = None,
        roots_index: RootsIndex | None = None,
    ) -> None:
        self.branch = branch
        self.checkpoints = checkpoints
        self.sandbox = sandbox
        self.roots_index = roots_index
        self.review = review
        #: Where calls hand over background work (None: no background jobs).
        self.jobs = jobs
        #: Who asks the person (None: the session's prompter, `controls.prompter`).
        self.prompter = prompter
        #: The editor the calls use (None: the session's, `controls.client`).
        self._client = client
        self.budget = budget if budget is not None else ResultBudget(None)
        self.controls = controls
        self.store = store
        self.clock = clock
        #: Which tool generation each model request of the branch was offered.
        self.bindings = ToolBindings()
        #: What this branch has read (for `file_modified_since_read`).
        self.read_stamps = MemoryReadStamps()
        self._calls: dict[CallId, _Call] = {}
        self._interrupted: set[TurnId] = set()

    # --- rebuild and live events --------------------------------------------------------

    async def rebuild(self, timeline: Timeline) -> Seq:
        """Give every call without a recorded result a terminal one; never run a handler."""
        requested: dict[CallId, ToolCallRequested] = {}
        started: set[CallId] = set()
        asked: dict[str, CallId] = {}
        for event in await timeline.read():
            payload = event.payload
            if type(payload) not in _REBUILT_FROM:
                continue  # most of a history: deltas, requests, facts
            if isinstance(payload, ToolCallRequested):
                requested[payload.call_id] = payload
            elif isinstance(payload, ToolResultRecorded):
                # Its result is in the history read: the store holds it (one transaction).
                requested.pop(payload.call_id, None)
            elif isinstance(payload, ToolCallStarted):
                started.add(payload.call_id)
            elif isinstance(payload, PermissionAsked):
                asked[payload.permission_id] = payload.call_id
            elif isinstance(payload, PermissionAnswered):
                asked.pop(payload.permission_id, None)
        drafts: list[EventDraft] = [
            EventDraft(PermissionAnswered(permission_id, call_id, CANCELLED_ANSWER), TOOLS_PRODUCER)
            for permission_id, call_id in asked.items()
        ]
        for call_id, request in requested.items():
            if await self.branch.has_result(call_id):
                continue
            if call_id in started:
                drafts.append(EventDraft(ToolCallInterrupted(call_id, "restart"), TOOLS_PRODUCER))
                outcome, text = ToolOutcome.INTERRUPTED, RESTART_RUNNING
            else:
                outcome, text = ToolOutcome.NOT_EXECUTED, RESTART_NOT_STARTED
            drafts.append(self._result_draft(request, text, outcome))
        if drafts:
            await timeline.append(drafts)
            logger.info("rebuild of %s: settled %d unfinished call(s)", self.branch.id, len(drafts))
        return timeline.last_published_seq

    async def handle(self, event: Event) -> None:
        payload = event.payload
        if isinstance(payload, TurnCancelRequested):
            self.interrupt(payload.turn_id)
        elif isinstance(payload, TurnEnded | TurnInterrupted):
            self._interrupted.discard(payload.turn_id)

    def interrupt(self, turn_id: TurnId) -> None:
        """Mark the turn's tool work interrupted and cancel what of it is in flight."""
        self._interrupted.add(turn_id)
        for call in self._calls.values():
            if call.turn_id == turn_id and call.scope is not None:
                call.scope.cancel()

    # --- accepting a batch --------------------------------------------------------------

    async def accept(self, turn: Turn, requests: Sequence[ToolCallRequested]) -> None:
        """Take a recorded tool batch of `turn`: run it as the turn's work, or, if the
        turn was interrupted already, record "not executed" for every call."""
        if not requests:
            return
        if turn.turn_id not in self._interrupted and turn.state is TurnState.RUNNING:
            calls = [_Call(request, turn.turn_id) for request in requests]
            for call in calls:
                self._calls[call.call_id] = call
            try:
                turn.start_soon(partial(self._run_batch, calls), name=f"tools {turn.turn_id}")
            except ScopeClosed:
                for call in calls:
                    self._calls.pop(call.call_id, None)
            else:
                return
        not_executed = ToolOutcome.NOT_EXECUTED
        await self.branch.append(
            [self._result_draft(request, _CANCELLED_BEFORE, not_executed) for request in requests]
        )

    def cancel_call(self, call_id: str) -> bool:
        """Cut one call short, as a turn's cancel cuts its calls (its result says so), and
        go on with the turn; False when no call of that id is still waiting or running."""
        call = self._calls.get(CallId(call_id))
        if call is None or call.stage in (CallStage.FINISHED, CallStage.RECORDED):
            return False
        call.cancelled_alone = True
        call.interrupted_by = "cancelled_alone"
        if call.scope is not None:
            call.scope.cancel()
        return True

    async def _run_batch(self, calls: Sequence[_Call]) -> None:
        try:
            for call in calls:
                if call.turn_id in self._interrupted:
                    break
                if not call.cancelled_alone:
                    with anyio.CancelScope() as call.scope:
                        await self._run(call)
                if call.cancelled_alone and call.stage is not CallStage.RECORDED:
                    # Cancelled alone (`cancel_call`): its result now, before the next call runs.
                    with anyio.CancelScope(shield=True):
                        await self._settle([call])
        finally:
            with anyio.CancelScope(shield=True):
                await self._settle([call for call in calls if call.stage is not CallStage.RECORDED])
                for call in calls:
                    self._calls.pop(call.call_id, None)

    # --- one call -------------------------------------------------------------------------

    async def _run(self, call: _Call) -> None:
        request = call.request
        try:
            tool = self.bindings.tool(request.request_id, request.tool)
        except UnboundCall as exc:
            await self._record_unrun(call, str(exc))
            return
        arguments = request.arguments
        if INVALID_ARGUMENTS_KEY in arguments:
            reason = arguments.get(INVALID_REASON_KEY)
            if isinstance(reason, str):
                await self._record_unrun(call, f"Not run: {reason}.")
                return
            raw = str(arguments[INVALID_ARGUMENTS_KEY])[:200]
            await self._record_unrun(call, f"Not run: the arguments are not a JSON object: {raw}")
            return
        try:
            need = tool.permission(arguments, self.controls.roots)
        except ToolInputError as exc:
            await self._record_unrun(call, f"Not run: invalid arguments: {exc}")
            return
        except Exception as exc:
            logger.exception("tool %s could not judge its arguments", request.tool)
            await self._record_unrun(call, f"Not run: the {request.tool} tool failed: {exc}")
            return

        controls = self.controls
        rules = await self.store.list_permission_rules(
            workspace=controls.workspace, owner=controls.owner
        )
        roots = [str(root) for root in controls.additional_directories]
        mode = controls.mode
        missing: SandboxSupport | None = None
        if mode is PermissionMode.SANDBOXED and need.effect is Effect.EXECUTE:
            missing = await self._sandbox_missing()
        sandboxed = confined(mode, need, sandbox_runs=missing is None)
        decision = decide(
            mode, request.tool, need, rules, controls.workspace, roots, sandboxed=sandboxed
        )
        if sandboxed and self.sandbox is not None:
            call.sandbox = self.sandbox.for_call(controls.roots)
        admitted: list[Payload] = []
        if isinstance(decision, Refuse):
            await self._record_unrun(call, decision.explanation, shown=decision.shown)
            return
        if isinstance(decision, Ask) and mode is PermissionMode.SANDBOXED:
            decision = self._sandbox_question(decision, need, missing)
        elif missing is not None and self.sandbox and not self.sandbox.told_unavailable:
            # Allowed by a rule: the person is told in its result instead.
            call.notice = self.sandbox.unavailable_note(missing)
        if isinstance(decision, Ask):
            # Never a dry run outside the workspace: reading there needs the answer first.
            preview = () if need.outside_workspace else await self._preview(call, tool)
            if isinstance(preview, ToolResult):  # it cannot be done: nobody is asked
                said = "\n\n".join(p.text for p in preview.content if isinstance(p, TextContent))
                await self._record_unrun(
                    call, preview.model_text, raw_output=preview.raw_output, shown=said or None
                )
                return
            answer = await self._ask(call, need, decision, preview)
            answered = PermissionAnswered(call.permission_id or "", call.call_id, _outcome(answer))
            if answer.choice is not None and answer.choice.remembered:
                await self._remember(answer.choice, call, need)
            if answer.choice is None or not answer.choice.allows:
                shown: str | None = None
                if answer.unanswered is not None:
                    text, shown = _unanswered_text(answer.unanswered)
                elif answer.choice is None:
                    text = _CANCELLED_ASKING
                else:
                    text, shown = _rejected_text(answer.choice, request.tool)
                not_run = self._result_draft(request, text, ToolOutcome.NOT_EXECUTED, shown=shown)
                await self.branch.append([EventDraft(answered, TOOLS_PRODUCER), not_run])
                call.stage = CallStage.RECORDED
                return
            admitted.append(answered)
        admitted.append(ToolCallAdmitted(call.call_id, call.permission_id))
        admitted.append(ToolCallStarted(call.call_id))
        await self.branch.append([EventDraft(payload, TOOLS_PRODUCER) for payload in admitted])
        call.stage = CallStage.RUNNING
        await self._execute(call, tool)

    async def _sandbox_missing(self) -> SandboxSupport | None:
        """Why commands cannot run in the sandbox here (None: they can)."""
        if self.sandbox is None:
            return SandboxSupport(None, "this agent has no command sandbox set up")
        support = await self.sandbox.support()
        return None if support.available else support

    def _sandbox_question(
        self, ask: Ask, need: PermissionNeed, missing: SandboxSupport | None
    ) -> Ask:
        """A sandboxed-mode question about a command, saying why it is asked: the sandbox
        cannot run here, or the command asks to leave it (and what the sandbox kept it
        in when it ran there)."""
        if need.effect is not Effect.EXECUTE or need.outside_workspace:
            return ask
        if missing is not None:
            if self.sandbox is None:
                why = f"Commands cannot run in the sandbox here: {missing.reason}."
            else:
                why = self.sandbox.unavailable_note(missing)
            return attrs.evolve(ask, note="\n".join(filter(None, [why, need.note])))
        if self.sandbox is None or need.sandboxable:
            return ask
        why = self.sandbox.why_leave(need.target)
        return attrs.evolve(ask, note="\n".join(filter(None, [why, ask.note])))

    async def _remember(self, choice: PermissionChoice, call: _Call, need: PermissionNeed) -> None:
        try:
            await remember(
                self.store,
                choice=choice,
                tool=call.request.tool,
                need=need,
                workspace=self.controls.workspace,
                session_id=self.controls.session_id,
                call_id=call.call_id,
                now=self.clock(),
                roots=[str(root) for root in self.controls.additional_directories],
                owner=self.controls.owner,
            )
        except StoreError:
            logger.exception("could not keep the rule chosen for call %s", call.call_id)

    async def _ask(
        self, call: _Call, need: PermissionNeed, ask: Ask, content: tuple[ContentPart, ...] = ()
    ) -> PermissionAnswer:
        request = call.request
        call.permission_id = new_id("perm")
        options = [option.option_id for option in ask.options]
        await self.branch.append(
            [EventDraft(PermissionAsked(call.permission_id, call.call_id, options), TOOLS_PRODUCER)]
        )
        call.stage = CallStage.ASKING
        question = PermissionQuestion(
            permission_id=call.permission_id,
            call_id=call.call_id,
            tool=request.tool,
            title=request.title or request.tool,
            kind=_kind(request.tool_kind),
            target=need.target,
            note=ask.note,
            arguments=request.arguments,
            locations=request.locations,
            options=ask.options,
            branch_id=None if self.branch.parent_id is None else self.branch.id,
            content=content,
            outside_roots=bool(need.outside_workspace),
        )
        prompter = self.prompter if self.prompter is not None else self.controls.prompter
        try:
            return await prompter.ask(question)
        except Exception:
            logger.exception("asking about call %s failed; taking it as cancelled", call.call_id)
            return PermissionAnswer(None)

    def _context(self, call: _Call, progress: ProgressSink) -> ToolContext:
        return ToolContext(
            session_id=self.controls.session_id,
            branch_id=self.branch.id,
            call_id=call.call_id,
            roots=self.controls.roots,
            client=self._client() if self._client is not None else self.controls.client,
            progress=progress,
            read_stamps=self.read_stamps,
            jobs=self.jobs.host(self.branch, call.call_id) if self.jobs is not None else None,
            changes=(
                CallChanges(
                    self.checkpoints,
                    self.branch,
                    call.call_id,
                    index=self.roots_index,
                    roots=self.controls.roots,
                )
                if self.checkpoints is not None
                else None
            ),
            sandbox=call.sandbox,
        )

    async def _preview(self, call: _Call, tool: Tool) -> tuple[ContentPart, ...] | ToolResult:
        """What the call would change, for its question; or why it cannot run (unasked)."""
        if not isinstance(tool, PreviewingTool):
            return ()
        try:
            preview = await tool.preview(call.request.arguments, self._context(call, _NO_PROGRESS))
        except ToolInputError as exc:
            text = f"Not run: invalid arguments: {exc}"
            return ToolResult((TextContent(text),), text, is_error=True)
        except Exception:
            logger.exception("tool %s could not preview call %s", call.request.tool, call.call_id)
            return ()  # asked without the change shown; the run says what happens
        if isinstance(preview, ToolResult):
            return preview
        return preview.content

    async def _execute(self, call: _Call, tool: Tool) -> None:
        request = call.request
        generation = self.bindings.generation(request.request_id)
        recorder = call.progress = CoalescingRecorder(self.branch.append)
        context = self._context(call, _Progress(call.call_id, recorder))
        try:
            if generation is None:
                raise UnboundCall(_UNBOUND)
            tracked = generation.running()
        except UnboundCall as exc:  # the tools were reloaded while it was being admitted
            await self._record_unrun(call, str(exc))
            return
        with tracked as running:
            result: ToolResult | None = None
            async with anyio.create_task_group() as group:
                group.start_soon(recorder.run, name=f"progress of {call.call_id}")
                try:
                    with running:
                        result = await _run_tool(tool, request.arguments, context)
                finally:
                    recorder.close()
            if result is None:  # interrupted by a reload: recorded before the next call runs
                call.interrupted_by = "reloaded"
                with anyio.CancelScope(shield=True):
                    await self._settle([call])
                return
            if isinstance(context.changes, CallChanges) and context.changes.touched:
                result = await self._reviewed(result, context.changes)
            if call.notice is not None:
                result = attrs.evolve(result, content=(TextContent(call.notice), *result.content))
            call.result = result
            call.stage = CallStage.FINISHED
            try:
                await self._record_finished(call)
            finally:
                if result.after_recorded is not None:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(_AFTER_S):
                        try:
                            await result.after_recorded()
                        except Exception:
                            logger.exception("cleanup after call %s failed", call.call_id)

    async def _reviewed(self, result: ToolResult, changes: CallChanges) -> ToolResult:
        """`result` with what the session's review says of the files the call changed."""
        review = self.review
        if review is None:
            return result

        def changed() -> list[ChangedFile]:
            return [
                ChangedFile(
                    path,
                    before,
                    changes.written[path] if path in changes.written else _current_bytes(path),
                )
                for path, before in changes.touched.items()
            ]

        try:
            # Shielded: the change is made, so its result is recorded whole; the review
            # bounds itself (the settle time), which is all a cancel waits for.
            with anyio.CancelScope(shield=True):
                note = await review.review(await anyio.to_thread.run_sync(changed))
        except Exception:
            logger.exception("reviewing the changes of a call failed")
            return result
        if not note:
            return result
        return attrs.evolve(
            result,
            content=(*result.content, TextContent(note)),
            model_text=f"{result.model_text}\n\n{note}",
        )

    # --- recording ------------------------------------------------------------------------

    async def _record_unrun(
        self, call: _Call, text: str, *, raw_output: Any = None, shown: str | None = None
    ) -> None:
        draft = self._result_draft(
            call.request, text, ToolOutcome.NOT_EXECUTED, raw_output, shown=shown
        )
        await self.branch.append([draft])
        call.stage = CallStage.RECORDED

    async def _record_finished(self, call: _Call) -> None:
        assert call.result is not None
        result = await self.budget.apply(
            with_valid_text(call.result), session_id=self.branch.session_id, call_id=call.call_id
        )
        await self.branch.append(
            [
                EventDraft(ToolCallCompleted(call.call_id, not result.is_error), TOOLS_PRODUCER),
                EventDraft(
                    ToolResultRecorded(
                        call.call_id,
                        call.request.request_id,
                        result.content,
                        result.is_error,
                        ToolOutcome.FINISHED,
                        model_text=result.model_text,
                        raw_output=json_safe(result.raw_output),
                        locations=result.locations,
                    ),
                    TOOLS_PRODUCER,
                ),
            ]
        )
        call.stage = CallStage.RECORDED

    async def _settle(self, calls: Sequence[_Call]) -> None:
        """Record, as one batch, what each call interrupted is owed (call this shielded)."""
        drafts: list[EventDraft] = []
        for call in calls:
            if call.progress is not None:
                await call.progress.flush()
            if call.stage is CallStage.FINISHED and call.result is not None:
                await self._record_finished(call)
                continue
            request = call.request
            if call.stage is CallStage.RUNNING:
                reason = call.interrupted_by
                drafts.append(EventDraft(ToolCallInterrupted(call.call_id, reason), TOOLS_PRODUCER))
                text = {
                    "reloaded": _RELOADED_RUNNING,
                    "cancelled_alone": _CANCELLED_ALONE_RUNNING,
                }.get(reason, _CANCELLED_RUNNING)
                drafts.append(self._result_draft(request, text, ToolOutcome.INTERRUPTED))
            elif call.stage is CallStage.ASKING:
                permission_id = call.permission_id or ""
                answered = PermissionAnswered(permission_id, call.call_id, CANCELLED_ANSWER)
                drafts.append(EventDraft(answered, TOOLS_PRODUCER))
                not_run = self._result_draft(request, _CANCELLED_ASKING, ToolOutcome.NOT_EXECUTED)
                drafts.append(not_run)
            else:
                text = _CANCELLED_ALONE_BEFORE if call.cancelled_alone else _CANCELLED_BEFORE
                not_run = self._result_draft(request, text, ToolOutcome.NOT_EXECUTED)
                drafts.append(not_run)
            call.stage = CallStage.RECORDED
        if drafts:
            await self.branch.append(drafts)

    @staticmethod
    def _result_draft(
        request: ToolCallRequested,
        text: str,
        outcome: ToolOutcome,
        raw_output: Any = None,
        *,
        shown: str | None = None,
    ) -> EventDraft:
        """A result the runtime writes: `text` for the model, `shown` (default: the
        person's words for `text`, or `text` itself) for the person."""
        if shown is None:
            shown = _FOR_PERSON.get(text, text)
        return EventDraft(
            ToolResultRecorded(
                request.call_id,
                request.request_id,
                (TextContent(shown),),
                is_error=True,
                outcome=outcome,
                model_text=text,
                raw_output=json_safe(raw_output),
            ),
            TOOLS_PRODUCER,
        )


async def _run_tool(tool: Tool, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    """Run the handler; every failure becomes an error result the model reads."""
    try:
        return await tool.run(arguments, context)
    except ToolInputError as exc:
        text = f"Invalid arguments: {exc}"
    except EditorRefused as exc:  # the editor's choice, not a defect: no traceback
        logger.info("tool %s: %s", tool.definition.name, exc)
        text = (
            f"The {tool.definition.name} tool stopped: the editor refused {exc.request} "
            f"({exc.reason}), so that did not happen."
        )
    except Exception as exc:
        logger.exception("tool %s failed", tool.definition.name)
        text = f"The {tool.definition.name} tool failed: {type(exc).__name__}: {exc}"
    return ToolResult((TextContent(text),), text, is_error=True)


def _outcome(answer: PermissionAnswer) -> str:
    if answer.unanswered is not None:
        return UNANSWERED_ANSWER
    return CANCELLED_ANSWER if answer.choice is None else answer.choice.value


def _unanswered_text(why: str) -> tuple[str, str]:
    """What the model and the person read of a call whose question the client could not
    answer (`why`): not run, and the turn goes on (nothing was cancelled)."""
    model = (
        f"Not run: the person could not be asked ({why}). Do not retry it as is; "
        "go on without it or tell the person what it would have done."
    )
    return model, f"Not run: you could not be asked: {why}."


def _rejected_text(choice: PermissionChoice, tool: str) -> tuple[str, str]:
    """What the model reads of a rejected call, and what the person reads."""
    always = " and chose to always reject such calls here" if choice.remembered else ""
    model = (
        f"Not run: the person rejected this {tool} call{always}. Do not retry it as is; "
        "ask them what they want instead, or take another way."
    )
    return model, f"Not run: you rejected it{always}."


def _kind(value: str | None) -> ToolKind:
    try:
        return ToolKind(value) if value else ToolKind.OTHER
    except ValueError:
        return ToolKind.OTHER


def _current_bytes(path: Path) -> bytes | None:
    """What `path` holds on disk now (None: no regular file there)."""
    try:
        return None if path.is_symlink() or not path.is_file() else path.read_bytes()
    except OSError:
        return None
