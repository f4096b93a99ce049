"""One budget for every tool result: each copy capped, the whole kept, nothing sent twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.capabilities.execution import ResultBudget, ResultLimits
from acp_agent.toolkit import DiffContent, ImageContent, TextContent, ToolResult, truncate_middle

LIMITS = ResultLimits(model_chars=1000, editor_chars=2000, raw_output_bytes=500, image_bytes=100)


def test_truncate_middle_keeps_head_and_tail_within_the_limit():
    text = "".join(f"{n:05d}\n" for n in range(10_000))
    cut = truncate_middle(text, 300, "{omitted} characters left out")
    assert len(cut) <= 300
    assert cut.startswith("00000\n00001\n")
    assert cut.endswith("09999\n")
    omitted = len(text) - len(cut.split("\n[... ")[0]) - len(cut.split(" ...]\n")[1])
    assert f"[... {omitted} characters left out ...]" in cut
    assert truncate_middle("short", 300, "x") == "short"


async def test_a_result_within_every_cap_is_recorded_as_it_is(tmp_path: Path):
    result = ToolResult((TextContent("hello"),), "hello", raw_output={"ok": True})
    budget = ResultBudget(tmp_path, LIMITS)
    assert await budget.apply(result, session_id="s", call_id="c") == result
    assert not (tmp_path / "s").exists()


async def test_each_copy_is_capped_and_the_whole_text_is_kept_once(tmp_path: Path):
    text = "line of output\n" * 1000  # 15,000 characters
    result = ToolResult((TextContent(text),), text, raw_output={"result": text})
    budget = ResultBudget(tmp_path, LIMITS)
    capped = await budget.apply(result, session_id="sess_1", call_id="call_1")

    saved = tmp_path / "sess_1" / "call_1.txt"
    assert saved.read_text() == text
    assert len(capped.model_text) <= LIMITS.model_chars
    assert str(saved) in capped.model_text
    [shown] = capped.content
    assert isinstance(shown, TextContent)
    assert len(shown.text) <= LIMITS.editor_chars
    assert str(saved) in shown.text
    assert capped.raw_output is None  # it only repeated the text


async def test_the_whole_text_of_several_parts_is_kept_joined_by_newlines(tmp_path: Path):
    # Written a slice (a million characters) at a time: the slices must add up.
    first, second = "première ligne\n" * 100_000, "second part, ünïcode\n" * 100
    result = ToolResult((TextContent(first), TextContent(second)), "model's text")
    await ResultBudget(tmp_path, LIMITS).apply(result, session_id="s", call_id="c")
    saved = tmp_path / "s" / "c.txt"
    assert saved.read_text(encoding="utf-8") == f"{first}\n{second}"


async def test_raw_output_over_its_cap_becomes_a_note_and_a_small_one_stays(tmp_path: Path):
    budget = ResultBudget(tmp_path, LIMITS)
    big = ToolResult((TextContent("ok"),), "ok", raw_output={"rows": list(range(1000))})
    small = ToolResult((TextContent("ok"),), "ok", raw_output={"rows": [1, 2, 3]})
    assert "omitted" in (await budget.apply(big, session_id="s", call_id="a")).raw_output
    assert (await budget.apply(small, session_id="s", call_id="b")).raw_output == {
        "rows": [1, 2, 3]
    }


async def test_large_images_and_diffs_become_notes_and_small_parts_stay(tmp_path: Path):
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


async def test_without_a_results_dir_the_note_says_nothing_of_a_file(tmp_path: Path):
    text = "x" * 5000
    capped = await ResultBudget(None, LIMITS).apply(
        ToolResult((TextContent(text),), text), session_id="s", call_id="c"
    )
    assert "characters left out ...]" in capped.model_text
    assert "whole result" not in capped.model_text


async def test_forgetting_a_session_deletes_what_was_kept(tmp_path: Path):
    budget = ResultBudget(tmp_path, LIMITS)
    text = "y" * 5000
    await budget.apply(ToolResult((TextContent(text),), text), session_id="s1", call_id="c")
    await budget.apply(ToolResult((TextContent(text),), text), session_id="s2", call_id="c")
    await budget.forget_session("s1")
    assert not (tmp_path / "s1").exists()
    assert (tmp_path / "s2" / "c.txt").exists()


@pytest.mark.parametrize("name", ["../../etc/passwd", ".hidden", "a/b"])
def test_ids_cannot_escape_the_results_dir(tmp_path: Path, name: str):
    path = ResultBudget(tmp_path, LIMITS).saved_path(name, name)
    assert path is not None
    assert path.resolve().is_relative_to(tmp_path.resolve())
