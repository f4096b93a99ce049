"""The vocabulary of the generated wire tables in `protocol.types`, and the base of its classes.

`protocol/generate.py` writes tables of these records; the converter reads
them. Keeping the facts about the wire (names, tags, leniency) in data
rather than in `if`s means a schema update changes only generated code.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final, TypeVar

import attrs

__all__ = (
    "JSON_NULL",
    "LOADED_TABLES",
    "JsonNull",
    "LoadedTables",
    "OpenEnumMixin",
    "TaggedUnion",
    "UntaggedUnion",
    "WireAttributes",
    "WireEnum",
    "WireField",
    "WireStruct",
    "WireTables",
    "evolve",
    "merge_tables",
    "wire_attributes",
)


class JsonNull(enum.Enum):
    """An explicit JSON `null` for fields where `null` and absence differ.

    Most optional fields treat the two alike and use `None` for both. A few
    (`SessionInfoUpdate.title`: "set to null to clear") need the difference;
    there `None` means "leave unchanged" and `JSON_NULL` means "clear".
    """

    NULL = "null"

    def __repr__(self) -> str:
        return "JSON_NULL"


JSON_NULL: Final = JsonNull.NULL


class WireStruct:
    """The base of every generated class: what attrs would give each, written once.

    The generator writes each class as attrs' `define(frozen=True, kw_only=True)`
    would make it, already made: slots, a keyword-only `__init__`, and the attrs
    fields (`__attrs_attrs__`, from `wire_attributes`) that cattrs and `attrs.fields`
    read. Here: the repr (`Name(field=value, ...)`), equality (same class, equal
    fields), hash (by the fields), frozen attributes, and copying and pickling.
    Decorating ~200 classes per version at import compiled four methods per class,
    most of what a `session/new` or a first prompt spent loading its wire types.
    """

    __slots__ = ("__weakref__",)

    #: The class's attrs fields (each generated class sets its own).
    __attrs_attrs__: ClassVar[WireAttributes]

    def _fields(self) -> tuple[attrs.Attribute[Any], ...]:
        return type(self).__attrs_attrs__

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, field.name) for field in self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{field.name}={getattr(self, field.name)!r}" for field in self._fields() if field.repr
        )
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, WireStruct)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __setattr__(self, name: str, value: Any) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    def __delattr__(self, name: str) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    def __getstate__(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name) for field in self._fields()}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)


_W = TypeVar("_W", bound=WireStruct)


def evolve(value: _W, /, **changes: Any) -> _W:
    """A copy of `value` with `changes` (what `attrs.evolve` does; the attrs type checker
    plugin knows only classes it saw decorated, and these are made already)."""
    fields = {field.name: getattr(value, field.name) for field in value._fields()}
    fields.update(changes)
    return type(value)(**fields)


class WireAttributes(tuple["attrs.Attribute[Any]", ...]):
    """A generated class's attrs fields, by position and by name (`attrs.fields(C).text`),
    as attrs' own tuple of them is."""

    __slots__ = ()

    def __getattr__(self, name: str) -> attrs.Attribute[Any]:
        for field in self:
            if field.name == name:
                return field
        raise AttributeError(name)


def wire_attributes(*fields: tuple[str, str, Any]) -> WireAttributes:
    """The attrs fields of a generated class, from `(name, annotation, default)` each
    (`attrs.NOTHING`: required; an `attrs.Factory`: made per instance): what
    `attrs.define(frozen=True, kw_only=True)` records for them."""
    return WireAttributes(
        attrs.Attribute(  # type: ignore[call-arg]
            name=name,
            default=default,
            validator=None,
            repr=True,
            cmp=None,
            hash=None,
            init=True,
            inherited=False,
            type=annotation,
            kw_only=True,
            eq=True,
            eq_key=None,
            order=True,
            order_key=None,
            alias=name,
        )
        for name, annotation, default in fields
    )


@attrs.frozen
class WireField:
    """How one attribute of a generated class appears on the wire."""

    #: The Python attribute name (snake_case).
    name: str
    #: The JSON key (camelCase, or `_meta`).
    wire_name: str
    #: Written even when equal to its default; missing on input is an error.
    required: bool = False
    #: A discriminator; always written.
    tag: bool = False
    #: `null` differs from absence: `JSON_NULL` writes `null`, `None` omits.
    explicit_null: bool = False
    #: `x-deserialize-default-on-error`: a malformed value becomes the default.
    default_on_error: bool = False
    #: `x-deserialize-skip-invalid-items`: malformed array items are dropped.
    skip_invalid_items: bool = False
    #: `x-deserialize-default-on-null`: `null` becomes the default.
    default_on_null: bool = False
    #: Present only in the unstable schema; written only when unstable is on.
    unstable: bool = False
    #: JSON Schema constraints (`minimum`, `maximum`, `minLength`), for tests.
    constraints: Mapping[str, Any] = attrs.field(factory=dict)
    #: Not one property but the rest: an open member's properties that no other field
    #: names (an extension's payload), kept as they came and written back beside them.
    rest: bool = False


