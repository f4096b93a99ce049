"""Generate each ACP version's `types.py` (with its parts) and `methods.py` from its schema.

Run `python -m protocol.generate` to regenerate, `--check` to fail on drift
(CI and a test do). Each `Target` (ACP v1 into `protocol/`, v2 into `protocol/v2/`)
goes through four stages, in order: load its JSON Schemas, validate them, build an
intermediate model (`Struct`, `Enum`, `Alias`, `Union`, `Method`), and emit Python
from it. Schema quirks are handled in one place, `customizations()`, never by
editing the output.

One script on purpose, as lsprotocol's generator is: it runs once per schema
update, reads top to bottom, and its output is what is reviewed.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
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
OUTPUT_DIR = Path(__file__).parent

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
    rest: bool = False


#: The field of an open member holding the properties its schema does not name.
REST_FIELD = Field(
    wire_name="*",
    name="extra",
    type=TypeRef("map", item=ANY),
    required=False,
    nullable=False,
    default="attrs.Factory(dict)",
    description="The properties this form does not name, kept as they came.",
    rest=True,
)


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
    #: Words in a nullable optional field's description saying that `null` clears it
    #: (so `null` and absence differ: `JSON_NULL` and `None`).
    null_clears_field: tuple[str, ...] = ("null to clear",)
    #: Words in a definition's description saying that `null` clears any of its
    #: nullable optional fields (v2's upserts: absence leaves a value unchanged).
    null_clears_definition: tuple[str, ...] = ()
    #: Whether open "other" members keep the properties they do not name (`extra`).
    keep_unknown_properties: bool = False


#: The envelopes of both versions: the engine (protocol/_dispatch.py) frames id/method/params.
_ENVELOPES = frozenset(
    {
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
)


def customizations(version: int = 1) -> Customizations:
    """The schema quirks we correct in protocol `version`, each with the reason."""
    if version == 1:
        return Customizations(
            skipped=_ENVELOPES,
            variant_names={
                # `ToolCallUpdate` is also the plain type used by permission requests.
                ("SessionUpdate", "tool_call_update"): "ToolCallProgress",
                ("RequestPermissionOutcome", "cancelled"): "CancelledPermissionOutcome",
            },
        )
    if version == 2:
        return Customizations(
            skipped=_ENVELOPES,
            variant_names={
                # `StateUpdate` is also the union `session/status` answers with, and
                # `ToolCallUpdate` the plain type permission requests name (as in v1).
                ("SessionUpdate", "state_update"): "SessionStateUpdate",
                ("SessionUpdate", "tool_call_update"): "ToolCallProgress",
            },
            # v2 updates are upserts: "omitted fields leave the existing value unchanged,
            # `null` clears". Its descriptions say so per definition or per field.
            null_clears_field=("null to clear", "`null` clears"),
            null_clears_definition=("patch semantics", "`null` clears"),
            # "Receivers that do not understand this ... should preserve" the payload, and
            # extensions ride there (`{"type": "_acp-agent/after", "cursor": ...}`).
            keep_unknown_properties=True,
        )
    raise ValueError(f"no customizations for protocol version {version}")


# --------------------------------------------------------------------------
# Targets: the versions generated, where from and where to
# --------------------------------------------------------------------------


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
V1_PARTS = (
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

#: The parts `protocol.v2.types` is split into, in load order, for the same reasons.
V2_PARTS = (
    Part(
        "_types_handshake",
        "what answering `initialize` and `auth/*` needs, every enum and string alias",
        ("initialize", "auth/login", "auth/logout", "$/cancel_request"),
    ),
    Part(
        "_types_sessions",
        "what the session methods add: new, resume, list, close and settings",
        ("session/*",),
    ),
    Part(
        "_types_prompts",
        "what a prompt, its updates and its cancelling (turn, tool call, terminal) add",
        (
            "session/prompt",
            "session/update",
            "session/cancel",
            "tool_call/cancel",
            "terminal/cancel",
        ),
    ),
    Part(
        "_types_others",
        "the rest: what an agent asks of its client (permission, elicitation) and the"
        " unstable methods",
        None,
    ),
)


@attrs.frozen
class Target:
    """One ACP version: its vendored schema, the package its modules go to, their split."""

    version: int
    #: The folder holding its `schema.json` and `schema.unstable.json`.
    schema_dir: Path
    #: The dotted package its modules are written into.
    package: str
    #: Written into its types module: which schema the types were generated from.
    schema_version: str
    parts: tuple[Part, ...]
    #: How much answering `initialize` builds, for its types module's docstring.
    initialize_builds: str

    @property
    def output_dir(self) -> Path:
        """The folder of `package`."""
        return OUTPUT_DIR.parent.joinpath(*self.package.split("."))

    @property
    def schema_files(self) -> str:
        """The schema files as the banner names them (`protocol/schema/*.json`)."""
        return f"{self.schema_dir.relative_to(OUTPUT_DIR.parent).as_posix()}/*.json"


V1 = Target(
    version=1,
    schema_dir=SCHEMA_DIR,
    package="protocol",
    schema_version="1 (npm @agentclientprotocol/sdk 2.4.0, about schema-v1.25)",
    parts=V1_PARTS,
    initialize_builds="~40 classes, not ~230",
)
V2 = Target(
    version=2,
    schema_dir=SCHEMA_DIR / "v2",
    package="protocol.v2",
    schema_version="2 (npm @agentclientprotocol/sdk 2.4.0, the v2 draft of 2026-11)",
    parts=V2_PARTS,
    initialize_builds="~40 classes, not ~260",
)
#: Every version generated, in order.
TARGETS = (V1, V2)


# --------------------------------------------------------------------------
# Stage 1 and 2: load and validate
# --------------------------------------------------------------------------


def load(target: Target = V1) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read `target`'s stable and unstable schemas."""
    stable = json.loads((target.schema_dir / "schema.json").read_text(encoding="utf-8"))
    unstable = json.loads((target.schema_dir / "schema.unstable.json").read_text(encoding="utf-8"))
    return stable, unstable


