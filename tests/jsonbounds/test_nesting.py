"""How deep a JSON value may nest: counted without recursion, tuples as arrays."""

from __future__ import annotations

import pytest

from jsonbounds import MAX_JSON_DEPTH, TOO_DEEP, nesting_exceeds


def nested(depth: int) -> object:
    """`[[...]]`, `depth` levels, built without recursion."""
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "limit", "exceeds"),
    [
        (1, 0, False),
        ("text", 0, False),
        ([], 1, False),
        ([], 0, True),
        ({"a": [1, {"b": []}]}, 4, False),
        ({"a": [1, {"b": []}]}, 3, True),
        (nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH, False),
        (nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH, True),
        (nested(50_000), MAX_JSON_DEPTH, True),  # no recursion of its own
        (((1,),), 2, False),  # tuples count as arrays
        (((1,),), 1, True),
    ],
)
def test_nesting_exceeds_counts_objects_and_arrays(value: object, limit: int, exceeds: bool):
    assert nesting_exceeds(value, limit) is exceeds


def test_a_refusal_names_the_limit():
    assert str(MAX_JSON_DEPTH) in TOO_DEEP
