"""Which kept replay chunks a load may send (`_replay_kept`), and a chunk's own format.

In memory: chunks and events made here. That the lines a load sends from chunks equal
translating the history is end to end (`test_replay_kept.py`).
"""

from __future__ import annotations

from acp_agent.adapters.acp._replay_kept import KeptChunk, _encoded_chunk, _usable
from acp_agent.core import (
    BranchId,
    CallId,
    Event,
    ModelTextDelta,
    Payload,
    Seq,
    ToolCallStarted,
    TurnEnded,
    TurnId,
    TurnStopReason,
)


def event(seq: int, payload: Payload) -> Event:
    return Event(BranchId("b"), Seq(seq), Seq(seq), payload, "test", 0.0)  # type: ignore[arg-type]


def turn_end(seq: int) -> Event:
    return event(seq, TurnEnded(TurnId(f"t{seq}"), TurnStopReason.END_TURN))


def started(seq: int, call: str) -> Event:
    return event(seq, ToolCallStarted(CallId(call)))


def chunk(after: int, last: int, *items: str) -> KeptChunk:
    return KeptChunk(after, last, b"line", None, frozenset(("call", i) for i in items))


HISTORY = [started(1, "c1"), turn_end(2), started(3, "c2"), turn_end(4), turn_end(5)]


def test_chunks_are_used_as_a_chain_from_the_start_up_to_what_is_published() -> None:
    one, two = chunk(0, 2, "c1"), chunk(2, 4, "c2")
    assert _usable([one, two], HISTORY, 5, []) == [one, two]
    assert _usable([one, two], HISTORY, 3, []) == [one]  # the second ends past it
    assert _usable([two], HISTORY, 5, []) == []  # not from the start
    assert _usable([one, chunk(3, 4, "c2")], HISTORY, 5, []) == [one]  # a gap


def test_a_rewind_that_takes_back_some_of_a_chunk_ends_the_chunks_there() -> None:
    one, two = chunk(0, 2, "c1"), chunk(2, 4, "c2")
    # Recorded at 5, taking back from 3 on: the second chunk showed what it hid.
    assert _usable([one, two], HISTORY, 5, [(3, 5)]) == [one]
    # Taking back from 1 on: both.
    assert _usable([one, two], HISTORY, 5, [(1, 5)]) == []
    # A rewind the chunk knew (recorded inside it) is in its lines already.
    assert _usable([one, two], HISTORY, 5, [(3, 4)]) == [one, two]


def test_an_event_of_a_thing_a_chunk_shows_ends_the_chunks_at_that_chunk() -> None:
    one, two = chunk(0, 2, "c1"), chunk(2, 4, "c2")
    later = [*HISTORY, started(6, "c1")]  # call c1 again, after both chunks
    assert _usable([one, two], later, 6, []) == []
    # A thing of the second chunk, shown again in a third chunk: the first stays.
    three = chunk(4, 5, "c2")
    assert _usable([one, two, three], HISTORY, 5, []) == [one]


def test_a_chunk_reads_back_as_it_was_kept_and_anything_else_reads_as_none() -> None:
    kept = KeptChunk(3, 9, b"a\nbb", 1, frozenset({("call", "c1"), ("branch", "x")}))
    assert KeptChunk.decode(kept.encode()) == kept
    for broken in (
        b"",
        b"no header",
        b'{"format":99,"after":0,"last":1,"usage_at":null,"items":[]}\nx',
        b'{"format":1,"after":2,"last":1,"usage_at":null,"items":[]}\nx',  # ends first
        b'{"format":1,"after":0,"last":1,"usage_at":5,"items":[]}\nx',  # past the body
        b'{"format":1,"after":0,"last":1,"items":[]}\nx',
        b'{"format":1,"after":0,"last":1,"usage_at":null,"items":[1]}\nx',
    ):
        assert KeptChunk.decode(broken) is None, broken


def test_a_chunk_encoded_from_its_steps_lines_reads_back_whole() -> None:
    items = frozenset({("call", "c1")})
    lines = [[b"one", b"two"], [], [b"three"]]
    encoded = _encoded_chunk(3, 9, lines, [0], items)
    # The usage update goes after the lines of the last step that grew it.
    assert KeptChunk.decode(encoded) == KeptChunk(3, 9, b"one\ntwo\nthree", 7, items)
    assert encoded == KeptChunk(3, 9, b"one\ntwo\nthree", 7, items).encode()
    assert KeptChunk.decode(_encoded_chunk(3, 9, [[]], [], items)) == KeptChunk(
        3, 9, b"", None, items
    )


def test_the_usage_update_goes_after_the_line_where_the_usage_last_grew() -> None:
    body = b"one\ntwo\nthree"
    assert KeptChunk(0, 1, body, 7, frozenset()).with_usage(b"U") == b"one\ntwo\nU\nthree"
    assert KeptChunk(0, 1, body, 0, frozenset()).with_usage(b"U") == b"U\none\ntwo\nthree"
    assert KeptChunk(0, 1, body, len(body), frozenset()).with_usage(b"U") == body + b"\nU"
    assert KeptChunk(0, 1, b"", 0, frozenset()).with_usage(b"U") == b"U"
    assert KeptChunk(0, 1, body, None, frozenset()).with_usage(b"U") == body
    assert KeptChunk(0, 1, body, 7, frozenset()).with_usage(None) == body


def test_text_is_never_the_end_of_a_chunk() -> None:
    from acp_agent.adapters.acp._replay_kept import _closes

    assert _closes(turn_end(2), [[b"x"]])
    assert not _closes(event(2, ModelTextDelta("r1", "so far")), [[b"x"]])
