"""A stored payload reads the same by its reader as by cattrs, value and type alike;
`compact_json` writes what `json.dumps` writes.

Decoding reads each payload (and each content part) with a reader made for its
class (`core._codec._payload_reader`), faster than cattrs' hook. For every
payload and part class, objects built from its fields' types (sometimes with a
value of another JSON type, a key left out or one too many) must read exactly as
cattrs reads them: an equal instance whose values have the same types (cattrs
coerces, so `1` where a `str` belongs reads as `"1"`), or the same error.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_agent.content import Location, TextContent
from acp_agent.core import PAYLOAD_TYPES, compact_json
from acp_agent.core._codec import _PART_CLASSES, _reader, _structure_hook

#: Every class a reader is made for: the payloads and the content parts.
CLASSES = sorted({*PAYLOAD_TYPES.values(), *_PART_CLASSES.values()}, key=lambda c: c.__name__)

_SCALARS = (
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=5),
)
#: Any JSON value, each kind about as likely (a `True` where an `int` belongs is the
#: case most worth finding).
_JSON = st.one_of(
    *_SCALARS,
    st.lists(st.one_of(*_SCALARS), max_size=3),
    st.dictionaries(st.text(max_size=3), st.one_of(*_SCALARS), max_size=3),
)


def _of(tp: Any) -> st.SearchStrategy[Any]:
    """JSON a value of `tp` is stored as (parts and places as their stored objects)."""
    while hasattr(tp, "__supertype__"):
        tp = tp.__supertype__
    args, origin = typing.get_args(tp), typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([_of(arg) for arg in args])
    if tp is type(None):
        return st.none()
    if tp is str:
        return st.text(max_size=8)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers()
    if tp is float:
        return st.floats(allow_nan=False)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from([member.value for member in tp])
    if origin in (list, tuple) and args:
        return st.lists(_of(args[0]), max_size=3)
    if tp in (list, dict) or tp is Any or origin is dict:
        return _JSON
    if typing.get_origin(tp) is None and getattr(tp, "__name__", "") == "ContentPart":
        return st.builds(lambda text: {"type": "text", "text": text}, st.text(max_size=5))
    if tp is Location:
        return st.fixed_dictionaries({"path": st.text(max_size=5)})
    if isinstance(tp, type) and attrs.has(tp):
        return _objects(tp)
    raise AssertionError(f"no strategy for {tp!r}")


def _objects(cls: type[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects stored for `cls`: each field's value of its type (a field with a default
    sometimes left out), then at most one field given any JSON value or left out, and
    now and then a key the class does not have."""
    hints = typing.get_type_hints(cls)
    fields = attrs.fields(cls)

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        data = {
            field.name: draw(_of(hints[field.name]))
            for field in fields
            if field.default is attrs.NOTHING or draw(st.booleans())
        }
        spoilt = draw(st.sampled_from([None, *(field.name for field in fields)]))
        if spoilt is not None:
            if draw(st.booleans()):
                data[spoilt] = draw(_JSON)
            else:
                data.pop(spoilt, None)
        if draw(st.integers(0, 9)) == 0:
            data["not_a_field"] = draw(_JSON)
        return data

    return build()


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (`1 == True`, `1 == 1.0`)."""
    if type(a) is not type(b):
        return False
    if attrs.has(type(a)):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _outcome(read: Any) -> tuple[str, Any]:
    try:
        return "read", read()
    except Exception as exc:
        return "raised", type(exc)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_reader_reads_what_cattrs_reads(cls: type[Any], data: st.DataObject) -> None:
    stored = data.draw(_objects(cls))
    hook = _structure_hook(cls)
    expected = _outcome(lambda: hook(dict(stored), cls))
    got = _outcome(lambda: _reader(cls)(dict(stored)))
    assert got[0] == expected[0], (stored, got, expected)
    if got[0] == "read":
        assert _same(got[1], expected[1]), (stored, got[1], expected[1])
    else:
        assert got[1] is expected[1]


def test_a_plain_payload_is_read_without_its_cattrs_hook() -> None:
    # The point of the readers: a plain class never goes through cattrs when its
    # object is as stored (a fallback on every event would pass the test above).
    reader = _reader(TextContent)
    assert reader.__name__ == "read"
    assert "cattrs" not in reader.__code__.co_filename
    assert reader({"text": "hi"}) == TextContent("hi")


@attrs.frozen
class _Node:
    name: str
    child: _Node | None = None


def test_a_class_that_holds_itself_reads_as_cattrs_reads() -> None:
    # Its reader is made while it is being made: the inner one is read by its hook.
    stored = {"name": "a", "child": {"name": "b", "child": {"name": "c"}}}
    assert _reader(_Node)(stored) == _structure_hook(_Node)(stored, _Node)
    assert _reader(_Node)(stored).child.child == _Node("c")


_ANY_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet=st.characters(codec="utf-8")),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=_ANY_JSON)
def test_compact_json_writes_what_json_dumps_writes(value: Any) -> None:
    # The context shows a call's arguments with it; a stored payload is written with it.
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert compact_json(value) == expected
