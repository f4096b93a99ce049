"""Helpers for core and store tests: drafts, stores that can be held or broken, sessions."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio

from acp_agent.content import (
    Annotations,
    DiffContent,
    ImageContent,
    Location,
    PlanContent,
    PlanEntry,
    PlanPriority,
    PlanStatus,
    ResourceContent,
    ResourceLinkContent,
    TerminalContent,
    TextContent,
)
from acp_agent.core import (
    NO_SEQ,
    Batch,
    BranchCreated,
    BranchEnded,
    BranchId,
    BranchMessageReceived,
    BranchRecord,
    BranchShown,
    CallId,
    CompactionCancelled,
    CompactionFailed,
    CompactionRecorded,
    CompactionStarted,
    ConfigurationAdopted,
    ConversationRewound,
    EventDraft,
    FailureKind,
    FileChanged,
    GuideAdopted,
    JobEnded,
    JobEndShown,
    JobStarted,
    Lineage,
    ModelReasoningDelta,
    ModelReasoningEnded,
    ModelRequestFailed,
    ModelRequestFinished,
    ModelRequestInterrupted,
    ModelRequestStarted,
    ModelStopReason,
    ModelTextDelta,
    NotificationReceived,
    Payload,
    PermissionAnswered,
    PermissionAsked,
    Registration,
    RuleExpired,
    RuleReplaced,
    RuleRevoked,
    RuleSet,
    Seq,
    SessionId,
    SessionMetadataChanged,
    SessionRecord,
    StateCleared,
    StateSet,
    Store,
    StoreUnavailable,
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
    TurnCancelRequested,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    TurnStopReason,
    Usage,
    UserInputAdopted,
    new_id,
)
from acp_agent.store import MemoryStore

PRODUCER = "test"


def note(text: str, *, register: Registration | None = None) -> EventDraft:
    """A small draft whose text tells events apart."""
    return EventDraft(NotificationReceived("test", text), PRODUCER, register)


def notes(*texts: str) -> list[EventDraft]:
    return [note(text) for text in texts]


def texts_of(events: Sequence[object]) -> list[str]:
    return [e.payload.text for e in events]  # type: ignore[attr-defined]


async def new_session(
    store: Store, *, cwd: str = "/work/project", at: float = 1.0, owner: str = ""
) -> SessionRecord:
    """A stored session with an empty main branch, leased to `store`, `owner`'s."""
    session_id = SessionId(new_id("sess"))
    record = SessionRecord(session_id, cwd, BranchId(new_id("br")), at, at, owner=owner)
    main = BranchRecord(record.main_branch_id, session_id, None, NO_SEQ, "main", at)
    await store.create_session(record, main)
    return record


async def new_timeline(store: Store, **options: object) -> Timeline:
    """A timeline over a fresh session's main branch."""
    record = await new_session(store)
    return Timeline(
        session_id=record.session_id,
        lineage=Lineage.root(record.main_branch_id),
        store=store,
        last_durable_seq=NO_SEQ,
        **options,  # type: ignore[arg-type]
    )


class GatedStore(MemoryStore):
    """A memory store whose writes can be held until released, or made to fail."""

    def __init__(self) -> None:
        super().__init__()
        self.gated = False
        self.fail_next: Exception | None = None
        self.writes_waiting = 0
        self._permits = 0
        self._released = anyio.Event()

    def release(self, count: int = 1) -> None:
        """Let `count` held writes become durable."""
        self._permits += count
        self._released.set()
        self._released = anyio.Event()

    def open_gate(self) -> None:
        self.gated = False
        self.release(0)

    async def append_batch(self, batch: Batch) -> None:
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        self.writes_waiting += 1
        try:
            while self.gated and self._permits == 0:
                await self._released.wait()
            if self.gated:
                self._permits -= 1
        finally:
            self.writes_waiting -= 1
        await super().append_batch(batch)


def unavailable() -> StoreUnavailable:
    return StoreUnavailable("disk unplugged (test)")


