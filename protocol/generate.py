"""Generate `protocol/types.py` (with its parts) and `protocol/methods.py` from the schema.

Run `python -m protocol.generate` to regenerate, `--check` to fail on drift
(CI and a test do). Four stages, in order: load the JSON Schemas, validate
them, build an intermediate model (`Struct`, `Enum`, `Alias`, `Union`,
`Method`), and emit Python from it. Schema quirks are handled in one place,
`customizations()`, never by editing the output.

One script on purpose, as lsprotocol's generator is: it runs once per schema
update, reads top to bottom, and its output is what is reviewed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import re
import sys
import tempfile
import textwrap
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

__all__ = ("generate", "main")

SCHEMA_DIR = Path(__file__).with_name("schema")
STABLE_SCHEMA = SCHEMA_DIR / "schema.json"
UNSTABLE_SCHEMA = SCHEMA_DIR / "schema.unstable.json"
OUTPUT_DIR = Path(__file__).parent
SCHEMA_VERSION = "1 (npm @agentclientprotocol/sdk 2.4.0, about schema-v1.25)"

# --------------------------------------------------------------------------
# Stage 3's intermediate model
# --------------------------------------------------------------------------


@attrs.frozen
class TypeRef:
    """A Python type expression, built from schema fragments."""

    kind: str  # prim | named | list | map | any | literal | none
    name: str = ""
    item: TypeRef | None = None
    literal: str = ""

    def render(self) -> str:
        if self.kind in ("prim", "named"):
            return self.name
        if self.kind == "list":
            assert self.item is not None
            return f"list[{self.item.render()}]"
        if self.kind == "map":
            assert self.item is not None
            return f"dict[str, {self.item.render()}]"
        if self.kind == "literal":
            return f"Literal[{self.literal!r}]"
        if self.kind == "none":
            return "None"
        return "Any"


ANY = TypeRef("any")


@attrs.frozen
class Field:
    wire_name: str
    name: str
    type: TypeRef
    required: bool
    nullable: bool
    default: str | None  # a Python expression, or None for "no default"
    description: str
    tag: bool = False
    explicit_null: bool = False
    default_on_error: bool = False
    skip_invalid_items: bool = False
    default_on_null: bool = False
    unstable: bool = False
    constraints: tuple[tuple[str, Any], ...] = ()


@attrs.frozen
class Struct:
    name: str
    definition: str  # the $defs name validating the unstructured form
    description: str
    fields: tuple[Field, ...]
    unstable: bool
    #: For classes merged from untagged alternatives: the required field sets.
    alternatives: tuple[tuple[str, ...], ...] = ()


@attrs.frozen
class EnumMember:
    name: str
    value: str | int
    description: str


@attrs.frozen
class Enum:
    name: str
    description: str
    members: tuple[EnumMember, ...]
    open: bool
    value_type: str  # "str" | "int"
    unstable: bool


@attrs.frozen
class Alias:
    name: str
    description: str
    target: str  # a rendered type expression
    unstable: bool


@attrs.frozen
class Union:
    name: str
    description: str
    members: tuple[str, ...]  # rendered member types, in schema order
    tag: str | None  # wire name of the discriminator, None if untagged
    by_tag: tuple[tuple[str, str], ...] = ()
    default: str | None = None
    fallback: str | None = None
    unstable: bool = False


@attrs.frozen
class Method:
    name: str
    side: str
    kind: str  # request | notification
    params: str
    result: str | None
    stable: bool


@attrs.define
class Model:
    enums: list[Enum] = attrs.Factory(list)
    aliases: list[Alias] = attrs.Factory(list)
    structs: list[Struct] = attrs.Factory(list)
    unions: list[Union] = attrs.Factory(list)
    methods: list[Method] = attrs.Factory(list)


# --------------------------------------------------------------------------
# Customizations: every schema quirk in one place
# --------------------------------------------------------------------------


@attrs.frozen
class Customizations:
    #: JSON-RPC envelope definitions: the engine owns the envelope, not the types.
    skipped: frozenset[str]
    #: (union, tag value) -> class name, where the derived name would collide.
    variant_names: Mapping[tuple[str, str], str]


def customizations() -> Customizations:
    """The schema quirks we correct, each with the reason."""
    return Customizations(
        skipped=frozenset(
            {
                # Envelopes: the engine (protocol/_dispatch.py) frames id/method/params.
                "AgentRequest",
                "AgentResponse",
                "AgentNotification",
                "ClientRequest",
                "ClientResponse",
                "ClientNotification",
                "ProxyRequest",
                "ProxyResponse",
                "ProxyNotification",
            }
        ),
        variant_names={
            # `ToolCallUpdate` is also the plain type used by permission requests.
            ("SessionUpdate", "tool_call_update"): "ToolCallProgress",
            ("RequestPermissionOutcome", "cancelled"): "CancelledPermissionOutcome",
        },
    )


# --------------------------------------------------------------------------
# Stage 1 and 2: load and validate
# --------------------------------------------------------------------------


def load() -> tuple[dict[str, Any], dict[str, Any]]:
    """Read the stable and unstable schemas' `$defs`."""
    stable = json.loads(STABLE_SCHEMA.read_text(encoding="utf-8"))
    unstable = json.loads(UNSTABLE_SCHEMA.read_text(encoding="utf-8"))
    return stable, unstable


def validate(*schemas: Mapping[str, Any]) -> None:
    """Fail early on a schema this generator cannot have been written for."""
    from jsonschema import Draft202012Validator

    for schema in schemas:
        Draft202012Validator.check_schema(schema)
        defs = schema.get("$defs")
        if not isinstance(defs, dict) or not defs:
            raise ValueError("schema has no $defs")
        for ref in _refs(schema):
            if ref.split("/")[-1] not in defs:
                raise ValueError(f"unresolved $ref {ref}")
    stable_defs = set(schemas[0]["$defs"])
    if not stable_defs <= set(schemas[-1]["$defs"]):
        raise ValueError("the unstable schema must be a superset of the stable one")


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


