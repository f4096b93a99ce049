"""The vocabulary of the generated wire tables in `protocol.types`.

`protocol/generate.py` writes tables of these records; the converter reads
them. Keeping the facts about the wire (names, tags, leniency) in data
rather than in `if`s means a schema update changes only generated code.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

__all__ = (
    "JSON_NULL",
    "LOADED_TABLES",
    "JsonNull",
    "LoadedTables",
    "OpenEnumMixin",
    "TaggedUnion",
    "UntaggedUnion",
    "WireEnum",
    "WireField",
    "WireStruct",
    "WireTables",
    "merge_tables",
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
    """The base of every generated class: one repr, equality and hash shared by all.

    What attrs would write for each class (`Name(field=value, ...)`, equal when of the
    same class with equal fields, hashed by its fields), written once: attrs compiles
    its methods per class, and for ~230 classes that was most of the import's cost.
    """

    __slots__ = ()

    def _fields(self) -> tuple[attrs.Attribute[Any], ...]:
        # Set by `attrs.define` on each generated subclass.
        fields: tuple[attrs.Attribute[Any], ...] = type(self).__attrs_attrs__  # type: ignore[attr-defined]
        return fields

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
