"""Events are attrs facts that survive the stored form; unknown kinds pass through."""

from __future__ import annotations

import json

import pytest

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
    EVENT_FORMAT_VERSION,
    PAYLOAD_TYPES,
    Batch,
    BatchId,
    BranchId,
    CallId,
    Event,
    EventRow,
    FailureKind,
    ModelRequestFailed,
    ModelRequestFinished,
    ModelRequestStarted,
    ModelStopReason,
    NotificationReceived,
    Payload,
    Seq,
    SessionId,
    StoreCorrupt,
    ToolResultRecorded,
    TurnEnded,
    TurnId,
    TurnStopReason,
    UnknownPayload,
    UserInputAdopted,
    decode_event,
    encode_event,
    encode_payload,
)

from .support import sample_payloads

# The kinds the runtime issue asks for, by the name the issue gives them.
REQUIRED_KINDS = {
    "user input adopted": "user_input.adopted",
    "model request started": "model_request.started",
    "model streamed text": "model_request.text_delta",
    "model request finished": "model_request.finished",
    "tool call requested": "tool_call.requested",
    "tool call admitted": "tool_call.admitted",
    "tool call started": "tool_call.started",
    "tool call completed": "tool_call.completed",
    "tool call result": "tool_call.result",
    "tool call interrupted": "tool_call.interrupted",
    "permission asked": "permission.asked",
    "permission answered": "permission.answered",
    "state set": "state.set",
    "state cleared": "state.cleared",
    "rule set": "rule.set",
    "rule replace": "rule.replace",
    "rule revoke": "rule.revoke",
    "rule expired": "rule.expired",
    "notification": "notification",
    "branch created": "branch.created",
    "branch message": "branch.message",
    "branch closed": "branch.closed",
    "compaction started": "compaction.started",
    "compaction recorded": "compaction.recorded",
    "compaction failed": "compaction.failed",
    "compaction cancelled": "compaction.cancelled",
    "guide adopted": "guide.adopted",
    "configuration adopted": "configuration.adopted",
    "session metadata changed": "session.metadata_changed",
}


def event_with(payload: object, *, seq: int = 7, version: int = EVENT_FORMAT_VERSION) -> Event:
    return Event(
        branch_id=BranchId("br_1"),
        seq=Seq(seq),
        batch_id=BatchId(5),
        payload=payload,  # type: ignore[arg-type]
        producer="capabilities.tools",
        recorded_at=1_700_000_000.25,
        format_version=version,
    )


def test_every_kind_the_runtime_needs_has_a_payload_class() -> None:
    missing = {name for name, kind in REQUIRED_KINDS.items() if kind not in PAYLOAD_TYPES}
    assert not missing


def test_the_samples_cover_every_payload_class() -> None:
    assert {type(p) for p in sample_payloads()} == set(PAYLOAD_TYPES.values())


@pytest.mark.parametrize("payload", sample_payloads(), ids=lambda p: p.kind)
def test_every_event_survives_its_stored_form(payload: object) -> None:
    event = event_with(payload)
    row = encode_event(event)
    assert json.loads(row[4])  # the payload, as a compact JSON object
    assert decode_event(row) == event


@pytest.mark.parametrize("payload", sample_payloads(), ids=lambda p: p.kind)
def test_the_fast_json_encoding_is_exactly_compact_json(payload: Payload) -> None:
    data = json.loads(encode_payload(payload))
    expected = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    assert encode_payload(payload) == expected


def test_a_cyclic_payload_cannot_be_encoded() -> None:
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    with pytest.raises(RecursionError):
        encode_payload(UnknownPayload("plugin.cyclic", cyclic))


def test_an_event_of_an_unknown_kind_is_kept_and_written_back_unchanged() -> None:
    row: EventRow = (
        "br_1",
        3,
        3,
        "plugin.weather_changed",
        '{"sky":"grey","hPa":1013}',
        "p",
        1.5,
        2,
    )
    event = decode_event(row)
    assert event.payload == UnknownPayload("plugin.weather_changed", {"sky": "grey", "hPa": 1013})
    assert event.kind == "plugin.weather_changed"
    assert encode_event(event) == row


def test_a_known_kind_in_a_newer_format_this_version_cannot_read_is_kept() -> None:
    # A newer writer renamed `text`; we keep the fact instead of failing or dropping it.
    payload = '{"source":"tools/bash","body":"done"}'
    row: EventRow = ("br_1", 3, 3, "notification", payload, "p", 1.5, EVENT_FORMAT_VERSION + 1)
    event = decode_event(row)
    assert event.payload == UnknownPayload("notification", {"source": "tools/bash", "body": "done"})
    assert encode_event(event) == row


