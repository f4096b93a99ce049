"""The projection: timeline events as messages, stable as history grows, compacted where legal."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from acp_agent.capabilities.context._projection import (
    MISSING_RESULT_TEXT,
    RESTATEMENT_PREAMBLE,
    Projection,
    user_input_parts,
)
from acp_agent.content import ImageContent, ResourceContent, ResourceLinkContent, TextContent
from acp_agent.core import (
    BatchId,
    BranchId,
    BranchMessageReceived,
    CallId,
    CompactionRecorded,
    ConversationRewound,
    Event,
    ModelReasoningDelta,
    ModelReasoningEnded,
    ModelRequestFinished,
    ModelRequestStarted,
    ModelTextDelta,
    NotificationReceived,
    Payload,
    RuleReplaced,
    RuleRevoked,
    RuleSet,
    Seq,
    StateSet,
    ToolCallRequested,
    ToolOutcome,
    ToolResultRecorded,
    TurnEnded,
    TurnId,
    UserInputAdopted,
)
from acp_agent.models import Image, Message, Reasoning, Text, ToolCall, ToolResult

TURN = TurnId("turn_1")


class History:
    """Events in batches, numbered like a timeline."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def batch(self, *payloads: Payload) -> list[Event]:
        first = len(self.events) + 1
        batch = [
            Event(BranchId("br_1"), Seq(first + i), BatchId(first), payload, "test", 0.0)
            for i, payload in enumerate(payloads)
        ]
        self.events.extend(batch)
        return batch

    @property
    def last_seq(self) -> int:
        return len(self.events)


def said(text: str) -> UserInputAdopted:
    return UserInputAdopted("turn_1", [TextContent(text)])


def reply(history: History, request_id: str, text: str, *calls: tuple[str, str]) -> None:
    history.batch(ModelRequestStarted(request_id, TURN, "m"))
    history.batch(
        ModelTextDelta(request_id, text),
        *(ToolCallRequested(request_id, CallId(c), name, {"path": "a.py"}) for c, name in calls),
        ModelRequestFinished(request_id, "tool_use" if calls else "end_turn"),
    )


def result(call_id: str, text: str, **options: object) -> ToolResultRecorded:
    return ToolResultRecorded(
        CallId(call_id),
        "req",
        [TextContent(text)],
        False,
        **options,  # type: ignore[arg-type]
    )


def project(events: Sequence[Event]) -> list[Message]:
    projection = Projection()
    projection.feed(events)
    return [projected.message for projected in projection.messages()]


def test_a_turn_with_a_tool_call_becomes_user_assistant_results_assistant() -> None:
    history = History()
    history.batch(said("read a.py"))
    reply(history, "req_1", "Reading.", ("call_1", "read_file"))
    history.batch(result("call_1", "print('hi')"))
    reply(history, "req_2", "It prints hi.")
    history.batch(TurnEnded(TURN, "end_turn"))
    assert project(history.events) == [
        Message("user", [Text("read a.py")]),
        Message(
            "assistant", [Text("Reading."), ToolCall("call_1", "read_file", '{"path":"a.py"}')]
        ),
        Message("user", [ToolResult("call_1", "print('hi')")]),
        Message("assistant", [Text("It prints hi.")]),
    ]


def test_results_follow_the_order_of_the_calls_not_of_their_arrival() -> None:
    history = History()
    reply(history, "req_1", "Two.", ("call_a", "read_file"), ("call_b", "grep"))
    history.batch(result("call_b", "B"))
    history.batch(result("call_a", "A"))
    assert project(history.events)[-1] == Message(
        "user", [ToolResult("call_a", "A"), ToolResult("call_b", "B")]
    )


def test_a_call_without_a_recorded_result_gets_an_error_result() -> None:
    history = History()
    reply(history, "req_1", "Reading.", ("call_1", "read_file"))
    assert project(history.events)[-1] == Message(
        "user", [ToolResult("call_1", MISSING_RESULT_TEXT, is_error=True)]
    )


def test_the_model_text_of_a_result_wins_and_an_empty_interrupted_result_says_so() -> None:
    history = History()
    reply(history, "req_1", "Two.", ("call_a", "shell"), ("call_b", "shell"))
    history.batch(result("call_a", "shown", model_text="exit 0"))
    history.batch(ToolResultRecorded(CallId("call_b"), "req", [], True, ToolOutcome.INTERRUPTED))
    assert project(history.events)[-1] == Message(
        "user",
        [
            ToolResult("call_a", "exit 0"),
            ToolResult("call_b", "The call was interrupted; it may have had effects.", True),
        ],
    )


