"""One budget for every tool result: each copy capped, the whole kept in the store, nothing
sent twice; the whole read back by lines (`read_result`), wherever its chunks were cut."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from acp_agent.capabilities.execution import FullResults, ResultBudget, ResultLimits, result_tools
from acp_agent.capabilities.execution._full_results import LINE_CHARS
from acp_agent.core import SessionId, Store
from acp_agent.store import MemoryStore, PostgresStore, SqliteStore
from acp_agent.toolkit import DiffContent, ImageContent, TextContent, ToolResult, truncate_middle
from tests.core.support import new_session
from tests.support.postgres import fresh_database, skip_without_postgres

LIMITS = ResultLimits(model_chars=1000, editor_chars=2000, raw_output_bytes=500, image_bytes=100)
SESSION = "sess_1"


async def whole(store: Store, call_id: str, session_id: str = SESSION) -> str:
    """A kept result, its chunks joined (only a test holds it whole)."""
    chunks, index = [], 0
    while (
        chunk := await store.get_output(SessionId(session_id), f"result/{call_id}", index)
    ) is not None:
        chunks.append(chunk)
        index += 1
    return b"".join(chunks).decode("utf-8")


def test_truncate_middle_keeps_head_and_tail_within_the_limit():
    text = "".join(f"{n:05d}\n" for n in range(10_000))
    cut = truncate_middle(text, 300, "{omitted} characters left out")
    assert len(cut) <= 300
    assert cut.startswith("00000\n00001\n")
    assert cut.endswith("09999\n")
    omitted = len(text) - len(cut.split("\n[... ")[0]) - len(cut.split(" ...]\n")[1])
    assert f"[... {omitted} characters left out ...]" in cut
    assert truncate_middle("short", 300, "x") == "short"


async def test_a_result_within_every_cap_is_recorded_as_it_is():
    store = MemoryStore()
    result = ToolResult((TextContent("hello"),), "hello", raw_output={"ok": True})
    budget = ResultBudget(FullResults(store), LIMITS)
    assert await budget.apply(result, session_id=SESSION, call_id="c") == result
    assert await store.list_outputs(SessionId(SESSION)) == []


async def test_each_copy_is_capped_and_the_whole_text_is_kept_once_in_the_store(tmp_path: Path):
    store = await SqliteStore.open(tmp_path / "store.sqlite3")
    try:
        text = "line of output\n" * 1000  # 15,000 characters
        result = ToolResult((TextContent(text),), text, raw_output={"result": text})
        budget = ResultBudget(FullResults(store), LIMITS)
        capped = await budget.apply(result, session_id=SESSION, call_id="call_1")
        assert await whole(store, "call_1") == text
        assert await store.list_outputs(SessionId(SESSION)) == [("result/call_1", len(text))]
    finally:
        await store.aclose()
    assert len(capped.model_text) <= LIMITS.model_chars
    assert 'read_result with call_id "call_1" reads it' in capped.model_text
    [shown] = capped.content
    assert isinstance(shown, TextContent)
    assert len(shown.text) <= LIMITS.editor_chars
    assert 'read_result with call_id "call_1"' in shown.text
    assert capped.raw_output is None  # it only repeated the text


async def test_the_whole_text_of_several_parts_is_kept_joined_by_newlines():
    # Kept a chunk (a quarter of a million characters) at a time: the chunks must add up.
    store = MemoryStore()
    first, second = "première ligne\n" * 100_000, "second part, ünïcode\n" * 100
    result = ToolResult((TextContent(first), TextContent(""), TextContent(second)), "model's")
    await ResultBudget(FullResults(store), LIMITS).apply(result, session_id=SESSION, call_id="c")
    assert await whole(store, "c") == f"{first}\n\n{second}"
    assert await store.get_output(SessionId(SESSION), "result/c", 1) is not None  # chunked


async def test_raw_output_over_its_cap_becomes_a_note_and_a_small_one_stays():
    budget = ResultBudget(FullResults(MemoryStore()), LIMITS)
    big = ToolResult((TextContent("ok"),), "ok", raw_output={"rows": list(range(1000))})
    small = ToolResult((TextContent("ok"),), "ok", raw_output={"rows": [1, 2, 3]})
    assert "omitted" in (await budget.apply(big, session_id="s", call_id="a")).raw_output
    assert (await budget.apply(small, session_id="s", call_id="b")).raw_output == {
        "rows": [1, 2, 3]
    }


async def test_large_images_and_diffs_become_notes_and_small_parts_stay():
    budget = ResultBudget(None, LIMITS)
    result = ToolResult(
        (
            ImageContent("A" * 400, "image/png"),
            DiffContent("/w/big.txt", "a" * 3000, "b" * 3000),
            TextContent("done"),
        ),
        "done",
    )
    capped = await budget.apply(result, session_id="s", call_id="c")
    image, diff, text = capped.content
    assert isinstance(image, TextContent)
    assert "too large to show" in image.text
    assert isinstance(diff, TextContent)
    assert "/w/big.txt is too large to show as a diff" in diff.text
    assert text == TextContent("done")


async def test_without_a_store_the_note_says_nothing_is_kept():
    text = "x" * 5000
    for results in (None, FullResults(None)):
        capped = await ResultBudget(results, LIMITS).apply(
            ToolResult((TextContent(text),), text), session_id="s", call_id="c"
        )
        assert "characters left out ...]" in capped.model_text
        assert "kept" not in capped.model_text


async def test_a_call_id_with_braces_is_named_as_it_is():
    store = MemoryStore()
    text = "y" * 5000
    capped = await ResultBudget(FullResults(store), LIMITS).apply(
        ToolResult((TextContent(text),), text), session_id=SESSION, call_id="c{0}"
    )
    assert 'call_id "c{0}"' in capped.model_text
    assert await whole(store, "c{0}") == text


# --- reading back -------------------------------------------------------------------------


def expected_lines(text: str) -> list[str]:
    """What `read_result` numbers: the lines, each longer one as several of LINE_CHARS."""
    lines = text.split("\n")
    if text.endswith("\n") or not text:
        lines.pop()
    return [
        line[start : start + LINE_CHARS]
        for line in lines
        for start in range(0, max(len(line), 1), LINE_CHARS)
    ]


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


_SEGMENTS = st.lists(
    st.tuples(
        st.sampled_from([0, 1, LINE_CHARS - 1, LINE_CHARS, LINE_CHARS + 1, 2 * LINE_CHARS]),
        st.sampled_from(["a", "é", "😀"]),
        st.booleans(),
    ),
    max_size=6,
)


@given(segments=_SEGMENTS, cuts=st.lists(st.integers(min_value=0, max_value=40_000), max_size=6))
# A whole line's worth of characters ends one chunk, its newline starts the next.
@example(segments=[(LINE_CHARS, "a", True), (1, "b", False)], cuts=[LINE_CHARS])
@example(segments=[(2 * LINE_CHARS, "é", True)], cuts=[2 * LINE_CHARS + 1, LINE_CHARS])
def test_lines_read_back_the_same_wherever_the_chunks_were_cut(
    segments: list[tuple[int, str, bool]], cuts: list[int]
) -> None:
    # Chunks cut anywhere, mid-line and mid-character (as an old file goes in): the lines
    # read back are the text's, long ones wrapped as if it were whole.
    text = "".join(char * size + ("\n" if newline else "") for size, char, newline in segments)
    assume(text)  # an empty output is no output: nothing is cut to nothing
    store = MemoryStore()
    results = FullResults(store)

    async def read() -> list[str]:
        await store.put_output(SessionId(SESSION), "result/c", chunked(text.encode(), cuts))
        found = await results.read_lines(SESSION, "c", 1, 10_000, max_chars=10**9)
        assert found is not None
        assert found.at_end
        return list(found.lines)

    assert anyio.run(read) == expected_lines(text)


async def test_lines_come_from_an_offset_up_to_a_limit_and_say_whether_more_follow():
    store = MemoryStore()
    results = FullResults(store)
    lines = [f"line {n}" for n in range(1, 101)]
    chunks = chunked("\n".join(lines).encode(), [100, 101, 350])
    await store.put_output(SessionId(SESSION), "result/c", chunks)
    middle = await results.read_lines(SESSION, "c", 40, 3, max_chars=10_000)
    end = await results.read_lines(SESSION, "c", 99, 5, max_chars=10_000)
    exactly = await results.read_lines(SESSION, "c", 98, 3, max_chars=10_000)
    past = await results.read_lines(SESSION, "c", 200, 5, max_chars=10_000)
    short = await results.read_lines(SESSION, "c", 1, 100, max_chars=20)
    assert middle is not None
    assert middle.lines == ("line 40", "line 41", "line 42")
    assert not middle.at_end
    assert end is not None
    assert end.lines == ("line 99", "line 100")
    assert end.at_end
    assert exactly is not None
    assert exactly.lines == ("line 98", "line 99", "line 100")
    assert exactly.at_end
    assert past is not None
    assert past.lines == ()
    assert past.at_end
    assert short is not None
    assert short.lines == ("line 1", "line 2")
    assert not short.at_end
    assert await results.read_lines(SESSION, "other", 1, 5, max_chars=100) is None
    assert await FullResults(None).read_lines(SESSION, "c", 1, 5, max_chars=100) is None


async def test_read_result_numbers_the_lines_and_says_where_to_read_on():
    store = MemoryStore()
    text = "".join(f"row {n}\n" for n in range(1, 5001))
    await store.put_output(SessionId(SESSION), "result/big", [text.encode()])
    [tool] = result_tools(FullResults(store), SESSION)
    first = await tool.act(tool.service, {"call_id": "big", "offset": 2500, "limit": 2})
    last = await tool.act(tool.service, {"call_id": "big", "offset": 5000})
    missing = await tool.act(tool.service, {"call_id": "nothing"})
    assert "2500\trow 2500\n2501\trow 2501" in first.model_text
    assert "more follow (read on with offset 2502)" in first.model_text
    assert "5000\trow 5000" in last.model_text
    assert "its end" in last.model_text
    assert missing.is_error
    assert "No whole result is kept for call nothing" in missing.model_text
    [own] = result_tools(FullResults(store), "sess_2")
    refused = await own.act(own.service, {"call_id": "big"})
    assert refused.is_error  # another session's results are not this one's


# --- results from before the store kept them ----------------------------------------------


async def test_a_sessions_old_result_files_go_into_the_store_once_and_read_by_id_or_path(
    tmp_path: Path,
):
    folder = tmp_path / "tool-results" / SESSION
    folder.mkdir(parents=True)
    old = "old result\n" * 10
    (folder / "call_9.txt").write_text(old)
    store = MemoryStore()
    results = FullResults(store, tmp_path / "tool-results")
    await results.share_folder(SESSION)
    assert (folder / ".shared").exists()
    assert await whole(store, "call_9") == old
    (folder / "call_10.txt").write_text("after the mark")
    await results.share_folder(SESSION)  # once: the mark says it was done
    assert await store.list_outputs(SessionId(SESSION)) == [("result/call_9", len(old))]
    by_path = await results.read_lines(SESSION, str(folder / "call_9.txt"), 1, 1, max_chars=99)
    assert by_path is not None
    assert by_path.lines == ("old result",)
    await results.forget_folder(SESSION)
    assert not folder.exists()


@pytest.mark.parametrize("name", ["../../etc/passwd", ".hidden", "a/b"])
def test_ids_cannot_escape_the_old_results_folder(tmp_path: Path, name: str):
    folder = FullResults(None, tmp_path).folder(name)
    assert folder is not None
    assert folder.resolve().is_relative_to(tmp_path.resolve())


# --- on a team's store --------------------------------------------------------------------


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with fresh_database(skip_without_postgres(pytest.skip)) as url:
        yield url


async def test_a_result_one_agent_kept_is_read_by_the_agent_that_took_the_session_over(
    postgres_url: str,
):
    # Two handles on one PostgreSQL database stand for two app servers: A keeps a result
    # of 3.6 MB (four chunks) and goes; B takes the session over and reads it by lines.
    text = "".join(f"line {n:07d} of a long tool output\n" for n in range(1, 100_001))
    first = await PostgresStore.open(postgres_url)
    try:
        session = await new_session(first)
        kept = await ResultBudget(FullResults(first), LIMITS).apply(
            ToolResult((TextContent(text),), text), session_id=session.session_id, call_id="big"
        )
    finally:
        await first.aclose()
    second = await PostgresStore.open(postgres_url)
    try:
        await second.acquire_session(session.session_id)  # A's lease went with it
        [tool] = result_tools(FullResults(second), session.session_id)
        read = await tool.act(tool.service, {"call_id": "big", "offset": 77_777, "limit": 2})
        outputs = await second.list_outputs(session.session_id)
    finally:
        await second.aclose()
    assert "line 0077777" not in kept.model_text  # the capped copy left it out
    assert "77777\tline 0077777 of a long tool output\n77778\tline 0077778" in read.model_text
    assert outputs == [("result/big", len(text))]
