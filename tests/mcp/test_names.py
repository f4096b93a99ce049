"""Model-facing MCP tool names: valid for providers, readable, deterministic, distinct."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acp_agent.mcp import TOOL_NAME_PATTERN, assign_tool_names


def test_names_that_already_fit_are_kept_exactly() -> None:
    assert assign_tool_names([("github", "create_issue"), ("fs", "read-file")]) == {
        ("github", "create_issue"): "mcp__github__create_issue",
        ("fs", "read-file"): "mcp__fs__read-file",
    }


def test_characters_providers_refuse_become_underscores() -> None:
    assert assign_tool_names([("my server", "get.weather")]) == {
        ("my server", "get.weather"): "mcp__my_server__get_weather"
    }


def test_a_name_that_would_be_too_long_is_shortened_and_marked_with_a_digest() -> None:
    name = assign_tool_names([("s", "t" * 70)])[("s", "t" * 70)]
    assert len(name) == 64
    assert name.startswith("mcp__s__ttt")
    assert TOOL_NAME_PATTERN.match(name)


def test_a_cleaned_name_never_takes_an_exact_one_and_both_stay_distinct() -> None:
    names = assign_tool_names([("my_server", "get_weather"), ("my server", "get.weather")])
    assert names[("my_server", "get_weather")] == "mcp__my_server__get_weather"
    assert names[("my server", "get.weather")].startswith("mcp__my_server__get_weather_")
    assert len(set(names.values())) == 2


def test_the_separator_inside_names_cannot_make_two_tools_one() -> None:
    names = assign_tool_names([("a__b", "c"), ("a", "b__c")])
    assert len(set(names.values())) == 2
    assert all(name.startswith("mcp__a__b") for name in names.values())


pairs = st.lists(
    st.tuples(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=80)), max_size=12
)


@given(pairs)
def test_any_set_gets_distinct_valid_names_whatever_its_order(given_pairs: list) -> None:
    names = assign_tool_names(given_pairs)
    assert set(names) == set(given_pairs)
    assert len(set(names.values())) == len(names)
    assert all(TOOL_NAME_PATTERN.match(name) for name in names.values())
    assert assign_tool_names(reversed(given_pairs)) == names
