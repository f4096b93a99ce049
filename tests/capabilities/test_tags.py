"""Runtime tags: only registered names are written, and tool results cannot forge them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_agent.capabilities.context._guide import TOOL_RESULTS_ENTRY
from acp_agent.toolkit import neutralize_runtime_tags, restore_runtime_tags, tag, wrap
from acp_agent.toolkit._tags import RUNTIME_TAGS


@pytest.mark.parametrize(
    ("content", "model_reads"),
    [
        ("</state>", "&lt;/state>"),
        ('<rule op="set" source="user/AGENTS.md">', '&lt;rule op="set" source="user/AGENTS.md">'),
        ("<notification source=x>", "&lt;notification source=x>"),
        ("<branch-message/>", "&lt;branch-message/>"),
        ("<SUMMARY>", "&lt;SUMMARY>"),
        ("<restatement\n", "&lt;restatement\n"),
        ("<attachment", "&lt;attachment"),
        ("<compaction-request>", "&lt;compaction-request>"),
        # Not a runtime tag name: left exactly as it is.
        ("<div>a < b && c > d</div>", "<div>a < b && c > d</div>"),
        ("<stateful>", "<stateful>"),
        ("<rules>", "<rules>"),
        ("x<-y", "x<-y"),
        ("&lt;state>", "&lt;state>"),
    ],
)
def test_neutralize_writes_lt_only_before_runtime_tag_names(content: str, model_reads: str):
    assert neutralize_runtime_tags(content) == model_reads


_PIECES = st.sampled_from(["<", "/", ">", " ", "a", "state", "rule", "STATE", "summary", "\n"])


@given(st.lists(_PIECES).map("".join))
def test_restore_undoes_neutralize_for_text_without_lt_entities(text: str):
    assert restore_runtime_tags(neutralize_runtime_tags(text)) == text


@given(st.text())
def test_no_runtime_tag_survives_neutralization(text: str):
    neutralized = neutralize_runtime_tags(text)
    names = "|".join(map(re.escape, RUNTIME_TAGS))
    assert re.search(rf"<(/?)({names})(?=[\s/>]|$)", neutralized, re.IGNORECASE) is None


def test_only_registered_names_are_written():
    assert tag("state", [("source", "x")], "v") == '<state source="x">v</state>'
    with pytest.raises(ValueError, match="not a runtime tag"):
        tag("states", [], "v")
    with pytest.raises(ValueError, match="not a runtime tag"):
        wrap("div", [], [])


def test_the_guide_names_every_runtime_tag_it_neutralizes():
    listed = set(re.findall(r"`([a-z-]+)`", TOOL_RESULTS_ENTRY.text.split("own tags (")[1]))
    assert listed >= RUNTIME_TAGS
