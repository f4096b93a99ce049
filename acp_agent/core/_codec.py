"""Events to stored rows and back, with cattrs; the same for every store.

A row keeps the payload as compact JSON, in snake_case. Content parts
(`acp_agent.content`) are objects tagged with their kind under `"type"`
(`{"type": "diff", "path": ..., "old_text": ..., "new_text": ...}`); their
optional fields are left out when unset, except a terminal's `local_cwd`,
which format 1 always wrote (a stored part reads the same to the model).
A known kind stored at an older format is read through `core._upgrades` (and
is the current format once read). Decoding a kind this version does not know
yields `UnknownPayload` (kept, passed through); so does a known kind whose
newer format this version cannot read. Anything else unreadable is
`StoreCorrupt`.

A load decodes every event of a session, so reading is the hot path: each payload
and content part is read by a function made for its class (`_payload_reader`, at
the end), which gives what cattrs' hook gives in about two thirds of the time; a branch's
rows are read without their branch column and share its id (`decode_branch_rows`).
"""

from __future__ import annotations

import enum
import functools
import json
import json.encoder
import json.scanner
import sys
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, TypeAlias, get_args, get_origin

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

from acp_agent.content import (
    Annotations,
    ContentPart,
    DiffContent,
    ImageContent,
    PlanContent,
    ResourceContent,
    ResourceLinkContent,
    TerminalContent,
    TextContent,
)
from acp_agent.core._events import (
    EVENT_FORMAT_VERSION,
    PAYLOAD_TYPES,
    Event,
    Payload,
    UnknownPayload,
)
from acp_agent.core._store import StoreCorrupt
from acp_agent.core._upgrades import upgrade_payload

__all__ = (
    "EventRow",
    "compact_json",
    "decode_branch_rows",
    "decode_event",
    "encode_event",
    "encode_part",
    "encode_payload",
    "prepare_readers",
)


#: An event as stored: the events table's columns, in order: branch id, seq, batch id,
#: kind, payload (JSON), producer, recorded at, format version. A plain tuple, not a
#: NamedTuple: sqlite3 binds plain tuples about a third faster, and this is the hot path.
EventRow: TypeAlias = tuple[str, int, int, str, str, str, float, int]


_converter: Final = cattrs.Converter()


def _json_loader() -> Callable[[Any], Any]:
    """`json.loads`, a third faster for the payloads we stored (compact JSON, nothing
    around the value): CPython's C scanner straight, without `loads`' wrapper; any other
    input (bytes, whitespace, anything after the value, not JSON) goes to `json.loads`,
    which reads or refuses it as ever."""
    make_scanner = getattr(json.scanner, "c_make_scanner", None)
    if make_scanner is None:  # not CPython: the plain loader
        return json.loads
    scan = make_scanner(json.JSONDecoder())

    def loads(text: Any) -> Any:
        if type(text) is str:
            try:
                value, end = scan(text, 0)
            except StopIteration:
                return json.loads(text)
            if end == len(text):
                return value
        return json.loads(text)

    return loads


_loads: Final = _json_loader()
_intern: Final = sys.intern


