"""The generated wire classes are what `attrs.define(frozen=True, kw_only=True)` makes.

The generator writes each class already made (slots, `__init__`, `__attrs_attrs__`)
instead of decorating it at import (`protocol/_wire.py` says why). These tests hold
every class of both versions to a reference attrs builds from the same annotations
and defaults: the same fields as cattrs and `attrs.fields` read them, an `__init__`
that takes and stores exactly those, frozen, copied, pickled and evolved as attrs'
own would be.
"""

from __future__ import annotations

import copy
import inspect
import pickle
import sys
from types import ModuleType
from typing import Any

import attrs
import pytest

from protocol import types as v1
from protocol._wire import WireStruct
from protocol.v2 import types as v2

#: What every Attribute of a field says, compared one by one.
_ASPECTS = (
    "name",
    "default",
    "validator",
    "repr",
    "eq",
    "eq_key",
    "order",
    "order_key",
    "hash",
    "init",
    "metadata",
    "type",
    "converter",
    "kw_only",
    "inherited",
    "on_setattr",
    "alias",
)


def _structs(module: ModuleType) -> list[type[WireStruct]]:
    return [t for t in module.ALL_TYPES if isinstance(t, type) and issubclass(t, WireStruct)]


ALL_STRUCTS = [
    pytest.param(cls, id=f"{version}.{cls.__name__}")
    for version, module in (("v1", v1), ("v2", v2))
    for cls in _structs(module)
]


def _reference(cls: type[WireStruct]) -> type:
    """The class attrs makes from `cls`'s annotations and defaults."""
    namespace: dict[str, Any] = {"__annotations__": dict(cls.__annotations__)}
    for field in attrs.fields(cls):
        if field.default is not attrs.NOTHING:
            namespace[field.name] = field.default
    made = attrs.define(frozen=True, kw_only=True, repr=False, eq=False)(
        type(cls.__name__, (), namespace)
    )
    # The converter resolves the annotations of the classes it meets: both are resolved.
    globalns = vars(sys.modules[cls.__module__])
    attrs.resolve_types(cls, globalns=globalns)
    return attrs.resolve_types(made, globalns=globalns)


def _arguments(cls: type[WireStruct]) -> dict[str, object]:
    """A distinct object for every field (a value need not be valid to be stored)."""
    return {field.name: object() for field in attrs.fields(cls)}


def test_both_versions_have_classes() -> None:
    assert len(_structs(v1)) > 150
    assert len(_structs(v2)) > 150


@pytest.mark.parametrize("cls", ALL_STRUCTS)
def test_fields_are_attrs_own(cls: type[WireStruct]) -> None:
    assert attrs.has(cls)
    made = attrs.fields(cls)
    expected = attrs.fields(_reference(cls))
    assert [f.name for f in made] == [f.name for f in expected]
    for ours, theirs in zip(made, expected, strict=True):
        for aspect in _ASPECTS:
            assert getattr(ours, aspect) == getattr(theirs, aspect), (cls, ours.name, aspect)
        # By name too, as attrs' own tuple answers.
        assert getattr(made, ours.name) is ours
    assert cls.__slots__ == tuple(f.name for f in made)


@pytest.mark.parametrize("cls", ALL_STRUCTS)
def test_init_stores_what_it_is_given_and_defaults(cls: type[WireStruct]) -> None:
    fields = attrs.fields(cls)
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert [p.name for p in parameters] == [f.name for f in fields]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)

    given = _arguments(cls)
    value = cls(**given)
    for name, argument in given.items():
        assert getattr(value, name) is argument

    required = {f.name: given[f.name] for f in fields if f.default is attrs.NOTHING}
    reference = _reference(cls)(**required)
    value = cls(**required)
    for field in fields:
        assert getattr(value, field.name) == getattr(reference, field.name), field.name
        if isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            # Made per instance, as attrs does.
            assert getattr(value, field.name) is not getattr(cls(**required), field.name)


@pytest.mark.parametrize("cls", ALL_STRUCTS)
def test_frozen_copied_pickled_evolved(cls: type[WireStruct]) -> None:
    module = v1 if cls in v1.ALL_TYPES else v2
    fields = attrs.fields(cls)
    # Plain values that pickle: the field's name as its value.
    value = cls(**{f.name: f.name for f in fields})
    for field in fields:
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(value, field.name, None)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            delattr(value, field.name)
    assert copy.copy(value) == value
    assert copy.deepcopy(value) == value
    assert pickle.loads(pickle.dumps(value)) == value
    if fields:
        first = fields[0].name
        changed = module.evolve(value, **{first: "changed"})
        assert type(changed) is cls
        assert getattr(changed, first) == "changed"
        assert changed == attrs.evolve(value, **{first: "changed"})
        assert changed != value
    with pytest.raises(TypeError):
        module.evolve(value, no_such_field=1)