def sample_payloads() -> list[Payload]:
    """One payload of every kind this version knows, with every field set."""
    call = CallId("call_1")
    turn = TurnId("turn_1")
    main, child = BranchId("br_main"), BranchId("br_child")
    return [
        UserInputAdopted(
            "turn_1",
            [
                TextContent(
                    "fix the bug in ünïcode",
                    Annotations(("user",), 0.5, "2025-01-02T03:04:05Z", {"k": 1}),
                    {"editor": {"x": 1}},
                ),
                ImageContent("iVBORw0KGgo=", "image/png", "file:///p.png"),
                ResourceContent("file:///w/a.py", "x = 1\n", mime_type="text/x-python"),
                ResourceContent("file:///w/b.bin", blob="AAEC", resource_meta={"r": 1}),
                ResourceLinkContent("https://example.com", "spec", "Spec", "The spec", None, 10),
            ],
            [None, None, ResourceLinkContent("file:///w/a.py", "a.py")],
        ),
        ModelRequestStarted("req_1", turn, "scripted", "g_0123456789ab"),
        ModelTextDelta("req_1", "Looking…"),
        ModelReasoningDelta(
            "req_1", "The parser drops the last line.", ["The parser", " drops the last line."]
        ),
        ModelReasoningEnded("req_1", "sig_abc", redacted=False),
        ModelRequestFinished("req_1", ModelStopReason.TOOL_USE, Usage(120, 30, 100, 20)),
        ModelRequestFailed("req_2", FailureKind.RATE_LIMITED, "openai answered 429"),
        ModelRequestInterrupted("req_3", "cancelled"),
        ToolCallRequested(
            "req_1",
            call,
            "read_file",
            {"path": "a.py", "lines": [1, 2]},
            "Read a.py",
            "read",
            [Location("/work/project/a.py", 1), Location("/work/project")],
        ),
        ToolCallAdmitted(call, "perm_1"),
        ToolCallStarted(call),
        ToolCallProgressed(call, [TextContent("half way"), TerminalContent("term_1", "/w")]),
        ToolCallOutputDelta(call, "term_1", "compiling…\n"),
        ToolCallCompleted(call, succeeded=False),
        ToolResultRecorded(
            call,
            "req_1",
            [
                TextContent("boom"),
                DiffContent("/work/project/a.py", None, "x = 1\n"),
                DiffContent("/work/project/b.py", "y = 1\n", "y = 2\n"),
                TerminalContent("term_1"),
                ImageContent("iVBORw0KGgo=", "image/png"),
                PlanContent((PlanEntry("Fix it", PlanPriority.HIGH, PlanStatus.IN_PROGRESS),)),
            ],
            True,
            ToolOutcome.FINISHED,
            "Error: boom",
            {"exit_code": 1, "signal": None},
            [Location("/work/project/a.py", 3)],
        ),
        ToolCallInterrupted(call, "cancelled by the person"),
        PermissionAsked("perm_1", call, ["allow_once", "reject_once"]),
        PermissionAnswered("perm_1", call, "allow_once"),
        StateSet("environment/date", "2026-11-03"),
        StateCleared("environment/git_branch"),
        RuleSet("rule_1", "project", "Run the tests before committing."),
        RuleReplaced("rule_1", "project", "Run `make test` before committing."),
        RuleRevoked("rule_1", "project", "the person asked"),
        RuleExpired("rule_2", "user"),
        NotificationReceived("tools/bash", "background job 3 finished"),
        BranchCreated(child, main, Seq(4), "read the tests"),
        BranchCreated(child, main, Seq(4), "tests", task="Read the tests and report"),
        BranchMessageReceived(main, "msg_1", "the parser is fixed"),
        BranchShown(child, "branch-1", "tests", "running", ["→ Read a.py"]),
        BranchShown(child, "branch-1", "tests", "finished", ["✓ Read a.py"], "All pass.", True),
        BranchEnded(child, "done"),
        JobStarted("job_1", call, "make check", "/work/project", "local", 4242, "b:1234"),
        JobStarted("job_2", call, "npm run dev", "/work/project", "client", terminal_id="t_1"),
        JobEnded("job_1", "exited", 0, None, 12.5, "ok\n", 3),
        JobEnded("job_2", "stopped", None, "SIGTERM", 3.0, "", 0, stopped_by="person"),
        JobEndShown(
            "job_1",
            "job_1.ended",
            "make check",
            "exited",
            "exited with code 0",
            0,
            None,
            12.5,
            tail="ok",
        ),
        FileChanged(call, "/work/project/a.py", "ab12", "cd34", True, before_mode=0o644),
        FileChanged(call, "/work/project/link", None, None, before_link="a.py"),
        ConversationRewound("rw_1", "turn_1", 3, ["/work/project/a.py"], [], ["shell: make"]),
        CompactionStarted("cmp_1", Seq(40), "on_demand"),
        CompactionRecorded("cmp_1", Seq(40), "We fixed the parser."),
        CompactionFailed("cmp_2", "the model returned no summary"),
        CompactionCancelled("cmp_3"),
        GuideAdopted("g_0123456789ab", ["core/reading", "tools/bash"], "How to read your input…"),
        ConfigurationAdopted("cfg_1", {"model": "scripted", "max_tokens": 1000}),
        SessionMetadataChanged("Fix the parser"),
        TurnCancelRequested(turn),
        TurnInterrupted(turn),
        TurnEnded(turn, TurnStopReason.END_TURN),
    ]


async def wait_until(condition: Callable[[], object], *, timeout_s: float = 5.0) -> None:
    """Wait until `condition()` is true; fails the test after `timeout_s`."""
    with anyio.fail_after(timeout_s):
        while not condition():  # noqa: ASYNC110 - polls state owned by the code under test
            await anyio.sleep(0.001)
