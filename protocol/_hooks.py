"""cattrs hooks for the generated ACP types, grouped by purpose.

Everything here is driven by the generated tables (`WIRE_FIELDS`, `TAGGED_UNIONS`,
`UNTAGGED_UNIONS`) of the parts of `protocol.types` loaded so far, as
`protocol._wire.LOADED_TABLES` collects them: wire names, tags, leniency and
unstable fields are data, not special cases. Nothing here imports a part.
"""

from __future__ import annotations

import threading
import types as pytypes
import typing
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from protocol._wire import (
    JSON_NULL,
    LOADED_TABLES,
    JsonNull,
    TaggedUnion,
    UntaggedUnion,
    WireEnum,
    WireField,
)

__all__ = ("register_hooks",)

StructureHook = Callable[[Any, Any], Any]


def register_hooks(converter: cattrs.Converter, *, include_unstable: bool) -> None:
    """Install every ACP hook on `converter` (later registrations win)."""
    _register_primitive_hooks(converter)
    _register_container_hooks(converter)
    _register_union_hooks(converter)
    _register_struct_hooks(converter, include_unstable=include_unstable)
    converter.register_unstructure_hook(JsonNull, lambda _: None)


# -- primitives: JSON types are not coerced ----------------------------------


def _register_primitive_hooks(converter: cattrs.Converter) -> None:
    """Reject wrong JSON types instead of coercing them (`"1"` is not `1`)."""

    def structure_str(value: Any, _: Any) -> str:
        if not isinstance(value, str):
            raise TypeError(f"expected a string, got {_json_type(value)}")
        return value

    def structure_int(value: Any, _: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an integer, got {_json_type(value)}")
        return value

    def structure_float(value: Any, _: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"expected a number, got {_json_type(value)}")
        return float(value)

    def structure_bool(value: Any, _: Any) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"expected a boolean, got {_json_type(value)}")
        return value

    converter.register_structure_hook(str, structure_str)
    converter.register_structure_hook(int, structure_int)
    converter.register_structure_hook(float, structure_float)
    converter.register_structure_hook(bool, structure_bool)

    # Our enums subclass str or int, so singledispatch would hand them the hooks
    # above; their common base is more specific (it comes first in their MRO).
    converter.register_structure_hook(WireEnum, _structure_enum)