def test_signed_reasoning_is_kept_in_its_place_in_the_reply() -> None:
    history = History()
    history.batch(ModelRequestStarted("req_1", TURN, "m"))
    history.batch(
        ModelReasoningDelta("req_1", "Think"),
        ModelReasoningDelta("req_1", "ing."),
        ModelReasoningEnded("req_1", "sig"),
        ModelTextDelta("req_1", "Done."),
        ModelRequestFinished("req_1", "end_turn"),
    )
    assert project(history.events) == [
        Message("assistant", [Reasoning("Thinking.", "sig"), Text("Done.")])
    ]


def test_facts_of_one_batch_share_a_message_and_later_batches_get_their_own() -> None:
    history = History()
    history.batch(StateSet("environment/date", "2026-11-02"), StateSet("git/branch", "main"))
    history.batch(NotificationReceived("tools/bash", "job 1 exited 0"))
    history.batch(BranchMessageReceived(BranchId("br_2"), "msg_1", "tests pass"))
    assert project(history.events) == [
        Message(
            "user",
            [
                Text('<state source="environment/date">2026-11-02</state>'),
                Text('<state source="git/branch">main</state>'),
            ],
        ),
        Message("user", [Text('<notification source="tools/bash">job 1 exited 0</notification>')]),
        Message("user", [Text('<branch-message from="br_2">tests pass</branch-message>')]),
    ]


def test_a_fact_recorded_while_a_call_runs_follows_its_result_in_the_same_message() -> None:
    history = History()
    reply(history, "req_1", "Reading.", ("call_1", "read_file"))
    history.batch(NotificationReceived("tools/bash", "job 1 exited 0"))
    history.batch(result("call_1", "text"))
    assert project(history.events)[-1] == Message(
        "user",
        [
            ToolResult("call_1", "text"),
            Text('<notification source="tools/bash">job 1 exited 0</notification>'),
        ],
    )


def test_the_person_s_attachments_are_tagged_and_images_stay_images() -> None:
    parts = user_input_parts(
        [
            TextContent("Look at <this>"),
            ResourceLinkContent("file:///w/a.py", "a.py"),
            ResourceContent("file:///w/b.py", "x < y"),
            ResourceContent("file:///w/c.bin", blob="AAEC", mime_type="application/zip"),
            ImageContent("aGk=", "image/png"),
        ]
    )
    assert parts == [
        Text("Look at <this>"),
        Text('<attachment uri="file:///w/a.py" name="a.py"/>'),
        Text('<attachment uri="file:///w/b.py">x &lt; y</attachment>'),
        Text('<attachment uri="file:///w/c.bin" mime="application/zip"/>'),
        Image("aGk=", "image/png"),
    ]


def _session() -> History:
    history = History()
    history.batch(said("one"), StateSet("environment/date", "2026-11-02"))
    history.batch(RuleSet("workspace/AGENTS.md", ".", "Run the tests."))
    reply(history, "req_1", "Calling.", ("call_1", "read_file"))
    history.batch(NotificationReceived("tools/bash", "job 1 exited 0"))
    history.batch(result("call_1", "text"))
    reply(history, "req_2", "Done.")
    history.batch(said("two"), StateSet("environment/date", "2026-11-03"))
    history.batch(RuleReplaced("workspace/AGENTS.md", ".", "Run `make test`."))
    reply(history, "req_3", "Ok.")
    return history


def test_projecting_batch_by_batch_gives_what_projecting_at_once_gives() -> None:
    history = _session()
    whole = project(history.events)
    incremental = Projection()
    seen: list[list[Message]] = []
    batches: dict[int, list[Event]] = {}
    for event in history.events:
        batches.setdefault(int(event.batch_id), []).append(event)
    for batch in batches.values():
        incremental.feed(batch)
        seen.append([p.message for p in incremental.messages()])
    assert seen[-1] == whole
    # Messages never change once later events arrive (only the open tail does).
    for earlier, later in itertools.pairwise(seen):
        settled = earlier[:-1]
        assert later[: len(settled)] == settled


