"""Hypothesis strategies for every generated ACP type, built from its wire table.

Values respect the schema's constraints (integer formats, `minLength`, tags,
the alternatives of merged classes), so that a round trip can be checked
against the JSON Schema as well as for equality. `WireStrategies` serves one
protocol version's types (v1's `protocol.types`, v2's `protocol.v2.types`);
with `stable_only` it draws nothing the stable schema lacks.
"""

from __future__ import annotations

import enum
import types as pytypes
import typing
from typing import Any

import attrs
from hypothesis import strategies as st

from protocol import types
from protocol._wire import JSON_NULL, JsonNull, OpenEnumMixin

__all__ = ("WireStrategies", "json_values", "strategy_for")

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


class WireStrategies:
    """Strategies for the classes of one generated types module (`protocol.types` or v2's)."""

    def __init__(self, types_module: Any, *, stable_only: bool = False) -> None:
        self.types = types_module
        self.stable_only = stable_only
        self.fallbacks = {u.fallback: u for u in types_module.TAGGED_UNIONS if u.fallback}
        self._classes: dict[type, st.SearchStrategy[Any]] = {}

    def strategy_for(
        self, t: Any, constraints: dict[str, Any] | None = None
    ) -> st.SearchStrategy[Any]:
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
            return st.floats(
                constraints.get("minimum"),
                constraints.get("maximum"),
                allow_nan=False,
                allow_infinity=False,
            )
        if origin is typing.Literal:
            return st.sampled_from(typing.get_args(t))
        if origin is list:
            (item,) = typing.get_args(t)
            at_least = constraints.get("minItems", 0)
            return st.lists(
                self.strategy_for(item, constraints.get("items")),
                min_size=at_least,
                max_size=max(2, at_least),
            )
        if origin is dict:
            _, value = typing.get_args(t)
            return st.dictionaries(st.text(max_size=5), self.strategy_for(value), max_size=2)
        if origin in (typing.Union, pytypes.UnionType):
            members = [a for a in typing.get_args(t) if self._drawable(a)]
            return st.one_of([self.strategy_for(a, constraints) for a in members])
        if t is JsonNull:
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
            return st.deferred(lambda: self.class_strategy(t))
        raise TypeError(f"no strategy for {t!r}")

    def _drawable(self, t: Any) -> bool:
        """Whether a union member may be drawn: not an unstable class when stable only."""
        if not self.stable_only:
            return True
        inner = typing.get_args(t)
        if typing.get_origin(t) in (typing.Union, pytypes.UnionType):
            return any(self._drawable(a) for a in inner)
        return t not in self.types.UNSTABLE_TYPES

    def class_strategy(self, cls: type) -> st.SearchStrategy[Any]:
        made = self._classes.get(cls)
        if made is None:
            made = self._classes[cls] = self._build_class_strategy(cls)
        return made

    def _build_class_strategy(self, cls: type) -> st.SearchStrategy[Any]:
        hints = typing.get_type_hints(cls)
        wire = {f.name: f for f in self.types.WIRE_FIELDS[cls]}
        named = {f.wire_name for f in wire.values() if not f.rest}
        alternatives = self.types.ALTERNATIVES.get(cls, ())
        fallback_of = self.fallbacks.get(cls)

        def field_strategy(name: str, forced: bool) -> st.SearchStrategy[Any]:
            field = wire[name]
            t = hints[name]
            if field.rest:
                # The properties the form does not name: any other key, any JSON value.
                keys = st.text(min_size=1, max_size=6).filter(lambda k: k not in named)
                return st.dictionaries(keys, json_values, max_size=2)
            if fallback_of is not None and field.wire_name == fallback_of.tag:
                # The open member keeps unknown tags only: known ones pick their class.
                return st.text(min_size=1, max_size=6).map(lambda s: "_" + s)
            if forced:
                return self.strategy_for(_non_null(t), dict(field.constraints))
            return self.strategy_for(t, dict(field.constraints))

        def build(chosen: tuple[str, ...]) -> st.SearchStrategy[Any]:
            # Another alternative's fields stay unset: v2 states them as `oneOf`.
            others = {name for alt in alternatives for name in alt} - set(chosen)
            kwargs = {}
            for attribute in attrs.fields(cls):
                field = wire.get(attribute.name)
                if field is not None and field.tag:
                    continue
                if self.stable_only and field is not None and field.unstable:
                    continue  # left at its default: the stable schema lacks it
                if attribute.name in others:
                    continue
                forced = attribute.name in chosen
                if attribute.default is attrs.NOTHING or forced:
                    kwargs[attribute.name] = field_strategy(attribute.name, forced)
                elif attribute.default is not None:
                    kwargs[attribute.name] = field_strategy(attribute.name, False)
                else:
                    kwargs[attribute.name] = st.none() | field_strategy(attribute.name, False)
            return st.builds(cls, **kwargs)

        if alternatives:
            return st.one_of([build(alt) for alt in alternatives])
        return build(())


def _non_null(t: Any) -> Any:
    args = [a for a in typing.get_args(t) if a not in (type(None), JsonNull)]
    if not args:
        return t
    return typing.Union[tuple(args)] if len(args) > 1 else args[0]  # noqa: UP007


#: v1's strategies, for `protocol.types`.
strategy_for = WireStrategies(types).strategy_for