@attrs.frozen
class TaggedUnion:
    """A union whose members are told apart by one property's value."""

    name: str
    tag: str
    by_tag: Mapping[str, Any]
    #: The member used when the tag is absent (e.g. stdio MCP servers).
    default: type | None = None
    #: The member that keeps unknown tag values (the schema's "other").
    fallback: type | None = None

    @property
    def members(self) -> tuple[Any, ...]:
        extra = [t for t in (self.default, self.fallback) if t is not None]
        return tuple(dict.fromkeys([*self.by_tag.values(), *extra]))


@attrs.frozen
class UntaggedUnion:
    """A union with no discriminator: members are tried in schema order."""

    name: str
    members: tuple[Any, ...]


class WireEnum:
    """The base of every generated enum: the converter's strict enum hook applies to it.

    Our enums are also `str` or `int`; without a base of their own, cattrs would hand
    them the strict hook for plain strings and numbers. One base registers once for
    all, whichever part of `protocol.types` defines them and whenever it loads.
    """

    __slots__ = ()


class OpenEnumMixin(WireEnum):
    """Lets a string or integer enum accept values the schema leaves open.

    The schema marks some enums as open (an "other" variant): unknown values
    from newer peers must survive a round trip instead of failing the whole
    message. An unknown value becomes a pseudo-member carrying that value.
    """

    @classmethod
    def _missing_(cls, value: object) -> Any:
        # `_member_type_` is the enum's data type (str or int), set by EnumMeta.
        base: type = cls._member_type_  # type: ignore[attr-defined]
        if not isinstance(value, base) or isinstance(value, bool):
            return None
        construct: Any = base.__new__
        pseudo = construct(cls, value)
        pseudo._name_ = f"UNKNOWN_{value}"
        pseudo._value_ = value
        return pseudo


@attrs.frozen
class WireTables:
    """The tables of one generated part of `protocol.types` (or of several, merged)."""

    #: Each class's attributes as they appear on the wire.
    wire_fields: Mapping[type, tuple[WireField, ...]]
    #: The schema `$defs` name that validates each class's or enum's wire form.
    definition_of: Mapping[type, str]
    tagged_unions: tuple[TaggedUnion, ...]
    untagged_unions: tuple[UntaggedUnion, ...]
    #: Classes merged from untagged alternatives: a valid instance sets every field
    #: of at least one of these sets.
    alternatives: Mapping[type, tuple[tuple[str, ...], ...]]
    #: The classes and enums only in the unstable schema.
    unstable_types: frozenset[type]
    #: Every enum, then every class.
    all_types: tuple[type, ...]


def merge_tables(parts: Iterable[WireTables]) -> WireTables:
    """One set of tables holding every one of `parts`, in order."""
    parts = tuple(parts)
    return WireTables(
        wire_fields={k: v for p in parts for k, v in p.wire_fields.items()},
        definition_of={k: v for p in parts for k, v in p.definition_of.items()},
        tagged_unions=tuple(u for p in parts for u in p.tagged_unions),
        untagged_unions=tuple(u for p in parts for u in p.untagged_unions),
        alternatives={k: v for p in parts for k, v in p.alternatives.items()},
        unstable_types=frozenset(t for p in parts for t in p.unstable_types),
        all_types=tuple(t for p in parts for t in p.all_types),
    )


class LoadedTables:
    """The tables of the parts of `protocol.types` imported so far.

    A part adds its tables as its last statement. The converter looks classes and
    unions up here rather than in `protocol.types`, whose tables import every part:
    a class handed to the converter was imported with its part, so it is here.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: tuple[WireTables, ...] = ()
        #: Every loaded class's wire fields (what the converter's hooks read).
        self.wire_fields: dict[type, tuple[WireField, ...]] = {}
        #: Attribute name -> JSON key, for error messages.
        self.wire_names: dict[str, str] = {}

    @property
    def parts(self) -> tuple[WireTables, ...]:
        """The loaded parts, in the order they loaded."""
        return self._parts

    def add(self, part: WireTables) -> None:
        """Make `part`'s classes and unions known to the converter."""
        with self._lock:
            self.wire_fields.update(part.wire_fields)
            for fields in part.wire_fields.values():
                self.wire_names.update((f.name, f.wire_name) for f in fields)
            self._parts = (*self._parts, part)


#: The process's loaded tables (each generated part adds to it).
LOADED_TABLES: Final = LoadedTables()
