"""Every generated v2 type survives unstructure -> JSON -> structure and validates.

As `test_roundtrip.py` does for v1: each class against the v2 draft's unstable schema,
and each stable class, drawn without what only the unstable schema has, against the
stable one (the converter writing no unstable field). That second pass runs by default
on the classes messages are (their parts are drawn inside them); on every stable class
with `ACP_AGENT_SLOW_TESTS=1`.
"""

from __future__ import annotations

import json
import typing
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from protocol.v2 import methods, types
from protocol.v2.converter import get_converter
from protocol.validation import SCHEMA_DIRS

from .strategies import WireStrategies

SCHEMA_DIR = SCHEMA_DIRS[2]
STABLE = get_converter()
UNSTABLE = get_converter(include_unstable=True)
ANY_SHAPE = WireStrategies(types)
STABLE_SHAPES = WireStrategies(types, stable_only=True)
CLASSES = [cls for cls in types.ALL_TYPES if cls in types.WIRE_FIELDS]


@cache
def definitions(schema_file: str) -> dict[str, Any]:
    return dict(json.loads((SCHEMA_DIR / schema_file).read_text(encoding="utf-8"))["$defs"])


@cache
def validator(schema_file: str, definition: str) -> Draft202012Validator:
    schema = {"$ref": f"#/$defs/{definition}", "$defs": definitions(schema_file)}
    return Draft202012Validator(schema)


def members(t: Any) -> set[type]:
    """The classes `t` is: itself, or its members, nested unions flattened."""
    inner = typing.get_args(t)
    return {c for arg in inner for c in members(arg)} if inner else {t}


def sampled(classes: list[type]) -> list[Any]:
    """The classes messages are (params, results, session updates); the rest run when slow."""
    names = {"SessionUpdate"}
    for table in (methods.REQUESTS, methods.NOTIFICATIONS):
        names |= {name for spec in table.values() for name in (spec.params, spec.result) if name}
    messages = {c for name in names for c in members(getattr(types, name))}
    return [
        cls if cls in messages else pytest.param(cls, marks=pytest.mark.slow) for cls in classes
    ]


STABLE_CLASSES = [
    cls
    for cls in CLASSES
    if cls not in types.UNSTABLE_TYPES and types.DEFINITION_OF[cls] in definitions("schema.json")
]


def wire_round_trip(converter: Any, value: Any, cls: Any) -> tuple[Any, Any]:
    wire = json.loads(json.dumps(converter.unstructure(value)))
    return wire, converter.structure(wire, cls)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_v2_type_round_trips_and_validates_against_the_unstable_schema(
    cls: type, data: st.DataObject
) -> None:
    value = data.draw(ANY_SHAPE.class_strategy(cls))
    wire, back = wire_round_trip(UNSTABLE, value, cls)
    assert back == value
    errors = list(validator("schema.unstable.json", types.DEFINITION_OF[cls]).iter_errors(wire))
    assert not errors, [e.message for e in errors]


@pytest.mark.parametrize("cls", sampled(STABLE_CLASSES), ids=lambda c: c.__name__)
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_stable_v2_type_written_stable_round_trips_and_validates_against_the_stable_schema(
    cls: type, data: st.DataObject
) -> None:
    value = data.draw(STABLE_SHAPES.class_strategy(cls))
    wire, back = wire_round_trip(STABLE, value, cls)
    assert back == value
    errors = list(validator("schema.json", types.DEFINITION_OF[cls]).iter_errors(wire))
    assert not errors, [e.message for e in errors]
    stable_keys = {f.wire_name for f in types.WIRE_FIELDS[cls] if not f.unstable}
    if not any(f.rest for f in types.WIRE_FIELDS[cls]):
        assert set(wire) <= stable_keys