def test_a_newer_format_with_extra_fields_still_reads_as_the_known_kind() -> None:
    payload = '{"source":"s","text":"t","priority":3}'
    row: EventRow = ("br_1", 3, 3, "notification", payload, "p", 1.5, EVENT_FORMAT_VERSION + 1)
    assert decode_event(row).payload == NotificationReceived("s", "t")


@pytest.mark.parametrize(
    "payload", ['{"source":"s"}', "not json", "[1, 2]"], ids=["missing-field", "not-json", "array"]
)
def test_an_unreadable_payload_of_this_version_is_store_corrupt(payload: str) -> None:
    row: EventRow = ("br_1", 3, 3, "notification", payload, "p", 1.5, EVENT_FORMAT_VERSION)
    with pytest.raises(StoreCorrupt, match="seq 3"):
        decode_event(row)


def test_events_carry_the_format_version_they_were_written_in() -> None:
    assert encode_event(event_with(NotificationReceived("s", "t")))[-1] == EVENT_FORMAT_VERSION == 2


def test_a_batch_holds_consecutive_seqs_only() -> None:
    a, b = (
        event_with(NotificationReceived("s", "a"), seq=5),
        event_with(NotificationReceived("s", "b"), seq=7),
    )
    with pytest.raises(ValueError, match="consecutive"):
        Batch(SessionId("sess_1"), BranchId("br_1"), (a, b))
    with pytest.raises(ValueError, match="consecutive"):
        Batch(SessionId("sess_1"), BranchId("br_1"), ())


def test_a_model_request_started_stored_before_guide_versions_reads_without_one() -> None:
    payload = '{"request_id":"req_1","turn_id":"turn_1","model":"scripted"}'
    row: EventRow = ("br_1", 3, 3, "model_request.started", payload, "p", 1.5, 1)
    started = decode_event(row).payload
    assert started == ModelRequestStarted("req_1", TurnId("turn_1"), "scripted", None)


def test_a_tool_result_is_stored_in_format_1s_shape_and_read_back_as_parts() -> None:
    # Format 1 wrote tool content with a hand-made encoder; its rows read as they are.
    stored = (
        '{"call_id":"c","request_id":"r","content":[{"type":"text","text":"x"},'
        '{"type":"diff","path":"/a","old_text":null,"new_text":"n"},'
        '{"type":"terminal","terminal_id":"t","local_cwd":null},'
        '{"type":"image","data":"d","mime_type":"image/png"},'
        '{"type":"plan","entries":[{"content":"a","priority":"high","status":"pending"}]}],'
        '"is_error":false,"outcome":"finished","model_text":null,"raw_output":null,'
        '"locations":[{"path":"/a","line":3}]}'
    )
    payload = ToolResultRecorded(
        CallId("c"),
        "r",
        [
            TextContent("x"),
            DiffContent("/a", None, "n"),
            TerminalContent("t"),
            ImageContent("d", "image/png"),
            PlanContent((PlanEntry("a", PlanPriority.HIGH, PlanStatus.PENDING),)),
        ],
        False,
        locations=[Location("/a", 3)],
    )
    assert encode_payload(payload) == stored
    row: EventRow = ("br_1", 3, 3, "tool_call.result", stored, "p", 1.5, 1)
    assert decode_event(row).payload == payload


@pytest.mark.parametrize(
    "content",
    [
        '[{"type":"hologram","data":"?"}]',
        '[{"text":"no kind"}]',
        '[{"type":"text"}]',
        '[{"type":"diff","path":"/a","new_text":"n"}]',
        '"text"',
        "5",
        '{"type":"text","text":"not in a list"}',
    ],
    ids=["unknown-kind", "no-kind", "no-text", "no-old-text", "a-string", "a-number", "one-part"],
)
def test_content_that_is_not_a_list_of_parts_makes_the_event_unreadable(content: str) -> None:
    stored = f'{{"call_id":"c","content":{content}}}'
    row: EventRow = ("br_1", 3, 3, "tool_call.progressed", stored, "p", 1.5, EVENT_FORMAT_VERSION)
    with pytest.raises(StoreCorrupt):
        decode_event(row)


def test_places_that_are_not_a_list_of_places_make_the_event_unreadable() -> None:
    stored = (
        '{"request_id":"r","call_id":"c","tool":"read","arguments":{},"locations":[{"line":3}]}'
    )
    row: EventRow = ("br_1", 3, 3, "tool_call.requested", stored, "p", 1.5, EVENT_FORMAT_VERSION)
    with pytest.raises(StoreCorrupt):
        decode_event(row)