#: Digests of the schemas this process found valid against the JSON Schema meta-schema.
_META_CHECKED: set[str] = set()


def validate(*schemas: Mapping[str, Any]) -> None:
    """Fail early on a schema this generator cannot have been written for."""
    from jsonschema import Draft202012Validator

    for schema in schemas:
        # Against the meta-schema, once per content: most of what generating costs.
        digest = hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()
        if digest not in _META_CHECKED:
            Draft202012Validator.check_schema(schema)
            _META_CHECKED.add(digest)
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

    def __init__(
        self, stable: Mapping[str, Any], unstable: Mapping[str, Any], custom: Customizations
    ) -> None:
        self.stable = stable["$defs"]
        self.defs = unstable["$defs"]
        self.custom = custom
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

    def null_clears(self, owner: str | None, description: str) -> bool:
        """Whether `null` clears a nullable optional field (so it differs from absence)."""
        if any(words in description for words in self.custom.null_clears_field):
            return True
        owner_description = str(self.defs.get(owner or "", {}).get("description") or "")
        return any(words in owner_description for words in self.custom.null_clears_definition)

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
        constraints = self.constraints_of(schema, ftype)
        return Field(
            wire_name=prop,
            name=snake(prop),
            type=ftype,
            required=required,
            nullable=nullable or (not required and default == "None"),
            default=default,
            description=description,
            explicit_null=nullable and not required and self.null_clears(owner, description),
            default_on_error=bool(schema.get("x-deserialize-default-on-error")),
            skip_invalid_items=bool(schema.get("x-deserialize-skip-invalid-items")),
            default_on_null=bool(schema.get("x-deserialize-default-on-null")),
            unstable=self.field_unstable(owner, prop),
            constraints=constraints,
        )

    def constraints_of(
        self, schema: Mapping[str, Any], ftype: TypeRef
    ) -> tuple[tuple[str, Any], ...]:
        """The JSON Schema constraints a value of `schema` must meet (for the tests)."""
        # Constraints may sit on the field or on the alias it refers to.
        ref = ref_name(schema)
        source = self.defs[ref] if ref is not None and ftype.kind == "named" else schema
        if source.get("type") not in ("integer", "string", None) or "properties" in source:
            source = schema
        keys = ("minimum", "maximum", "minLength", "minItems")
        constraints = tuple((key, source[key]) for key in keys if key in source)
        if not constraints and source.get("type") is None:
            # An alias of alternatives that all state the same (v2's select options).
            alternatives = variants_of(source) or []
            shared = [
                key
                for key in keys
                if alternatives
                and all(key in a for a in alternatives)
                and len({json.dumps(a[key]) for a in alternatives}) == 1
            ]
            constraints = tuple((key, alternatives[0][key]) for key in shared)
        fmt = source.get("format") or schema.get("format")
        if ftype.kind == "named" and source is not schema and source.get("type") == "integer":
            ftype_for_bounds = TypeRef("prim", "int")
        else:
            ftype_for_bounds = ftype
        if ftype_for_bounds.name == "int" and isinstance(fmt, str):
            constraints += _int_format_bounds(fmt, dict(constraints))
        items = schema.get("items")
        if ftype.kind == "list" and ftype.item is not None and isinstance(items, dict):
            # An array of constrained values (v2's `supported` protocol versions).
            inner = self.constraints_of(items, ftype.item)
            if inner:
                constraints += (("items", dict(inner)),)
        return constraints

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
        *,
        definition: str | None = None,
        unstable: bool | None = None,
    ) -> None:
        """A union told apart by `tag`; `base` holds the fields every member shares.

        A union nested in another (`definition` names the outermost, which validates
        it) gets the outer tags in `base` and its stability from the outer member.
        """
        description = str(node.get("description") or "")
        union_unstable = self.def_unstable(name) if unstable is None else unstable
        definition = definition or name
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
                self.add_struct(cls_name, definition, variant_description, fields, union_unstable)
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
                if self.custom.keep_unknown_properties and v.get("additionalProperties") is True:
                    fields.append(REST_FIELD)
                self.add_struct(
                    cls_name,
                    definition,
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
                self.add_struct(cls_name, definition, description, fields, union_unstable)
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
                        definition,
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
                inner_tag = _variant_tag(self.defs[ref]) if ref is not None else None
                if ref is not None and inner_tag is not None:
                    # A member that is itself a tagged union, used elsewhere too: a copy of
                    # it whose members carry this tag as well (v2's `state_update`).
                    ref_node = self.defs[ref]
                    self.build_tagged(
                        cls_name,
                        ref_node,
                        variants_of(ref_node) or [],
                        inner_tag,
                        base=[tag_field, *(base or []), *extra, *inline],
                        definition=definition,
                        unstable=variant_unstable,
                    )
                else:
                    alternatives = self.untagged_alternatives(self.defs[ref]) if ref else ()
                    self.add_struct(
                        cls_name,
                        definition,
                        variant_description,
                        fields,
                        variant_unstable,
                        alternatives,
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


def _variant_tag(node: Mapping[str, Any]) -> str | None:
    """The property that tells a union's variants apart; None if it has none or several."""
    tags = {t[0] for t in (const_tag(v) for v in variants_of(node) or []) if t is not None}
    return tags.pop() if len(tags) == 1 else None


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


def banner(target: Target) -> str:
    return (
        f"# Generated by `python -m protocol.generate` from {target.schema_files}.\n"
        "# DO NOT EDIT: change the schema or the generator, then regenerate."
    )


def _factory_of(default: str | None) -> str | None:
    """The callable of an `attrs.Factory(...)` default expression, else None."""
    if default is not None and default.startswith("attrs.Factory(") and default.endswith(")"):
        return default[len("attrs.Factory(") : -1]
    return None


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

    def __init__(self, model: Model, target: Target) -> None:
        self.model = model
        self.target = target
        self.parts = target.parts
        self.package = target.package
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
        """Each definition's name -> the index in `self.parts` of the part that defines it."""
        refs = self._references()
        part_of: dict[str, int] = {}
        # String aliases and enums go first: every part's annotations may name them, and
        # modules build lookup tables of enum values when they load (~20 enums, cheap).
        for a in self.model.aliases:
            if a.target in ("str", "int", "float", "bool", "Any"):
                part_of[a.name] = 0
        for e in self.model.enums:
            part_of[e.name] = 0
        for index, part in enumerate(self.parts):
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
        part = self.parts[index]
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
            banner(self.target),
            f'"""ACP v{self.target.version} wire types, part {index + 1} of {len(self.parts)}:'
            f" {part.summary}.",
            "",
            f"Import them from `{self.package}.types`, which loads this part when one is first"
            " used.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "import enum",
            "from typing import Any, ClassVar, Final, Literal, TypeAlias, Union",
            "",
            "import attrs",
            "from attrs import NOTHING",
            "",
            "from protocol._wire import (",
            "    JSON_NULL,",
            "    LOADED_TABLES,",
            "    JsonNull,",
            "    OpenEnumMixin,",
            "    TaggedUnion,",
            "    UntaggedUnion,",
            "    WireAttributes,",
            "    WireEnum,",
            "    WireField,",
            "    WireStruct,",
            "    WireTables,",
            "    wire_attributes,",
            ")",
        ]
        for earlier in range(index):
            names = sorted(n for n in used - own if self.part_of.get(n) == earlier)
            if names:
                out += [f"from {self.package}.{self.parts[earlier].module} import ("]
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
        by_part: dict[int, list[str]] = {i: [] for i in range(len(self.parts))}
        for name, index in sorted(self.part_of.items()):
            by_part[index].append(name)
        out: list[str] = [
            banner(self.target),
            f'"""ACP v{self.target.version} wire types, generated from the vendored JSON Schema.',
            "",
            f"Every class is an attrs class with snake_case attributes; `{self.package}.converter`",
            "maps them to camelCase JSON, writes tags, omits unset optional fields and",
            "keeps `_meta` (the `meta` attribute). Use `JSON_NULL` where null clears a field.",
            "",
            f"The definitions are generated into {len(self.parts)} parts that load on first use,"
            " so",
            f"answering `initialize` builds {self.target.initialize_builds}:",
            "",
            *[
                f"- `{p.module}`: {p.summary}{';' if p is not self.parts[-1] else '.'}"
                for p in self.parts
            ],
            "",
            "This module is their public face: `types.NewSessionRequest` imports the part",
            "that defines it. The tables (`WIRE_FIELDS`, `ALL_TYPES`...) merge every part,",
            "so using one loads them all. `evolve(value, **changes)` copies a value with",
            "some fields changed (`attrs.evolve`, typed for these classes).",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "import sys",
            "from typing import TYPE_CHECKING, Any, Final",
            "",
            "from protocol._wire import JSON_NULL, JsonNull, evolve, merge_tables",
            "",
            f"SCHEMA_VERSION: Final = {self.target.schema_version!r}",
            f"PROTOCOL_VERSION: Final = {self.target.version}",
            "",
            "if TYPE_CHECKING:",
        ]
        for index, part in enumerate(self.parts):
            out += [f"    from {self.package}.{part.module} import ("]
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
        for index, part in enumerate(self.parts):
            out += [f"    '{self.package}.{part.module}': ("]
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
        fixed = ["JSON_NULL", "JsonNull", "SCHEMA_VERSION", "PROTOCOL_VERSION", "evolve"]
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
            # Each class as `attrs.define(frozen=True, kw_only=True)` would make it, made
            # here: decorating ~200 classes compiled four methods each at import, most of
            # what loading a part cost. `WireStruct` has the rest (repr, eq, hash, frozen).
            out += ["", "", f"class {s.name}(WireStruct):"]
            out += docstring(s.description, "    ", s.unstable)
            if not s.fields:
                out.append("")
                out.append("    # An empty object: its presence is the message.")
            out.append("")
            slots = "".join(f"{f.name!r}, " for f in s.fields).rstrip(" ")
            out.append(f"    __slots__ = ({slots})" if s.fields else "    __slots__ = ()")
            for f in s.fields:
                out.append("")
                out += comment_block(f.description, "    ")
                if f.unstable:
                    out.append("    #: **UNSTABLE**: written only when unstable is enabled.")
                out.append(f"    {f.name}: {self._py_type(f)}")
            out += ["", *self._emit_init(s)]
            out += ["", "    __attrs_attrs__: ClassVar[WireAttributes] = wire_attributes("]
            for f in s.fields:
                default = "NOTHING" if f.default is None else f.default
                out.append(f"        ({f.name!r}, {self._py_type(f)!r}, {default}),")
            out.append("    )")
        return out

    def _emit_init(self, s: Struct) -> list[str]:
        """The keyword-only `__init__` attrs would compile for `s` (a factory default
        is made per instance: `None` stands for "not given")."""
        if not s.fields:
            return ["    def __init__(self) -> None:", "        pass"]
        out = ["    def __init__(", "        self,", "        *,"]
        body = ["        _set = object.__setattr__"]
        for f in s.fields:
            factory = _factory_of(f.default)
            if factory is not None:
                out.append(f"        {f.name}: {self._py_type(f)} | None = None,")
                made = f"({factory})() if {f.name} is None else {f.name}"
                body.append(f"        _set(self, {f.name!r}, {made})")
                continue
            default = "" if f.default is None else f" = {f.default}"
            out.append(f"        {f.name}: {self._py_type(f)}{default},")
            body.append(f"        _set(self, {f.name!r}, {f.name})")
        return [*out, "    ) -> None:", *body]

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
                    "rest",
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
            banner(self.target),
            *self._methods_docstring(),
            "",
        ]
        out += self._method_vocabulary() if self.target.version == 1 else self._later_method_spec()
        out += self._method_table()
        return "\n".join(out)

    def _methods_docstring(self) -> list[str]:
        if self.target.version == 1:
            return [
                '"""The ACP method table, generated from the schema\'s `x-method` and `x-side`.',
                "",
                "`REQUESTS` and `NOTIFICATIONS` map a wire method name to its `MethodSpec`: the",
                "params and result types, which side handles it, and whether it is stable.",
                "A name may be both (`mcp/message`), so the two tables are separate.",
                '"""',
            ]
        return [
            f'"""The ACP v{self.target.version} method table, generated from the schema\'s'
            " `x-method` and `x-side`.",
            "",
            "`REQUESTS` and `NOTIFICATIONS` map a wire method name to its `MethodSpec`: the",
            f"params and result types (in `{self.package}.types`), which side handles it, and",
            "whether it is stable. A name may be both (`mcp/message`), so the two tables are",
            "separate. `Side` and `MessageKind` are v1's (`protocol.methods`), so one engine",
            "can serve either version's table.",
            '"""',
        ]

    def _method_vocabulary(self) -> list[str]:
        """v1's header: `Side`, `MessageKind` and `MethodSpec`, which later versions share."""
        return [
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

    def _later_method_spec(self) -> list[str]:
        """A later version's header: v1's vocabulary, its `MethodSpec` reading its types."""
        return [
            "from __future__ import annotations",
            "",
            "from collections.abc import Mapping",
            "from types import MappingProxyType",
            "from typing import Any, Final",
            "",
            "import attrs",
            "",
            "from protocol import methods as _v1_methods",
            "from protocol.methods import MessageKind, Side",
            f"from {self.package} import types",
            "",
            "",
            "@attrs.frozen",
            "class MethodSpec(_v1_methods.MethodSpec):",
            f'    """One method of v{self.target.version}: v1\'s `MethodSpec`, its types looked up'
            f' in `{self.package}.types`."""',
            "",
            "    @property",
            "    def params_type(self) -> Any:",
            '        """The type params structure into (a class or a union alias)."""',
            "        return getattr(types, self.params)",
            "",
            "    @property",
            "    def result_type(self) -> Any:",
            '        """The type of the result; None for notifications."""',
            "        return None if self.result is None else getattr(types, self.result)",
            "",
        ]

    def _method_table(self) -> list[str]:
        out: list[str] = []
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
        return out


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------


def generate() -> dict[str, str]:
    """Return `{path under protocol/: source}` for every generated module of every version."""
    files: dict[str, str] = {}
    for target in TARGETS:
        folder = target.output_dir.relative_to(OUTPUT_DIR)
        for name, text in generate_target(target).items():
            files[(folder / name).as_posix()] = text
    return files


def generate_target(target: Target) -> dict[str, str]:
    """Return `{file name: source}` for `target`'s modules."""
    stable, unstable = load(target)
    validate(stable, unstable)
    model = Builder(stable, unstable, customizations(target.version)).build()
    emitter = Emitter(model, target)
    files = {"types.py": emitter.types_module(), "methods.py": emitter.methods_module()}
    files |= {f"{part.module}.py": emitter.part_module(i) for i, part in enumerate(target.parts)}
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
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for stale in _stale_parts(files, directory):
        stale.unlink()


def _stale_parts(files: Mapping[str, str], directory: Path) -> list[Path]:
    """Part modules under `directory` that the generation no longer writes."""
    found: list[Path] = []
    for target in TARGETS:
        folder = directory / target.output_dir.relative_to(OUTPUT_DIR)
        for path in folder.glob("_types_*.py"):
            if path.relative_to(directory).as_posix() not in files:
                found.append(path)
    return sorted(found)


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
