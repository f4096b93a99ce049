"""Hypothesis strategies for every generated ACP type, built from its wire table.

Values respect the schema's constraints (integer formats, `minLength`, tags,
the alternatives of merged classes), so that a round trip can be checked
against the JSON Schema as well as for equality.
"""

from __future__ import annotations

import enum
import typing
from functools import cache
from typing import Any

import attrs
from hypothesis import strategies as st

from protocol import types
from protocol._wire import JSON_NULL, OpenEnumMixin

__all__ = ("json_values", "strategy_for")

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
FALLBACKS = {u.fallback: u for u in types.TAGGED_UNIONS if u.fallback is not None}


def strategy_for(t: Any, constraints: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    """A strategy for a field type, honouring JSON Schema constraints."""
    constraints = constraints or {}
    origin = typing.get_origin(t)
    if t is Any:
        return json_values
    if t is type(None):
        return st.none()
    if t is str:
        return st.text(min_size=constraints.get("minLength", 0), max_size=12)
    if t is bool:
        return st.booleans()
    if t is int:
        return st.integers(
            constraints.get("minimum", -(2**63)), constraints.get("maximum", 2**63 - 1)
        )
    if t is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(t))
    if origin is list:
        (item,) = typing.get_args(t)
        return st.lists(strategy_for(item), max_size=2)
    if origin is dict:
        _, value = typing.get_args(t)
        return st.dictionaries(st.text(max_size=5), strategy_for(value), max_size=2)
    if origin in (typing.Union, __import__("types").UnionType):
        return st.one_of([strategy_for(a, constraints) for a in typing.get_args(t)])
    if t is types.JsonNull:
        return st.just(JSON_NULL)
    if isinstance(t, type) and issubclass(t, enum.Enum):
        known = st.sampled_from(list(t))
        if issubclass(t, OpenEnumMixin):
            made = st.text(min_size=1, max_size=6).map(lambda s: t("_" + s))
            if issubclass(t, int):
                made = st.integers(-31999, -31000).map(t)
            return known | made
        return known
    if attrs.has(t):
        return st.deferred(lambda: class_strategy(t))
    raise TypeError(f"no strategy for {t!r}")


@cache
def class_strategy(cls: type) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    wire = {f.name: f for f in types.WIRE_FIELDS[cls]}
    alternatives = types.ALTERNATIVES.get(cls, ())
    fallback_of = FALLBACKS.get(cls)

    def field_strategy(name: str, forced: bool) -> st.SearchStrategy[Any]:
        field = wire[name]
        t = hints[name]
        if fallback_of is not None and field.wire_name == fallback_of.tag:
            # The open member keeps unknown tags only: known ones pick their class.
            return st.text(min_size=1, max_size=6).map(lambda s: "_" + s)
        inner = strategy_for(t, dict(field.constraints))
        if forced:
            return strategy_for(_non_null(t), dict(field.constraints))
        return inner

    def build(chosen: tuple[str, ...]) -> st.SearchStrategy[Any]:
        kwargs = {}
        for attribute in attrs.fields(cls):
            if attribute.name in wire and wire[attribute.name].tag:
                continue
            forced = attribute.name in chosen
            if attribute.default is attrs.NOTHING or forced:
                kwargs[attribute.name] = field_strategy(attribute.name, forced)
            else:
                kwargs[attribute.name] = st.none() | field_strategy(attribute.name, False)
                if attribute.default is not None:
                    kwargs[attribute.name] = field_strategy(attribute.name, False)
        return st.builds(cls, **kwargs)

    if alternatives:
        return st.one_of([build(alt) for alt in alternatives])
    return build(())


def _non_null(t: Any) -> Any:
    args = [a for a in typing.get_args(t) if a not in (type(None), types.JsonNull)]
    if not args:
        return t
    return typing.Union[tuple(args)] if len(args) > 1 else args[0]  # noqa: UP007