def test_the_person_s_input_stored_at_format_1_reads_as_parts_with_what_was_sent() -> None:
    # Format 1 kept ACP's content blocks (camelCase, a resource nested) and what the
    # person sent for a changed block in its `_meta`.
    link = {"type": "resource_link", "uri": "file:///w/a.py", "name": "a.py", "mimeType": "text/x"}
    stored = json.dumps(
        {
            "input_id": "turn_1",
            "content": [
                {
                    "type": "text",
                    "text": "Look",
                    "annotations": {"audience": ["user"], "lastModified": "2025-01-02"},
                    "_meta": {"editor": 1},
                },
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///w/a.py", "text": "x = 1\n", "mimeType": "text/x"},
                    "_meta": {"acp-agent": {"sent": link}},
                },
                {
                    "type": "resource",
                    "resource": {"uri": "file:///b", "blob": "AA==", "_meta": {"r": 1}},
                },
                {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
                "not a block",
            ],
        }
    )
    row: EventRow = ("br_1", 3, 3, "user_input.adopted", stored, "p", 1.5, 1)
    event = decode_event(row)
    assert event.payload == UserInputAdopted(
        "turn_1",
        [
            TextContent("Look", Annotations(("user",), last_modified="2025-01-02"), {"editor": 1}),
            ImageContent("aGk=", "image/png"),
            ResourceContent("file:///w/a.py", "x = 1\n", mime_type="text/x"),
            ResourceContent("file:///b", blob="AA==", resource_meta={"r": 1}),
        ],
        [None, None, ResourceLinkContent("file:///w/a.py", "a.py", mime_type="text/x"), None],
    )
    # Read, it is format 2: a copy of it (a fork, a store migration) writes format 2.
    assert event.format_version == EVENT_FORMAT_VERSION
    copied = encode_event(event)
    assert copied[-1] == EVENT_FORMAT_VERSION
    assert json.loads(copied[4])["sent"][2] == {
        "type": "resource_link",
        "uri": "file:///w/a.py",
        "name": "a.py",
        "mime_type": "text/x",
    }
    assert decode_event(copied) == event


def test_the_person_s_input_shows_as_sent() -> None:
    link = ResourceLinkContent("file:///w/a.py", "a.py")
    adopted = UserInputAdopted(
        "turn_1", [TextContent("hi"), ResourceContent("file:///w/a.py", "x")], [None, link]
    )
    assert adopted.shown() == (TextContent("hi"), link)
    assert UserInputAdopted("turn_2", [TextContent("hi")]).shown() == (TextContent("hi"),)


@pytest.mark.parametrize(
    ("kind", "stored"),
    [
        ("turn.ended", '{"turn_id":"t","stop_reason":"bored"}'),
        ("model_request.finished", '{"request_id":"r","stop_reason":"bored"}'),
        ("model_request.failed", '{"request_id":"r","error":"bored","message":"m"}'),
    ],
)
def test_a_stop_reason_or_failure_this_version_does_not_know_is_a_newer_format(
    kind: str, stored: str
) -> None:
    # Stored as the values of an enum: a new value is a new format, kept unread.
    newer: EventRow = ("br_1", 3, 3, kind, stored, "p", 1.5, EVENT_FORMAT_VERSION + 1)
    assert decode_event(newer).payload == UnknownPayload(kind, json.loads(stored))
    current: EventRow = ("br_1", 3, 3, kind, stored, "p", 1.5, EVENT_FORMAT_VERSION)
    with pytest.raises(StoreCorrupt):
        decode_event(current)


def test_stop_reasons_and_failures_read_back_as_their_enums() -> None:
    row: EventRow = (
        "br_1",
        3,
        3,
        "turn.ended",
        '{"turn_id":"t","stop_reason":"refusal"}',
        "p",
        1.5,
        1,
    )
    assert decode_event(row).payload == TurnEnded(TurnId("t"), TurnStopReason.REFUSAL)
    assert decode_event(row).payload.stop_reason is TurnStopReason.REFUSAL  # type: ignore[attr-defined]
    failed = ModelRequestFailed("r", FailureKind.QUOTA, "m")
    assert encode_payload(failed) == '{"request_id":"r","error":"quota","message":"m"}'
    finished = ModelRequestFinished("r", ModelStopReason.TOOL_USE)
    assert '"stop_reason":"tool_use"' in encode_payload(finished)