def _not_json(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _compact_json_encoder() -> Callable[[Any], str]:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`, three times faster.

    `json.dumps` builds CPython's C encoder on every call; this builds it once (without
    the cycle check: a payload is JSON data, a cyclic one fails with RecursionError).
    """
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None:  # not CPython: the plain encoder
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    encode = make_encoder(
        None, _not_json, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    return lambda value: "".join(encode(value, 0))


#: JSON without spaces, non-ASCII as it is: how a payload is stored, and how the context
#: shows a call's arguments to the model (a long history's fold writes thousands).
compact_json: Final = _compact_json_encoder()
_dumps: Final = compact_json

# cattrs builds a hook per class on first use (not at import: start-up time matters),
# then every event of that class reuses it: this is the append hot path.
_UNSTRUCTURE: Final[dict[type[Any], Callable[[Any], Any]]] = {}
_STRUCTURE: Final[dict[type[Any], Callable[[Any, Any], Any]]] = {}


def _unstructure_hook(cls: type[Any]) -> Callable[[Any], Any]:
    hook = _UNSTRUCTURE.get(cls)
    if hook is None:
        hook = _UNSTRUCTURE[cls] = _converter.get_unstructure_hook(cls)
    return hook


def _structure_hook(cls: type[Any]) -> Callable[[Any, Any], Any]:
    hook = _STRUCTURE.get(cls)
    if hook is None:
        hook = _STRUCTURE[cls] = _converter.get_structure_hook(cls)
    return hook


_READERS: Final[dict[type[Any], Callable[[Any], Any]]] = {}


def _reader(cls: type[Any]) -> Callable[[Any], Any]:
    """How a payload of `cls` is read from its JSON data (`_payload_reader`: as by
    its cattrs hook, faster); made on first use."""
    reader = _READERS.get(cls)
    if reader is None:
        # Its cattrs hook reads it while the reader is made (a class holding itself).
        _READERS[cls] = lambda data: _structure_hook(cls)(data, cls)
        reader = _READERS[cls] = _payload_reader(cls, _structure_hook, _field_hook)
    return reader


def prepare_readers() -> Iterator[type[Any]]:
    """Make the reader of every payload and content-part kind, yielding each kind once
    its reader is made (about 0.4 ms a kind): a warm-up step, so a load does not make
    them as it meets each kind, that can give way between kinds."""
    for cls in (*PAYLOAD_TYPES.values(), *_PART_CLASSES.values()):
        _reader(cls)
        yield cls


def _field_hook(tp: Any) -> Callable[[Any, Any], Any]:
    """How a reader reads a field that is not plain: an attrs class (a `Usage`) by its
    own reader, anything else by its cattrs hook."""
    if isinstance(tp, type) and attrs.has(tp):
        read = _reader(tp)
        return lambda data, _: read(data)
    return _structure_hook(tp)


#: Every kind of content part, by the tag it is stored with.
_PART_CLASSES: Final[dict[str, type[ContentPart]]] = {
    cls.KIND: cls
    for cls in (
        TextContent,
        ImageContent,
        ResourceContent,
        ResourceLinkContent,
        DiffContent,
        TerminalContent,
        PlanContent,
    )
}
#: Optional fields format 1 wrote even when unset, by part class.
_ALWAYS_WRITTEN: Final[dict[type[Any], tuple[str, ...]]] = {TerminalContent: ("local_cwd",)}
_PART_UNSTRUCTURE: Final[dict[type[Any], Callable[[Any], dict[str, Any]]]] = {}


def _sparse_hook(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    """The unstructure hook of a part (or its annotations) that leaves unset fields out."""
    hook = _PART_UNSTRUCTURE.get(cls)
    if hook is None:
        kept: dict[str, Any] = {
            name: override(omit_if_default=False) for name in _ALWAYS_WRITTEN.get(cls, ())
        }
        hook = _PART_UNSTRUCTURE[cls] = make_dict_unstructure_fn(
            cls, _converter, _cattrs_omit_if_default=True, **kept
        )
    return hook


def encode_part(part: ContentPart) -> dict[str, Any]:
    """A content part as events store it: JSON data, its kind under `"type"`."""
    return {"type": part.KIND, **_sparse_hook(type(part))(part)}


def _decode_part(data: Any, _: object) -> ContentPart:
    cls = _PART_CLASSES[data["type"]]  # an unknown kind: the event cannot be read
    part: ContentPart = _reader(cls)(data)
    return part


def _encode_sent_part(part: ContentPart | None) -> dict[str, Any] | None:
    return None if part is None else encode_part(part)


def _decode_sent_part(data: Any, _: object) -> ContentPart | None:
    return None if data is None else _decode_part(data, None)


_converter.register_unstructure_hook(ContentPart, encode_part)
_converter.register_structure_hook(ContentPart, _decode_part)
_converter.register_unstructure_hook(ContentPart | None, _encode_sent_part)
_converter.register_structure_hook(ContentPart | None, _decode_sent_part)
_converter.register_unstructure_hook(Annotations, lambda value: _sparse_hook(Annotations)(value))


def _is_homogeneous_tuple(cls: Any) -> bool:
    args = get_args(cls)
    return get_origin(cls) is tuple and len(args) == 2 and args[1] is Ellipsis


def _tuple_hook(cls: Any) -> Callable[[Any, Any], tuple[Any, ...]]:
    """The structure hook of `tuple[X, ...]` (content parts, places): each item by X's own
    hook, without cattrs's general tuple handling (a twentieth of the time decoding a
    long session's events takes)."""
    item_type = get_args(cls)[0]

    def structure(data: Any, _: object) -> tuple[Any, ...]:
        item = _structure_hook(item_type)
        return tuple([item(value, item_type) for value in data])

    return structure


_converter.register_structure_hook_factory(_is_homogeneous_tuple, _tuple_hook)


def encode_payload(payload: Payload) -> str:
    """The payload as compact JSON (an unknown payload's data verbatim)."""
    if isinstance(payload, UnknownPayload):
        return _dumps(payload.data)
    return _dumps(_unstructure_hook(type(payload))(payload))


def encode_event(event: Event) -> EventRow:
    """The row that stores `event`; raises TypeError for a payload JSON cannot hold."""
    return (
        event.branch_id,
        event.seq,
        event.batch_id,
        event.payload.kind,
        encode_payload(event.payload),
        event.producer,
        event.recorded_at,
        event.format_version,
    )


def decode_event(row: EventRow | tuple[Any, ...]) -> Event:
    """The event a stored row holds; `StoreCorrupt` if it cannot be read back."""
    return _decode(*row)


def decode_branch_rows(branch_id: str, rows: Iterable[tuple[Any, ...]]) -> list[Event]:
    """The events of one branch's rows read without their first column (`EventRow` less
    the branch id): a load reads thousands, and they share the one id instead of a copy
    of it each."""
    return [_decode(branch_id, *row) for row in rows]


def _decode(
    branch_id: Any,
    seq: Any,
    batch_id: Any,
    kind: Any,
    payload_json: Any,
    producer: Any,
    recorded_at: Any,
    version: Any,
) -> Event:
    try:
        data = _loads(payload_json)
    except (TypeError, ValueError) as exc:
        raise StoreCorrupt(f"branch {branch_id} seq {seq}: payload is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise StoreCorrupt(f"branch {branch_id} seq {seq}: payload is not a JSON object")
    cls = PAYLOAD_TYPES.get(kind)
    payload: Payload
    if cls is None:
        payload = UnknownPayload(kind, data)
    else:
        try:
            if version < EVENT_FORMAT_VERSION:
                # Read as this version's shape, and written back so if copied.
                data, version = upgrade_payload(kind, version, data), EVENT_FORMAT_VERSION
            payload = _reader(cls)(data)
        except Exception as exc:
            if version > EVENT_FORMAT_VERSION:
                # A newer writer changed this kind's shape: keep the fact, unread.
                payload = UnknownPayload(kind, data)
            else:
                raise StoreCorrupt(
                    f"branch {branch_id} seq {seq}: {kind} payload does not fit {cls.__name__}"
                ) from exc
    # The row's values as they are (the ids' NewTypes are the same at run time): this
    # runs for every event a load reads. A handful of components produce them all, so
    # the events share one string of each name, not a copy per row.
    if type(producer) is str:
        producer = _intern(producer)
    return Event(branch_id, seq, batch_id, payload, producer, recorded_at, version)


# --- reading payloads --------------------------------------------------------------------
# Payloads read from their stored JSON faster than by cattrs' hooks, with the same result.
#
# A long session's load decodes every event it holds, most of them small facts of a
# few strings and numbers (text deltas, a call's steps, a request's end). cattrs'
# hook for such a class calls one hook per field, gathers the values in a dict and
# calls the class with it as keywords. The reader made here takes each field from
# the JSON object, checks a plain one's type inline and calls the class positionally:
# the class's own converters and validators run as they would. A field is plain when
# it is a `str`, `int`, `float` or `bool` (or a `NewType` of one), a string enum, a
# `list[str]`, a `dict` or `list` of any JSON, `Any`, or one of these or None; a field
# of an attrs class (a `Usage`) is read by that class's reader, any other field by its
# own cattrs hook.
#
# The reader hands the whole object to the class's cattrs hook whenever a value is
# absent without a default, of another type, not one of its enum's values, or refused
# by its field's hook, so what it returns, or raises, is always what cattrs would:
# cattrs coerces (`str(5)`), the reader only takes what needs no coercion.

_Hook = Callable[[Any, Any], Any]

#: Types a JSON value already is, checked by `type(value) is T` (a bool is no int here).
_READ_PRIMITIVES: Final = (str, int, float, bool)
#: Containers of JSON taken as they are (cattrs copies them; these are fresh from JSON).
_READ_CONTAINERS: Final = (dict, list)
#: What a reader gets for a key the object does not have.
_MISSING: Final = object()


class _Unreadable(Exception):
    """A field no reader can fill as attrs would (not in `__init__`, renamed, or a
    factory of the instance): the class is left to cattrs."""


def _payload_reader(
    cls: type[Any], hook_of: Callable[[Any], _Hook], field_hook: Callable[[Any], _Hook]
) -> Callable[[Any], Any]:
    """A reader of attrs class `cls` from a JSON object. `hook_of(cls)` is the class's
    cattrs hook, what an object the reader does not take falls back to: asked for only
    then (cattrs compiles each hook; a load that never falls back never pays for it).
    `field_hook(tp)` reads a field of a type that is not plain."""

    def fallback(data: Any, _: object) -> Any:
        return hook_of(cls)(data, cls)

    try:
        return _ReaderSource(cls, fallback, field_hook).build()
    except Exception:  # a field no reader fills as attrs would, or types not resolved
        return functools.partial(fallback, _=None)


def _any_json(origin: Any, args: tuple[Any, ...]) -> bool:
    """Whether a parameterised type is a container of any JSON (`dict[str, Any]`,
    `list[Any]`): JSON's own objects and arrays are, their keys always strings."""
    return (origin is dict and args == (str, Any)) or (origin is list and args == (Any,))


def _unwrap(tp: Any) -> Any:
    """`tp` without `NewType` layers (a `TurnId` is stored as its `str`)."""
    while hasattr(tp, "__supertype__"):
        tp = tp.__supertype__
    return tp


class _ReaderSource:
    """The source of one class's reader, with the values it names."""

    FAIL: Final = "return _fallback(o, _cls)"

    def __init__(self, cls: type[Any], fallback: _Hook, field_hook: Callable[[Any], _Hook]) -> None:
        self.cls = cls
        self.field_hook = field_hook
        self.names: dict[str, Any] = {"_cls": cls, "_fallback": fallback, "_M": _MISSING}

    def build(self) -> Callable[[Any], Any]:
        hints = typing.get_type_hints(self.cls)
        lines: list[str] = []
        values: list[str] = []
        for index, field in enumerate(attrs.fields(self.cls)):
            if not field.init or field.alias != field.name:
                raise _Unreadable(field.name)
            var = f"v{index}"
            values.append(var)
            lines.append(f"{var} = o.get({field.name!r}, _M)")
            lines.append(f"if {var} is _M:")
            lines.append(f"    {self.default(field, var)}")
            check = self.check(hints[field.name], var)
            if check:
                lines.append("else:")
                lines.extend(f"    {line}" for line in check)
        lines.append(f"return _cls({', '.join(values)})")
        source = "def read(o):\n" + "".join(f"    {line}\n" for line in lines)
        namespace = dict(self.names)
        exec(compile(source, f"<payload reader {self.cls.__qualname__}>", "exec"), namespace)
        reader: Callable[[Any], Any] = namespace["read"]
        return reader

    def default(self, field: attrs.Attribute[Any], var: str) -> str:
        """The line for a field the object leaves out: its default, or the fallback."""
        default: Any = field.default
        if default is attrs.NOTHING:
            return self.FAIL
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            if default.takes_self:
                raise _Unreadable(field.name)
            return f"{var} = {self.name(default.factory)}()"
        return f"{var} = {self.name(default)}"

    def check(self, tp: Any, var: str) -> list[str]:
        """Lines that take `var` as a `tp` (made a member, or read in place by its own
        reader or hook), or fall back."""
        tp = _unwrap(tp)
        args, origin = typing.get_args(tp), typing.get_origin(tp)
        if tp is Any:
            return []
        if origin in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
            inner = self.check(args[0] if args[1] is type(None) else args[1], var)
            return [f"if {var} is not None:", *(f"    {line}" for line in inner)] if inner else []
        if tp in _READ_PRIMITIVES or tp in _READ_CONTAINERS or _any_json(origin, args):
            return [f"if type({var}) is not {(origin or tp).__name__}:", f"    {self.FAIL}"]
        if origin is list and args and _unwrap(args[0]) is str:
            return [
                f"if type({var}) is not list or not all([type(x) is str for x in {var}]):",
                f"    {self.FAIL}",
            ]
        if (
            isinstance(tp, type)
            and issubclass(tp, enum.Enum)
            and all(isinstance(member.value, str) for member in tp)
        ):
            members = self.name({member.value: member for member in tp})
            return [
                f"{var} = {members}.get({var}) if type({var}) is str else None",
                f"if {var} is None:",
                f"    {self.FAIL}",
            ]
        hook, of = self.name(self.field_hook(tp)), self.name(tp)
        return [
            "try:",
            f"    {var} = {hook}({var}, {of})",
            "except Exception:",
            f"    {self.FAIL}",
        ]

    def name(self, value: Any) -> str:
        """A name the source can use for `value`."""
        name = f"_k{len(self.names)}"
        self.names[name] = value
        return name