# --------------------------------------------------------------------------
# Stage 3: build the model
# --------------------------------------------------------------------------


def snake(name: str) -> str:
    if name == "_meta":
        return "meta"
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    out = out.replace("-", "_")
    return out + "_" if keyword.iskeyword(out) else out


def pascal(value: str) -> str:
    return "".join(
        part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", value) if part
    )


def upper_snake(value: str) -> str:
    return (
        re.sub(r"[^A-Za-z0-9]+", "_", snake(value) if value[:1].isupper() else value)
        .strip("_")
        .upper()
    )


def ref_name(node: Mapping[str, Any]) -> str | None:
    if "$ref" in node:
        return str(node["$ref"]).split("/")[-1]
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).split("/")[-1]
    return None


def variants_of(node: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    found = node.get("oneOf") or node.get("anyOf")
    return list(found) if isinstance(found, list) else None


def const_tag(variant: Mapping[str, Any]) -> tuple[str, str] | None:
    for prop, schema in (variant.get("properties") or {}).items():
        if isinstance(schema, dict) and "const" in schema and isinstance(schema["const"], str):
            return prop, schema["const"]
    return None


def is_unstable_text(description: str) -> bool:
    return description.lstrip().startswith("**UNSTABLE**")


class Builder:
    """Turns `$defs` into the intermediate model."""

    def __init__(self, stable: Mapping[str, Any], unstable: Mapping[str, Any]) -> None:
        self.stable = stable["$defs"]
        self.defs = unstable["$defs"]
        self.custom = customizations()
        self.model = Model()
        self.ref_counts = Counter(r.split("/")[-1] for r in _refs(unstable["$defs"]))
        self.emitted: set[str] = set()

    # -- helpers ---------------------------------------------------------

    def def_unstable(self, name: str) -> bool:
        return name not in self.stable

    def field_unstable(self, owner: str | None, prop: str) -> bool:
        if owner is None or owner not in self.stable:
            return False
        return prop not in _property_names(self.stable[owner])

    def type_of(self, schema: Mapping[str, Any], hint: str) -> tuple[TypeRef, bool]:
        """A property schema's type and whether it admits null."""
        ref = ref_name(schema)
        if ref is not None:
            return TypeRef("named", ref), False
        options = schema.get("anyOf")
        if isinstance(options, list):
            non_null = [o for o in options if o.get("type") != "null"]
            nullable = len(non_null) != len(options)
            if len(non_null) == 1:
                inner, inner_null = self.type_of(non_null[0], hint)
                return inner, nullable or inner_null
            raise ValueError(f"{hint}: inline unions are not supported")
        kind = schema.get("type")
        if kind is None:
            return ANY, False
        kinds = kind if isinstance(kind, list) else [kind]
        nullable = "null" in kinds
        kinds = [k for k in kinds if k != "null"]
        if not kinds:
            return (TypeRef("none"), True) if nullable else (ANY, False)
        if len(kinds) != 1:
            raise ValueError(f"{hint}: several types {kinds}")
        k = kinds[0]
        if "const" in schema:
            return TypeRef("literal", literal=schema["const"]), nullable
        prims = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
        if k in prims:
            return TypeRef("prim", prims[k]), nullable
        if k == "array":
            item, _ = self.type_of(schema.get("items") or {}, hint + "[]")
            return TypeRef("list", item=item), nullable
        if k == "object":
            extra = schema.get("additionalProperties", True)
            if isinstance(extra, dict) and extra:
                value, _ = self.type_of(extra, hint + "{}")
                return TypeRef("map", item=value), nullable
            return TypeRef("map", item=ANY), nullable
        raise ValueError(f"{hint}: unsupported type {k}")

    def make_field(
        self,
        owner: str | None,
        prop: str,
        schema: Mapping[str, Any],
        required: bool,
        *,
        tag: bool = False,
    ) -> Field:
        hint = f"{owner}.{prop}"
        description = str(schema.get("description") or "")
        if tag:
            value = schema["const"]
            return Field(
                wire_name=prop,
                name=snake(prop),
                type=TypeRef("literal", literal=value),
                required=True,
                nullable=False,
                default=repr(value),
                description=description,
                tag=True,
            )
        ftype, nullable = self.type_of(schema, hint)
        default: str | None = None
        if "default" in schema and not required:
            value = schema["default"]
            if ftype.kind == "named" and value == {}:
                # A lambda: the class may be defined further down the module.
                default = f"attrs.Factory(lambda: {ftype.name}())"
            elif ftype.kind == "named" and isinstance(value, int | str):
                default = f"{ftype.name}({value!r})"
            elif isinstance(value, bool | int | float | str):
                default = repr(value)
            elif value == []:
                default = "attrs.Factory(list)"
            elif value == {}:
                default = "attrs.Factory(dict)"
        if default is None and not required:
            default = "None"
        # Constraints may sit on the field or on the alias it refers to.
        ref = ref_name(schema)
        source = self.defs[ref] if ref is not None and ftype.kind == "named" else schema
        if source.get("type") not in ("integer", "string", None) or "properties" in source:
            source = schema
        constraints = tuple(
            (key, source[key]) for key in ("minimum", "maximum", "minLength") if key in source
        )
        fmt = source.get("format") or schema.get("format")
        if ftype.kind == "named" and source is not schema and source.get("type") == "integer":
            ftype_for_bounds = TypeRef("prim", "int")
        else:
            ftype_for_bounds = ftype
        if ftype_for_bounds.name == "int" and isinstance(fmt, str):
            constraints += _int_format_bounds(fmt, dict(constraints))
        return Field(
            wire_name=prop,
            name=snake(prop),
            type=ftype,
            required=required,
            nullable=nullable or (not required and default == "None"),
            default=default,
            description=description,
            explicit_null=nullable and not required and "null to clear" in description,
            default_on_error=bool(schema.get("x-deserialize-default-on-error")),
            skip_invalid_items=bool(schema.get("x-deserialize-skip-invalid-items")),
            default_on_null=bool(schema.get("x-deserialize-default-on-null")),
            unstable=self.field_unstable(owner, prop),
            constraints=constraints,
        )

    def fields_of(
        self, owner: str | None, node: Mapping[str, Any], *, optional_all: bool = False
    ) -> list[Field]:
        required = set(node.get("required") or [])
        out = []
        for prop, schema in (node.get("properties") or {}).items():
            out.append(self.make_field(owner, prop, schema, prop in required and not optional_all))
        # Members merged in through allOf refs (mixins).
        for part in node.get("allOf") or []:
            ref = ref_name(part)
            if ref is not None and self.defs[ref].get("properties"):
                out.extend(self.fields_of(ref, self.defs[ref], optional_all=optional_all))
        # Untagged alternatives (scopes): each one's fields, all optional.
        if node.get("properties") is not None and self.untagged_alternatives(node):
            for variant in variants_of(node) or []:
                out.extend(self.fields_of(owner, variant, optional_all=True))
        return out

    def untagged_alternatives(self, node: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
        """For alternatives without a tag: the field sets that each requires."""
        variants = variants_of(node)
        if not variants or any(const_tag(v) for v in variants):
            return ()
        base_required = set(node.get("required") or [])
        out = []
        for v in variants:
            required = set(v.get("required") or [])
            for part in v.get("allOf") or []:
                ref = ref_name(part)
                if ref is not None:
                    required |= set(self.defs[ref].get("required") or [])
            out.append(tuple(sorted(snake(r) for r in required - base_required)))
        return tuple(out)

    # -- definitions -----------------------------------------------------

    def build(self) -> Model:
        for name, node in self.defs.items():
            if name in self.custom.skipped:
                continue
            variants = variants_of(node)
            if variants is not None and node.get("properties") is None:
                self.build_union(name, node, variants)
        for name, node in self.defs.items():
            if name in self.custom.skipped or name in self.emitted:
                continue
            self.build_definition(name, node)
        self.build_methods()
        return self.model

    def build_definition(self, name: str, node: Mapping[str, Any]) -> None:
        description = str(node.get("description") or "")
        unstable = self.def_unstable(name)
        variants = variants_of(node)
        if node.get("properties") is not None and variants is not None:
            self.build_based_union(name, node, variants)
        elif node.get("type") == "object" or node.get("properties") is not None:
            self.add_struct(name, name, description, self.fields_of(name, node), unstable)
        elif variants is None:
            target, _ = self.type_of(node, name) if node.get("type") else (ANY, False)
            self.model.aliases.append(Alias(name, description, target.render(), unstable))
            self.emitted.add(name)

    def add_struct(
        self,
        name: str,
        definition: str,
        description: str,
        fields: list[Field],
        unstable: bool,
        alternatives: tuple[tuple[str, ...], ...] = (),
    ) -> None:
        seen: dict[str, Field] = {}
        for f in fields:
            # A tag or a stricter restatement overrides the base property.
            if f.wire_name not in seen or f.tag or f.required:
                seen[f.wire_name] = f
        ordered = sorted(seen.values(), key=lambda f: (not f.tag, not f.required))
        self.model.structs.append(
            Struct(name, definition, description, tuple(ordered), unstable, alternatives)
        )
        self.emitted.add(name)

    def build_union(
        self, name: str, node: Mapping[str, Any], variants: list[dict[str, Any]]
    ) -> None:
        description = str(node.get("description") or "")
        unstable = self.def_unstable(name)
        # String or integer enums: every variant is a constant (plus an open "other").
        if all(v.get("type") in ("string", "integer") for v in variants) and all(
            "const" in v or v.get("title") in ("other", "Other") for v in variants
        ):
            self.build_enum(name, description, variants, unstable)
            return
        tags = [const_tag(v) for v in variants]
        tag_props = {t[0] for t in tags if t is not None}
        if len(tag_props) == 1:
            self.build_tagged(name, node, variants, tag_props.pop(), base=None)
            return
        members = []
        for v in variants:
            ref = ref_name(v)
            if ref is not None:
                members.append(ref)
            elif v.get("properties"):
                cls_name = f"{name}{pascal(str(v.get('title', 'Variant')))}"
                self.add_struct(
                    cls_name,
                    name,
                    str(v.get("description") or ""),
                    self.fields_of(name, v),
                    unstable,
                )
                members.append(cls_name)
            else:
                t, _ = self.type_of(v, name)
                members.append(t.render())
        self.model.unions.append(Union(name, description, tuple(members), None, unstable=unstable))
        self.emitted.add(name)

    def build_enum(
        self, name: str, description: str, variants: list[dict[str, Any]], unstable: bool
    ) -> None:
        members = []
        is_open = False
        value_type = "str"
        for v in variants:
            if "const" not in v:
                is_open = True
                continue
            value = v["const"]
            value_type = "int" if isinstance(value, int) else "str"
            label = v.get("title") if isinstance(value, int) else value
            members.append(
                EnumMember(upper_snake(str(label)), value, str(v.get("description") or ""))
            )
        self.model.enums.append(
            Enum(name, description, tuple(members), is_open, value_type, unstable)
        )
        self.emitted.add(name)

    def build_tagged(
        self,
        name: str,
        node: Mapping[str, Any],
        variants: list[dict[str, Any]],
        tag: str,
        base: list[Field] | None,
    ) -> None:
        description = str(node.get("description") or "")
        union_unstable = self.def_unstable(name)
        by_tag: list[tuple[str, str]] = []
        default = fallback = None
        members: list[str] = []
        for v in variants:
            found = const_tag(v)
            ref = ref_name(v)
            tag_schema = (v.get("properties") or {}).get(tag)
            variant_description = str(v.get("description") or "")
            if found is None and tag_schema is not None and tag_schema.get("type") == "null":
                # The tag may be null or absent: the default member, without the tag.
                cls_name = f"{name}{pascal(v.get('title', 'Default'))}"
                fields = [
                    f for f in [*(base or []), *self.fields_of(name, v)] if f.wire_name != tag
                ]
                self.add_struct(cls_name, name, variant_description, fields, union_unstable)
                default = cls_name
                members.append(cls_name)
                continue
            if found is None and tag_schema is not None:
                # The open "other" member: the tag is any string.
                cls_name = f"Other{name}" if base is None else f"{name}Other"
                fields = list(base or []) + [
                    f if f.wire_name != tag else attrs.evolve(f, required=True, default=None)
                    for f in self.fields_of(name, v)
                ]
                self.add_struct(
                    cls_name,
                    name,
                    variant_description,
                    fields,
                    union_unstable,
                    self.untagged_alternatives(v),
                )
                fallback = cls_name
                members.append(cls_name)
                continue
            if found is None:
                # No tag at all: the default member (e.g. stdio MCP servers).
                cls_name = (
                    ref
                    if ref is not None and base is None
                    else f"{name}{pascal(v.get('title', 'Default'))}"
                )
                if base is None and ref is not None and self.ref_counts[ref] == 1:
                    self.emitted.add(ref)  # emitted as this union's member
                    ref_node = self.defs[ref]
                    description = str(ref_node.get("description") or variant_description)
                    fields = self.fields_of(ref, ref_node)
                else:
                    description = variant_description
                    fields = list(base or []) + self.fields_of(ref or name, v)
                self.add_struct(cls_name, name, description, fields, union_unstable)
                default = cls_name
                members.append(cls_name)
                continue
            _, value = found
            tag_field = self.make_field(name, tag, tag_schema or {}, True, tag=True)
            variant_unstable = union_unstable or is_unstable_text(variant_description)
            if ref is not None and self.defs[ref].get("description"):
                variant_unstable = variant_unstable or self.def_unstable(ref)
            custom = self.custom.variant_names.get((name, value))
            if base is None and ref is not None and self.ref_counts[ref] == 1 and custom is None:
                cls_name = ref
                self.emitted.add(ref)  # emitted as this union's member, with its tag
                ref_node = self.defs[ref]
                if variants_of(ref_node) is not None and ref_node.get("properties") is not None:
                    # A member that is itself a union with a shared base.
                    self.build_based_union(
                        ref, ref_node, variants_of(ref_node) or [], outer_tag=tag_field
                    )
                else:
                    self.add_struct(
                        ref,
                        name,
                        str(ref_node.get("description") or variant_description),
                        [tag_field, *self.fields_of(ref, ref_node)],
                        variant_unstable,
                    )
            else:
                cls_name = custom or (pascal(value) if base is None else f"{name}{pascal(value)}")
                if cls_name in self.defs and base is None:
                    raise ValueError(f"{name}/{value}: name {cls_name} collides; customize it")
                extra = self.fields_of(ref, self.defs[ref]) if ref is not None else []
                inline = [f for f in self.fields_of(name, v) if f.wire_name != tag]
                fields = [tag_field, *(base or []), *extra, *inline]
                alternatives = self.untagged_alternatives(self.defs[ref]) if ref else ()
                self.add_struct(
                    cls_name, name, variant_description, fields, variant_unstable, alternatives
                )
            by_tag.append((value, cls_name))
            members.append(cls_name)
        self.model.unions.append(
            Union(
                name,
                description,
                tuple(members),
                tag,
                tuple(by_tag),
                default,
                fallback,
                union_unstable,
            )
        )
        self.emitted.add(name)

    def build_based_union(
        self,
        name: str,
        node: Mapping[str, Any],
        variants: list[dict[str, Any]],
        outer_tag: Field | None = None,
    ) -> None:
        """A definition with shared properties plus alternatives."""
        base = self.fields_of(name, node)
        if outer_tag is not None:
            base = [outer_tag, *base]
        tags = [const_tag(v) for v in variants]
        tag_props = {t[0] for t in tags if t is not None}
        if len(tag_props) == 1:
            self.build_tagged(name, node, variants, tag_props.pop(), base=base)
            return
        # Untagged alternatives (scopes): one class whose alternative fields
        # are optional, plus the field sets that make an instance valid.
        self.add_struct(
            name,
            name,
            str(node.get("description") or ""),
            base,
            self.def_unstable(name),
            self.untagged_alternatives(node),
        )

    # -- methods ---------------------------------------------------------

    def build_methods(self) -> None:
        found: dict[tuple[str, str], dict[str, str]] = {}
        for name, node in self.defs.items():
            method = node.get("x-method")
            if not method:
                continue
            if name.endswith("Response"):
                role = "result"
            elif name.endswith("Notification"):
                role = "notification"
            else:
                role = "params"
            kind = "notification" if role == "notification" else "request"
            entry = found.setdefault((method, kind), {"side": node["x-side"]})
            entry[role if role != "notification" else "params"] = name
        for (method, kind), entry in sorted(found.items()):
            params = entry["params"]
            stable = params in self.stable and (
                entry.get("result") in self.stable or kind == "notification"
            )
            self.model.methods.append(
                Method(method, entry["side"], kind, params, entry.get("result"), stable)
            )


def _property_names(node: Any) -> set[str]:
    """Property names declared by a definition, its alternatives included."""
    names: set[str] = set()
    if isinstance(node, dict):
        names |= set(node.get("properties") or {})
        for key in ("anyOf", "oneOf", "allOf"):
            for part in node.get(key) or []:
                names |= _property_names(part)
    return names


def _int_format_bounds(fmt: str, known: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    bounds = {
        "uint8": (0, 2**8 - 1),
        "uint16": (0, 2**16 - 1),
        "uint32": (0, 2**32 - 1),
        "uint64": (0, 2**64 - 1),
        "int32": (-(2**31), 2**31 - 1),
        "int64": (-(2**63), 2**63 - 1),
    }.get(fmt)
    if bounds is None:
        return ()
    out = []
    if "minimum" not in known:
        out.append(("minimum", bounds[0]))
    if "maximum" not in known:
        out.append(("maximum", bounds[1]))
    return tuple(out)


# --------------------------------------------------------------------------
# Stage 4: emit
# --------------------------------------------------------------------------

BANNER = """\
# Generated by `python -m protocol.generate` from protocol/schema/*.json.
# DO NOT EDIT: change the schema or the generator, then regenerate.
"""


def comment_block(text: str, indent: str) -> list[str]:
    lines: list[str] = []
    for paragraph in text.strip().splitlines():
        wrapped = textwrap.wrap(paragraph, 92 - len(indent)) or [""]
        lines.extend(f"{indent}#: {w}".rstrip() for w in wrapped)
    return lines


def docstring(text: str, indent: str, unstable: bool) -> list[str]:
    text = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if unstable and not is_unstable_text(text):
        text = ("**UNSTABLE**: only in the unstable schema.\n\n" + text).strip()
    if not text:
        return []
    body = text.splitlines()
    if len(body) == 1:
        return [f'{indent}"""{body[0]}"""']
    return [
        f'{indent}"""{body[0]}',
        *[f"{indent}{line}".rstrip() for line in body[1:]],
        f'{indent}"""',
    ]


@attrs.frozen
class Part:
    """One generated module of wire types: the closure of its methods' types."""

    module: str
    #: What it holds, for its docstring (lower case, no full stop).
    summary: str
    #: The methods whose params and results it holds (with what they contain, less what
    #: earlier parts hold); None for everything left.
    methods: tuple[str, ...] | None


#: The session methods that run in a turn, not in setting a session up.
TURN_METHODS = ("session/prompt", "session/update", "session/request_permission", "session/cancel")

#: The parts `protocol.types` is split into, in load order. Answering `initialize`
#: imports only the first: an editor times spawn -> initialize, and all ~230 classes
#: cost ~75 ms to build. `session/new` adds the second, a prompt the third; the last
#: loads when the agent first asks its client something (or in the warm-up).
PARTS = (
    Part(
        "_types_handshake",
        "what answering `initialize` and `authenticate` needs, every enum and string alias",
        ("initialize", "authenticate", "$/cancel_request"),
    ),
    Part(
        "_types_sessions",
        "what the session methods add: new, load, resume, fork, list and settings",
        ("session/*",),
    ),
    Part(
        "_types_prompts",
        "what a prompt, its updates and its cancelling add",
        ("session/prompt", "session/update", "session/cancel"),
    ),
    Part(
        "_types_others",
        "the rest: what an agent asks of its client (permission, files, terminals,"
        " elicitation) and the unstable methods",
        None,
    ),
)

_TABLE_NAMES = (
    "ALL_TYPES",
    "DEFINITION_OF",
    "WIRE_FIELDS",
    "TAGGED_UNIONS",
    "UNTAGGED_UNIONS",
    "UNSTABLE_TYPES",
    "ALTERNATIVES",
)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text))


class Emitter:
    """Writes the model as Python source, in a fixed order."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.part_of = self._partition()

    # -- the split into parts ------------------------------------------------

    def _references(self) -> dict[str, set[str]]:
        """Each definition's name -> the names its source mentions."""
        refs: dict[str, set[str]] = {}
        for s in self.model.structs:
            refs[s.name] = set()
            for f in s.fields:
                refs[s.name] |= _words(f.type.render()) | _words(f.default or "")
        for u in self.model.unions:
            refs[u.name] = {w for m in u.members for w in _words(m)}
        for a in self.model.aliases:
            refs[a.name] = _words(a.target)
        for e in self.model.enums:
            refs[e.name] = set()
        return refs

    def _partition(self) -> dict[str, int]:
        """Each definition's name -> the index in `PARTS` of the part that defines it."""
        refs = self._references()
        part_of: dict[str, int] = {}
        # String aliases and enums go first: every part's annotations may name them, and
        # modules build lookup tables of enum values when they load (~20 enums, cheap).
        for a in self.model.aliases:
            if a.target in ("str", "int", "float", "bool", "Any"):
                part_of[a.name] = 0
        for e in self.model.enums:
            part_of[e.name] = 0
        for index, part in enumerate(PARTS):
            if part.methods is None:
                roots = list(refs)
            else:
                roots = []
                for m in self.model.methods:
                    if self._in(m.name, part.methods):
                        roots += [m.params, *([m.result] if m.result else [])]
            stack = roots
            while stack:
                name = stack.pop()
                if name in part_of or name not in refs:
                    continue
                part_of[name] = index
                stack.extend(refs[name])
        return part_of

    @staticmethod
    def _in(method: str, patterns: tuple[str, ...]) -> bool:
        if method in TURN_METHODS and method not in patterns:
            return False
        return any(
            method == p or (p.endswith("/*") and method.startswith(p[:-1])) for p in patterns
        )

    def _part_model(self, index: int) -> Model:
        """The definitions of part `index`, in the model's order."""

        def mine(name: str) -> bool:
            return self.part_of[name] == index

        return Model(
            enums=[e for e in self.model.enums if mine(e.name)],
            aliases=[a for a in self.model.aliases if mine(a.name)],
            structs=[s for s in self.model.structs if mine(s.name)],
            unions=[u for u in self.model.unions if mine(u.name)],
        )

    # -- the modules ------------------------------------------------------------

    def part_module(self, index: int) -> str:
        part = PARTS[index]
        model = self._part_model(index)
        own = (
            {e.name for e in model.enums}
            | {a.name for a in model.aliases}
            | {s.name for s in model.structs}
            | {u.name for u in model.unions}
        )
        refs = self._references()
        used = set().union(*(refs[name] for name in own)) if own else set()
        out: list[str] = [
            BANNER.rstrip(),
            f'"""ACP v1 wire types, part {index + 1} of {len(PARTS)}: {part.summary}.',
            "",
            "Import them from `protocol.types`, which loads this part when one is first used.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "import enum",
            "from typing import Any, Final, Literal, TypeAlias, Union",
            "",
            "import attrs",
            "",
            "from protocol._wire import (",
            "    JSON_NULL,",
            "    LOADED_TABLES,",
            "    JsonNull,",
            "    OpenEnumMixin,",
            "    TaggedUnion,",
            "    UntaggedUnion,",
            "    WireEnum,",
            "    WireField,",
            "    WireStruct,",
            "    WireTables,",
            ")",
        ]
        for earlier in range(index):
            names = sorted(n for n in used - own if self.part_of.get(n) == earlier)
            if names:
                out += [f"from protocol.{PARTS[earlier].module} import ("]
                out += [f"    {n}," for n in names]
                out += [")"]
        out.append("")
        out += self._emit_aliases(model, primitive=True)
        out += self._emit_enums(model)
        out += self._emit_structs(model)
        out += self._emit_aliases(model, primitive=False)
        out += self._emit_unions(model)
        out += self._emit_tables(model)
        out += [
            "",
            "TABLES: Final = WireTables(",
            "    wire_fields=WIRE_FIELDS,",
            "    definition_of=DEFINITION_OF,",
            "    tagged_unions=TAGGED_UNIONS,",
            "    untagged_unions=UNTAGGED_UNIONS,",
            "    alternatives=ALTERNATIVES,",
            "    unstable_types=UNSTABLE_TYPES,",
            "    all_types=ALL_TYPES,",
            ")",
            "",
            "# Last: the converter may now meet this part's classes.",
            "LOADED_TABLES.add(TABLES)",
        ]
        names = sorted(own | {"TABLES"})
        out += ["", "__all__ = ("] + [f"    {n!r}," for n in names] + [")", ""]
        return "\n".join(out)

    def types_module(self) -> str:
        """The one public face of the parts: each name imports its part on first use."""
        by_part: dict[int, list[str]] = {i: [] for i in range(len(PARTS))}
        for name, index in sorted(self.part_of.items()):
            by_part[index].append(name)
        out: list[str] = [
            BANNER.rstrip(),
            '"""ACP v1 wire types, generated from the vendored JSON Schema.',
            "",
            "Every class is an attrs class with snake_case attributes; `protocol.converter`",
            "maps them to camelCase JSON, writes tags, omits unset optional fields and",
            "keeps `_meta` (the `meta` attribute). Use `JSON_NULL` where null clears a field.",
            "",
            f"The definitions are generated into {len(PARTS)} parts that load on first use, so",
            "answering `initialize` builds ~40 classes, not ~230:",
            "",
            *[f"- `{p.module}`: {p.summary}{';' if p is not PARTS[-1] else '.'}" for p in PARTS],
            "",
            "This module is their public face: `types.NewSessionRequest` imports the part",
            "that defines it. The tables (`WIRE_FIELDS`, `ALL_TYPES`...) merge every part,",
            "so using one loads them all.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "import sys",
            "from typing import TYPE_CHECKING, Any, Final",
            "",
            "from protocol._wire import JSON_NULL, JsonNull, merge_tables",
            "",
            f"SCHEMA_VERSION: Final = {SCHEMA_VERSION!r}",
            "PROTOCOL_VERSION: Final = 1",
            "",
            "if TYPE_CHECKING:",
        ]
        for index, part in enumerate(PARTS):
            out += [f"    from protocol.{part.module} import ("]
            out += [f"        {n}," for n in by_part[index]]
            out += ["    )"]
        out += [
            "    from protocol._wire import TaggedUnion, UntaggedUnion, WireField",
            "",
            "    WIRE_FIELDS: dict[type, tuple[WireField, ...]]",
            "    DEFINITION_OF: dict[type, str]",
            "    TAGGED_UNIONS: tuple[TaggedUnion, ...]",
            "    UNTAGGED_UNIONS: tuple[UntaggedUnion, ...]",
            "    ALTERNATIVES: dict[type, tuple[tuple[str, ...], ...]]",
            "    UNSTABLE_TYPES: frozenset[type]",
            "    ALL_TYPES: tuple[type, ...]",
            "",
            "#: Each part's module and the names it defines.",
            "_PARTS: Final[dict[str, tuple[str, ...]]] = {",
        ]
        for index, part in enumerate(PARTS):
            out += [f"    'protocol.{part.module}': ("]
            out += [f"        {n!r}," for n in by_part[index]]
            out += ["    ),"]
        out += [
            "}",
            "_PART_OF: Final = {n: module for module, names in _PARTS.items() for n in names}",
            "#: The merged tables, by name: the `WireTables` attribute each one is.",
            "_TABLES: Final = {",
            *[f"    {t!r}: {t.lower()!r}," for t in _TABLE_NAMES],
            "}",
            "",
            "",
            "if not TYPE_CHECKING:",
            "",
            "    def __getattr__(name: str) -> Any:",
            '        """Import the part that defines `name` (every part, for a table)."""',
            "        module = _PART_OF.get(name)",
            "        if module is not None:",
            "            value = getattr(_part(module), name)",
            "        elif name in _TABLES:",
            "            merged = merge_tables(_part(m).TABLES for m in _PARTS)",
            "            value = getattr(merged, _TABLES[name])",
            "        else:",
            '            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
            "        globals()[name] = value",
            "        return value",
            "",
            "",
            "def _part(module: str) -> Any:",
            "    # An import statement's machinery, not importlib.import_module: `-X importtime`",
            "    # (the startup benchmark's report) sees only the former.",
            "    __import__(module)",
            "    return sys.modules[module]",
            "",
            "",
            "def __dir__() -> list[str]:",
            "    return list(__all__)",
        ]
        fixed = ["JSON_NULL", "JsonNull", "SCHEMA_VERSION", "PROTOCOL_VERSION"]
        names = sorted([*fixed, *self.part_of, *_TABLE_NAMES])
        out += ["", "", "__all__ = ("] + [f"    {n!r}," for n in names] + [")", ""]
        return "\n".join(out)

    def _emit_aliases(self, model: Model, *, primitive: bool) -> list[str]:
        out = []
        for a in sorted(model.aliases, key=lambda a: a.name):
            is_prim = a.target in ("str", "int", "float", "bool", "Any")
            if is_prim != primitive:
                continue
            out += ["", *comment_block(a.description, ""), f"{a.name}: TypeAlias = {a.target}"]
        return out

    def _emit_enums(self, model: Model) -> list[str]:
        out = []
        for e in model.enums:
            bases = ("OpenEnumMixin" if e.open else "WireEnum") + f", {e.value_type}, enum.Enum"
            out += ["", ""]
            if not e.open:
                out.append("@enum.unique")
            out.append(f"class {e.name}({bases}):")
            out += docstring(
                e.description
                + ("\n\nOpen: unknown values are kept, not rejected." if e.open else ""),
                "    ",
                e.unstable,
            )
            for m in e.members:
                out.append("")
                out += comment_block(m.description, "    ")
                out.append(f"    {m.name} = {m.value!r}")
        return out

    def _py_type(self, f: Field) -> str:
        t = f.type.render()
        if f.explicit_null:
            return f"{t} | JsonNull | None"
        if f.nullable:
            return f"{t} | None"
        return t

    def _emit_structs(self, model: Model) -> list[str]:
        out = []
        for s in model.structs:
            # repr, eq and hash come from `WireStruct`: attrs would compile three methods
            # per class, most of what importing this module costs.
            decorator = "@attrs.define(frozen=True, kw_only=True, repr=False, eq=False)"
            out += ["", "", decorator, f"class {s.name}(WireStruct):"]
            out += docstring(s.description, "    ", s.unstable)
            if not s.fields:
                out.append("")
                out.append("    # An empty object: its presence is the message.")
                if not s.description:
                    out.append("    pass")
            for f in s.fields:
                out.append("")
                out += comment_block(f.description, "    ")
                if f.unstable:
                    out.append("    #: **UNSTABLE**: written only when unstable is enabled.")
                default = "" if f.default is None else f" = {f.default}"
                out.append(f"    {f.name}: {self._py_type(f)}{default}")
        return out

    def _emit_unions(self, model: Model) -> list[str]:
        out = []
        # Unions may reference other unions: emit in dependency order.
        pending = list(model.unions)
        done: set[str] = set()
        union_names = {u.name for u in pending}
        while pending:
            progressed = False
            for u in list(pending):
                deps = {m for m in u.members if m in union_names}
                deps |= {
                    inner
                    for m in u.members
                    for inner in re.findall(r"\w+", m)
                    if inner in union_names and inner != u.name
                }
                if deps <= done:
                    out += ["", *comment_block(u.description, "")]
                    members = ", ".join(u.members)
                    out.append(f"{u.name}: TypeAlias = Union[{members}]")
                    done.add(u.name)
                    pending.remove(u)
                    progressed = True
            if not progressed:
                raise ValueError(f"cyclic unions: {[u.name for u in pending]}")
        return out

    def _emit_tables(self, model: Model) -> list[str]:
        out = [
            "",
            "",
            "# " + "-" * 74,
            "# Tables read by protocol.converter and the tests",
            "# " + "-" * 74,
            "",
        ]
        out.append("WIRE_FIELDS: Final[dict[type, tuple[WireField, ...]]] = {")
        for s in model.structs:
            out.append(f"    {s.name}: (")
            for f in s.fields:
                args = [repr(f.name), repr(f.wire_name)]
                for flag in (
                    "required",
                    "tag",
                    "explicit_null",
                    "default_on_error",
                    "skip_invalid_items",
                    "default_on_null",
                    "unstable",
                ):
                    if getattr(f, flag):
                        args.append(f"{flag}=True")
                if f.constraints:
                    args.append(f"constraints={dict(f.constraints)!r}")
                out.append(f"        WireField({', '.join(args)}),")
            out.append("    ),")
        out.append("}")
        out.append("")
        out.append("DEFINITION_OF: Final[dict[type, str]] = {")
        out += [f"    {s.name}: {s.definition!r}," for s in model.structs]
        out += [f"    {e.name}: {e.name!r}," for e in model.enums]
        out.append("}")
        out.append("")
        out.append("TAGGED_UNIONS: Final[tuple[TaggedUnion, ...]] = (")
        for u in model.unions:
            if u.tag is None:
                continue
            by_tag = ", ".join(f"{value!r}: {cls}" for value, cls in u.by_tag)
            args = [f"name={u.name!r}", f"tag={u.tag!r}", f"by_tag={{{by_tag}}}"]
            if u.default:
                args.append(f"default={u.default}")
            if u.fallback:
                args.append(f"fallback={u.fallback}")
            out.append(f"    TaggedUnion({', '.join(args)}),")
        out.append(")")
        out.append("")
        out.append("UNTAGGED_UNIONS: Final[tuple[UntaggedUnion, ...]] = (")
        for u in model.unions:
            if u.tag is None:
                out.append(
                    f"    UntaggedUnion(name={u.name!r}, members=({', '.join(u.members)},)),"
                )
        out.append(")")
        out.append("")
        out.append("#: Classes merged from untagged alternatives: a valid instance sets every")
        out.append("#: field of at least one of these sets.")
        out.append("ALTERNATIVES: Final[dict[type, tuple[tuple[str, ...], ...]]] = {")
        for s in model.structs:
            if s.alternatives:
                out.append(f"    {s.name}: {s.alternatives!r},")
        out.append("}")
        out.append("")
        unstable = sorted(
            [s.name for s in model.structs if s.unstable]
            + [e.name for e in model.enums if e.unstable]
        )
        out.append("UNSTABLE_TYPES: Final[frozenset[type]] = frozenset({")
        out += [f"    {n}," for n in unstable]
        out.append("})")
        out.append("")
        out.append("ALL_TYPES: Final[tuple[type, ...]] = (")
        out += [f"    {e.name}," for e in model.enums]
        out += [f"    {s.name}," for s in model.structs]
        out.append(")")
        # Annotations stay strings until the converter first handles a class (it resolves
        # them then): resolving all ~230 at import was a third of the import's time.
        return out

    def methods_module(self) -> str:
        out = [
            BANNER.rstrip(),
            '"""The ACP method table, generated from the schema\'s `x-method` and `x-side`.',
            "",
            "`REQUESTS` and `NOTIFICATIONS` map a wire method name to its `MethodSpec`: the",
            "params and result types, which side handles it, and whether it is stable.",
            "A name may be both (`mcp/message`), so the two tables are separate.",
            '"""',
            "",
        ]
        out += [
            "from __future__ import annotations",
            "",
            "import enum",
            "from collections.abc import Mapping",
            "from types import MappingProxyType",
            "from typing import Any, Final",
            "",
            "import attrs",
            "",
            "from protocol import types",
            "",
            "",
            "class Side(enum.Enum):",
            '    """Which peer handles a method."""',
            "",
            "    #: The agent handles it; the client sends it.",
            '    AGENT = "agent"',
            "    #: The client (editor) handles it; the agent sends it.",
            '    CLIENT = "client"',
            "    #: Either side may send it (`$/cancel_request`).",
            '    PROTOCOL = "protocol"',
            "    #: Exchanged between a conductor and its proxies (unstable).",
            '    PROXY = "proxy"',
            "",
            "",
            "class MessageKind(enum.Enum):",
            '    """Whether a method expects a response."""',
            "",
            '    REQUEST = "request"',
            '    NOTIFICATION = "notification"',
            "",
            "",
            "@attrs.frozen",
            "class MethodSpec:",
            '    """One method: its wire name, direction and payload types."""',
            "",
            "    name: str",
            "    side: Side",
            "    kind: MessageKind",
            "    #: The name in `protocol.types` of the type params structure into.",
            "    params: str",
            "    #: The name of the result's type; None for notifications.",
            "    result: str | None",
            "    #: False for methods only in the unstable schema.",
            "    stable: bool",
            "",
            "    @property",
            "    def params_type(self) -> Any:",
            '        """The type params structure into (a class or a union alias)."""',
            "        # By name: the table would otherwise import every part of the types.",
            "        return getattr(types, self.params)",
            "",
            "    @property",
            "    def result_type(self) -> Any:",
            '        """The type of the result; None for notifications."""',
            "        return None if self.result is None else getattr(types, self.result)",
            "",
        ]
        for wire_name in sorted({m.name for m in self.model.methods}):
            const = upper_snake(wire_name.replace("$/", ""))
            out.append(f"{const}: Final = {wire_name!r}")
        for kind, title in (("request", "REQUESTS"), ("notification", "NOTIFICATIONS")):
            out += ["", f"{title}: Final[Mapping[str, MethodSpec]] = MappingProxyType({{"]
            for m in self.model.methods:
                if m.kind != kind:
                    continue
                result = repr(m.result) if m.result else "None"
                out += [
                    f"    {m.name!r}: MethodSpec(",
                    f"        name={m.name!r},",
                    f"        side=Side.{m.side.upper()},",
                    f"        kind=MessageKind.{kind.upper()},",
                    f"        params={m.params!r},",
                    f"        result={result},",
                    f"        stable={m.stable},",
                    "    ),",
                ]
            out.append("})")
        consts = sorted(
            upper_snake(m.replace("$/", "")) for m in {m.name for m in self.model.methods}
        )
        out += (
            ["", "__all__ = ("]
            + [
                f"    {n!r},"
                for n in sorted(
                    ["MessageKind", "MethodSpec", "NOTIFICATIONS", "REQUESTS", "Side", *consts]
                )
            ]
            + [")", ""]
        )
        return "\n".join(out)


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------


def generate() -> dict[str, str]:
    """Return `{file name: source}` for every generated module."""
    stable, unstable = load()
    validate(stable, unstable)
    model = Builder(stable, unstable).build()
    emitter = Emitter(model)
    files = {"types.py": emitter.types_module(), "methods.py": emitter.methods_module()}
    files |= {f"{part.module}.py": emitter.part_module(i) for i, part in enumerate(PARTS)}
    return {name: _format(text) for name, text in files.items()}


def _format(source: str) -> str:
    """Format with ruff (pinned in the dev extra) so the output is byte-stable."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--line-length", "100", "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _write(files: Mapping[str, str], directory: Path) -> None:
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    for stale in _stale_parts(files, directory):
        stale.unlink()


def _stale_parts(files: Mapping[str, str], directory: Path) -> list[Path]:
    """Part modules in `directory` that the generation no longer writes."""
    return sorted(p for p in directory.glob("_types_*.py") if p.name not in files)


def _diff(files: Mapping[str, str], directory: Path) -> Iterable[str]:
    for name, text in files.items():
        path = directory / name
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        yield from difflib.unified_diff(
            current.splitlines(keepends=True),
            text.splitlines(keepends=True),
            f"committed/{name}",
            f"regenerated/{name}",
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m protocol.generate", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed output is stale"
    )
    args = parser.parse_args(argv)
    files = generate()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            _write(files, Path(tmp))
            drift = "".join(_diff(files, OUTPUT_DIR))
            drift += "".join(f"stale: {p}\n" for p in _stale_parts(files, OUTPUT_DIR))
        if drift:
            sys.stderr.write(drift)
            sys.stderr.write(
                "\nprotocol/ generated modules are stale: run python -m protocol.generate\n"
            )
            return 1
        return 0
    _write(files, OUTPUT_DIR)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
