"""`Value`: one repr, equality and hash shared by the runtime's frozen attrs classes.

attrs compiles `__repr__`, `__eq__` and `__hash__` from generated source for every
class it decorates; for the ~230 frozen classes a session loads that was about a
sixth of the agent's start-up (`benchmarks/startup.py`). A class deriving from
`Value` gets the three written once, here, and attrs leaves them alone because the
class defines them itself (attrs' `auto_detect`): `__init_subclass__` puts them in
each subclass's own namespace. They behave as attrs' would: `Name(a=1, b='x')` over
the fields with `repr` (a callable `repr` formats the value), equal only to an
instance of the same class with equal `eq` fields, hashed by the `hash` fields
(those with `eq` when unset).

Only for frozen classes: a mutable one must stay unhashable, as attrs makes it.
A class that writes one of the three itself keeps its own; one whose ancestor did
gets attrs' generated method, as without `Value`.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, Final

import attrs

__all__ = ("Value",)


class _Plan:
    """Which fields a class's repr, equality and hash read (worked out on first use)."""

    __slots__ = ("eq", "hash", "repr")

    def __init__(self, cls: type) -> None:
        fields: tuple[attrs.Attribute[Any], ...] = attrs.fields(cls)
        self.repr = tuple(
            (field.name, field.repr if callable(field.repr) else repr)
            for field in fields
            if field.repr
        )
        self.eq = _values([field.name for field in fields if field.eq])
        self.hash = _values(
            [field.name for field in fields if (field.eq if field.hash is None else field.hash)]
        )


def _values(names: list[str]) -> Callable[[object], tuple[Any, ...]]:
    """The named attributes of an instance, as one tuple (what attrs compares and hashes)."""
    if not names:
        return lambda _: ()
    if len(names) == 1:
        get_one = attrgetter(names[0])
        return lambda instance: (get_one(instance),)
    get_all: Callable[[object], tuple[Any, ...]] = attrgetter(*names)
    return get_all


_PLANS: Final[dict[type, _Plan]] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _Plan(cls)
    return plan


class Value:
    """Base of a frozen attrs class: its repr, `==` and hash, without compiling them."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, method in _SHARED.items():
            # An ancestor's own method is the class's unless it is ours.
            if getattr(cls, name) is method:
                setattr(cls, name, method)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={show(getattr(self, name))}" for name, show in _plan(type(self)).repr
        )
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        values = _plan(type(self)).eq
        return values(self) == values(other)

    def __hash__(self) -> int:
        return hash((type(self), _plan(type(self)).hash(self)))


_SHARED: Final[dict[str, Callable[..., Any]]] = {
    "__repr__": Value.__repr__,
    "__eq__": Value.__eq__,
    "__hash__": Value.__hash__,
}