def _structure_enum(value: Any, cls: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a valid {cls.__name__}")
    return cls(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# -- containers: arrays are arrays, objects are objects -----------------------


def _register_container_hooks(converter: cattrs.Converter) -> None:
    def is_list(t: Any) -> bool:
        return typing.get_origin(t) is list

    def is_dict(t: Any) -> bool:
        return typing.get_origin(t) is dict

    def list_hook(t: Any) -> StructureHook:
        (item_type,) = typing.get_args(t) or (Any,)
        structure_item = converter.structure

        def structure(value: Any, _: Any) -> list[Any]:
            if not isinstance(value, list):
                raise TypeError(f"expected an array, got {_json_type(value)}")
            out = []
            errors = []
            for index, item in enumerate(value):
                try:
                    out.append(structure_item(item, item_type))
                except Exception as exc:
                    exc.add_note(f"Structuring array @ index {index}")
                    errors.append(exc)
            if errors:
                raise cattrs.IterableValidationError("invalid array items", errors, t)
            return out

        return structure

    def dict_hook(t: Any) -> StructureHook:
        _, value_type = typing.get_args(t) or (str, Any)
        if value_type is Any:

            def structure_any(value: Any, _: Any) -> dict[str, Any]:
                if not isinstance(value, dict):
                    raise TypeError(f"expected an object, got {_json_type(value)}")
                return dict(value)

            return structure_any
        structure_value = converter.structure

        def structure(value: Any, _: Any) -> dict[str, Any]:
            if not isinstance(value, dict):
                raise TypeError(f"expected an object, got {_json_type(value)}")
            return {k: structure_value(v, value_type) for k, v in value.items()}

        return structure

    converter.register_structure_hook_factory(is_list, list_hook)
    converter.register_structure_hook_factory(is_dict, dict_hook)


# -- unions: tags from the schema's discriminators, else schema order ---------


def _union_members(t: Any) -> tuple[frozenset[Any], bool] | None:
    if typing.get_origin(t) not in (typing.Union, pytypes.UnionType):
        return None
    args = typing.get_args(t)
    optional = type(None) in args
    flat: list[Any] = []
    for arg in args:
        if arg is type(None):
            continue
        inner = _union_members(arg)
        flat.extend(inner[0] if inner else [arg])
    return frozenset(flat), optional


class _UnionIndex:
    """The loaded unions by their flattened member sets; it follows parts as they load."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._indexed = 0
        self._tagged: dict[frozenset[Any], TaggedUnion] = {}
        self._untagged: dict[frozenset[Any], UntaggedUnion] = {}

    def find(self, members: frozenset[Any]) -> TaggedUnion | UntaggedUnion | None:
        if len(LOADED_TABLES.parts) != self._indexed:
            with self._lock:
                parts = LOADED_TABLES.parts
                for part in parts[self._indexed :]:
                    for tagged_union in part.tagged_unions:
                        flat: list[Any] = []
                        for member in tagged_union.members:
                            inner = _union_members(member)
                            flat.extend(inner[0] if inner else [member])
                        self._tagged[frozenset(flat)] = tagged_union
                    for union in part.untagged_unions:
                        self._untagged[frozenset(union.members) - {None}] = union
                self._indexed = len(parts)
        return self._tagged.get(members) or self._untagged.get(members)


def _register_union_hooks(converter: cattrs.Converter) -> None:
    index = _UnionIndex()

    def lookup(t: Any) -> tuple[TaggedUnion | UntaggedUnion, bool] | None:
        found = _union_members(t)
        if found is None:
            return None
        members, optional = found
        union = index.find(members)
        return (union, optional) if union is not None else None

    def is_acp_union(t: Any) -> bool:
        return lookup(t) is not None

    def union_hook(t: Any) -> StructureHook:
        found = lookup(t)
        assert found is not None
        union, optional = found
        inner = (
            _tagged_structure(converter, union)
            if isinstance(union, TaggedUnion)
            else _untagged_structure(converter, union)
        )
        if not optional:
            return inner

        def structure_optional(value: Any, target: Any) -> Any:
            return None if value is None else inner(value, target)

        return structure_optional

    converter.register_structure_hook_factory(is_acp_union, union_hook)


def _tagged_structure(converter: cattrs.Converter, union: TaggedUnion) -> StructureHook:
    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {_json_type(value)}")
        tag = value.get(union.tag)
        member = union.by_tag.get(tag) if isinstance(tag, str) else None
        if member is None:
            if tag is not None and union.fallback is not None:
                member = union.fallback
            elif union.default is not None:
                # Absent or unknown: the untagged member (lenient clients send
                # `"type": "stdio"` although stdio MCP servers have no tag).
                member = union.default
            elif tag is None:
                raise KeyError(f"missing discriminator {union.tag!r}")
            else:
                known = ", ".join(sorted(union.by_tag))
                raise ValueError(f"unknown {union.tag} {tag!r} (expected one of: {known})")
        return converter.structure(value, member)

    return structure


def _untagged_structure(converter: cattrs.Converter, union: UntaggedUnion) -> StructureHook:
    def structure(value: Any, _: Any) -> Any:
        if value is None and None in union.members:
            return None
        errors: list[Exception] = []
        for member in union.members:
            if member is None:
                continue
            try:
                return converter.structure(value, member)
            except Exception as exc:
                errors.append(exc)
        raise ValueError(f"does not match any form of {union.name}") from (
            errors[0] if errors else None
        )

    return structure


# -- attrs classes: wire names, omission, leniency ----------------------------


def _register_struct_hooks(converter: cattrs.Converter, *, include_unstable: bool) -> None:
    # Factories, not eager hooks: cattrs builds each class's function on first
    # use, when the hooks of the classes it contains are registered too. Each one is
    # built once: cattrs empties its whole hook cache whenever it meets a new list
    # type, and rebuilding (compiling) every class's function after that cost the
    # first prompts of a process ~0.4 ms a class, again and again. So hooks registered
    # after a class's first use do not reach it: register yours first.
    unstructure_built: dict[type, Callable[[Any], Any]] = {}
    structure_built: dict[type, StructureHook] = {}

    def is_acp_class(t: Any) -> bool:
        return isinstance(t, type) and t in LOADED_TABLES.wire_fields

    def unstructure_factory(cls: Any) -> Callable[[Any], Any]:
        built = unstructure_built.get(cls)
        if built is None:
            built = unstructure_built[cls] = _unstructure_fn(cls)
        return built

    def structure_factory(cls: Any) -> StructureHook:
        built = structure_built.get(cls)
        if built is None:
            built = structure_built[cls] = _structure_fn(cls)
        return built

    def _unstructure_fn(cls: Any) -> Callable[[Any], Any]:
        attrs.resolve_types(cls)  # the generated annotations are strings until now
        overrides: dict[str, Any] = {}
        for wire in LOADED_TABLES.wire_fields[cls]:
            # Required fields and tags are always written; optional ones only
            # when they differ from their default.
            overrides[wire.name] = override(
                rename=wire.wire_name,
                omit_if_default=not (wire.required or wire.tag),
                omit=(wire.unstable and not include_unstable) or wire.rest,
            )
        built = make_dict_unstructure_fn(cls, converter, _cattrs_omit_if_default=True, **overrides)
        rest = _rest_field(cls)
        return built if rest is None else _with_rest_written(built, rest)

    def _structure_fn(cls: Any) -> StructureHook:
        attrs.resolve_types(cls)
        by_name = {f.name: f for f in LOADED_TABLES.wire_fields[cls]}
        overrides: dict[str, Any] = {}
        for attribute in attrs.fields(cls):
            wire = by_name[attribute.name]
            if wire.rest:
                overrides[attribute.name] = override(omit=True)
                continue
            hook = _lenient_structure(converter, attribute, wire)
            overrides[attribute.name] = override(rename=wire.wire_name, struct_hook=hook)
        built = make_dict_structure_fn(
            cls,
            converter,
            _cattrs_forbid_extra_keys=False,
            _cattrs_detailed_validation=True,
            **overrides,
        )
        rest = _rest_field(cls)
        return built if rest is None else _with_rest_read(built, rest, by_name.values())

    converter.register_unstructure_hook_factory(is_acp_class, unstructure_factory)
    converter.register_structure_hook_factory(is_acp_class, structure_factory)


# -- open members: the properties no field names ----------------------------


def _rest_field(cls: type) -> WireField | None:
    return next((f for f in LOADED_TABLES.wire_fields[cls] if f.rest), None)


def _with_rest_written(built: Callable[[Any], Any], rest: WireField) -> Callable[[Any], Any]:
    def unstructure(value: Any) -> Any:
        out = built(value)
        for key, item in getattr(value, rest.name).items():
            out.setdefault(key, item)  # a named field wins over a stray copy of its key
        return out

    return unstructure


def _with_rest_read(
    built: StructureHook, rest: WireField, fields: Iterable[WireField]
) -> StructureHook:
    named = frozenset(f.wire_name for f in fields if not f.rest)

    def structure(value: Any, cls: Any) -> Any:
        instance = built(value, cls)
        unnamed = {key: item for key, item in value.items() if key not in named}
        return attrs.evolve(instance, **{rest.name: unnamed}) if unnamed else instance

    return structure


def _default_of(attribute: attrs.Attribute[Any]) -> Callable[[], Any]:
    default: Any = attribute.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        factory: Callable[[], Any] = default.factory
        return factory
    return lambda: default


def _lenient_structure(
    converter: cattrs.Converter, attribute: attrs.Attribute[Any], wire: WireField
) -> StructureHook | None:
    """The field's structure hook with the schema's leniency hints applied."""
    if not (
        wire.explicit_null
        or wire.default_on_error
        or wire.default_on_null
        or wire.skip_invalid_items
    ):
        return None
    field_type: Any = attribute.type
    has_default = attribute.default is not attrs.NOTHING
    default = _default_of(attribute) if has_default else None
    if wire.explicit_null:
        # Only the non-null, non-sentinel part of the union is structured.
        members = [a for a in typing.get_args(field_type) if a not in (JsonNull, type(None))]
        field_type = typing.Union[tuple(members)] if len(members) > 1 else members[0]  # noqa: UP007
    base: StructureHook = converter.structure
    if wire.skip_invalid_items:
        base = _skipping_items(converter, field_type, base)

    def structure(value: Any, target: Any) -> Any:
        if value is None:
            if wire.explicit_null:
                return JSON_NULL
            if wire.default_on_null and default is not None:
                return default()
        try:
            return base(value, field_type)
        except Exception:
            if wire.default_on_error and default is not None:
                return default()
            raise

    return structure


def _skipping_items(
    converter: cattrs.Converter, field_type: Any, base: StructureHook
) -> StructureHook:
    found = _list_type(field_type)
    if found is None:
        return base
    item_type = typing.get_args(found)[0]
    structure_item = converter.structure

    def structure(value: Any, target: Any) -> Any:
        if not isinstance(value, list):
            return base(value, target)
        out = []
        for item in value:
            try:
                out.append(structure_item(item, item_type))
            except Exception:
                continue
        return out

    return structure


def _list_type(t: Any) -> Any:
    if typing.get_origin(t) is list:
        return t
    for arg in typing.get_args(t):
        if typing.get_origin(arg) is list:
            return arg
    return None
