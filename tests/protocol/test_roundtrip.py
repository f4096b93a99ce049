"""Every generated type survives unstructure -> JSON -> structure and validates."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from protocol import types
from protocol.converter import get_converter

from .strategies import strategy_for

SCHEMA_DIR = Path(types.__file__).with_name("schema")
STABLE = get_converter()
UNSTABLE = get_converter(include_unstable=True)
CLASSES = [cls for cls in types.ALL_TYPES if cls in types.WIRE_FIELDS]


@cache
def validator(schema_file: str, definition: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / schema_file).read_text(encoding="utf-8"))
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]})


def wire_round_trip(converter: Any, value: Any, cls: Any) -> tuple[Any, Any]:
    wire = json.loads(json.dumps(converter.unstructure(value)))
    return wire, converter.structure(wire, cls)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_type_round_trips_and_validates_against_the_unstable_schema(
    cls: type, data: st.DataObject
) -> None:
    value = data.draw(strategy_for(cls))
    wire, back = wire_round_trip(UNSTABLE, value, cls)
    assert back == value
    errors = list(validator("schema.unstable.json", types.DEFINITION_OF[cls]).iter_errors(wire))
    assert not errors, [e.message for e in errors]


STABLE_CLASSES = [
    cls
    for cls in CLASSES
    if cls not in types.UNSTABLE_TYPES
    and types.DEFINITION_OF[cls] in json.loads((SCHEMA_DIR / "schema.json").read_text())["$defs"]
]


@pytest.mark.parametrize("cls", STABLE_CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_stable_output_never_carries_unstable_fields(cls: type, data: st.DataObject) -> None:
    value = data.draw(strategy_for(cls))
    wire = json.loads(json.dumps(STABLE.unstructure(value)))
    stable_keys = {f.wire_name for f in types.WIRE_FIELDS[cls] if not f.unstable}
    assert set(wire) <= stable_keys