def test_a_compaction_replaces_history_up_to_its_boundary_with_summary_and_restatement() -> None:
    history = _session()
    boundary = history.last_seq
    history.batch(said("three"), StateSet("environment/date", "2026-11-04"))
    history.batch(RuleRevoked("workspace/AGENTS.md", ".", "its file was deleted"))
    history.batch(CompactionRecorded("cmp_1", Seq(boundary), "We ran the tests."))
    messages = project(history.events)
    assert messages[0] == Message(
        "user",
        [
            Text('<summary compaction="cmp_1">We ran the tests.</summary>'),
            Text(
                '<restatement compaction="cmp_1">\n'
                f"{RESTATEMENT_PREAMBLE}\n"
                '<rule op="replace" source="workspace/AGENTS.md" scope=".">'
                "Run `make test`.</rule>\n"
                '<state source="environment/date">2026-11-03</state>\n'
                "</restatement>"
            ),
        ],
    )
    # What came after the boundary follows as usual, and may change what holds.
    assert messages[1:] == [
        Message(
            "user",
            [Text("three")],
        ),
        Message("user", [Text('<state source="environment/date">2026-11-04</state>')]),
        Message(
            "user",
            [
                Text(
                    '<rule op="revoke" source="workspace/AGENTS.md" scope=".">'
                    "its file was deleted</rule>"
                )
            ],
        ),
    ]


def test_a_compaction_that_covers_less_than_the_one_in_effect_is_ignored() -> None:
    history = _session()
    history.batch(CompactionRecorded("cmp_1", Seq(history.last_seq), "All of it."))
    history.batch(CompactionRecorded("cmp_2", Seq(3), "Less."))
    projection = Projection()
    projection.feed(history.events)
    assert projection.compaction is not None
    assert projection.compaction.compaction_id == "cmp_1"


def test_no_compaction_boundary_separates_a_tool_call_from_its_result() -> None:
    history = _session()
    projection = Projection()
    projection.feed(history.events)
    boundaries = [seq for seq, _ in projection.boundaries()]
    calls = {e.seq for e in history.events if isinstance(e.payload, ToolCallRequested)}
    results = {e.seq for e in history.events if isinstance(e.payload, ToolResultRecorded)}
    for call_seq, result_seq in zip(sorted(calls), sorted(results), strict=True):
        assert not [seq for seq in boundaries if call_seq <= seq < result_seq]
    assert boundaries[-1] == history.last_seq
    # Keeping less history always means a later boundary.
    kept = [k for _, k in projection.boundaries()]
    assert kept == sorted(kept, reverse=True)


def test_facts_after_a_finished_reply_keep_a_message_per_batch() -> None:
    history = History()
    reply(history, "req_1", "Done.")
    history.batch(NotificationReceived("tools/bash", "job 1 exited 0"))
    history.batch(StateSet("environment/date", "2026-11-03"))
    history.batch(said("next"))
    assert project(history.events)[1:] == [
        Message("user", [Text('<notification source="tools/bash">job 1 exited 0</notification>')]),
        Message("user", [Text('<state source="environment/date">2026-11-03</state>')]),
        Message("user", [Text("next")]),
    ]


def test_a_rewind_leaves_out_what_followed_its_message_but_keeps_rules_and_state() -> None:
    history = History()
    history.batch(said("first"))
    reply(history, "req_1", "One.")
    history.batch(TurnEnded(TURN, "end_turn"))
    [anchor] = history.batch(said("second"))
    reply(history, "req_2", "Two.")
    history.batch(StateSet("git/branch", "topic"))
    history.batch(TurnEnded(TURN, "end_turn"))
    rewound = ConversationRewound("rw_1", "turn_1", int(anchor.seq), ["/w/a.py"], [], ["Run `x`"])
    history.batch(rewound)
    history.batch(said("third"))

    # Fed at once, a projection learns of the rewind only at its end: it is stale.
    stale = Projection()
    stale.feed(history.events)
    assert stale.stale
    projection = Projection(stale.hidden)
    projection.feed(history.events)

    messages = [p.message for p in projection.messages()]
    texts = [part.text for m in messages for part in m.parts if isinstance(part, Text)]
    assert texts[:2] == ["first", "One."]
    assert not projection.stale
    assert "second" not in texts
    assert "Two." not in texts
    assert any('<state source="git/branch">topic</state>' in text for text in texts)
    assert any('<notification source="session/rewind">' in t and "Run `x`" in t for t in texts)
    assert texts[-1] == "third"
