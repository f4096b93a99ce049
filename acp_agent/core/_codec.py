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
"""

from __future__ import annotations

import json
import json.encoder
import json.scanner
from collections.abc import Callable
from typing import Any, Final, TypeAlias, get_args, get_origin

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

__all__ = ("EventRow", "decode_event", "encode_event", "encode_part", "encode_payload")


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


_dumps: Final = _compact_json_encoder()

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
    part: ContentPart = _structure_hook(cls)(data, cls)
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
    stored: tuple[Any, ...] = row  # its values go into the event as they are (see below)
    branch_id, seq, batch_id, kind, payload_json, producer, recorded_at, version = stored
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
            payload = _structure_hook(cls)(data, cls)
        except Exception as exc:
            if version > EVENT_FORMAT_VERSION:
                # A newer writer changed this kind's shape: keep the fact, unread.
                payload = UnknownPayload(kind, data)
            else:
                raise StoreCorrupt(
                    f"branch {branch_id} seq {seq}: {kind} payload does not fit {cls.__name__}"
                ) from exc
    # The row's values as they are (the ids' NewTypes are the same at run time): this
    # runs for every event a load reads.
    return Event(branch_id, seq, batch_id, payload, producer, recorded_at, version)
