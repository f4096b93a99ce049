"""Stored payloads of an older event format, read as this version's: the stored sessions'
migration, done as each event is read (the rows stay as they were written).

Format 1 stored the person's input (`user_input.adopted`) as ACP content
blocks in ACP's JSON (camelCase; an embedded resource nested under
`resource`); a block the agent changed (a link read into the file, a template
expanded) kept what the person sent in its `_meta["acp-agent"]["sent"]`.
Format 2 stores content parts in the events' snake_case (`core._codec`), and
what was sent in `sent`, by position. Every other kind reads the same in both.

A block format 1 could not show either (not an object, of a kind no prompt
holds) is left out, as its replay and the model left it out then.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ("upgrade_payload",)

logger = logging.getLogger(__name__)

#: Our key in a format 1 block's `_meta`.
_META_KEY: Final = "acp-agent"
#: Format 1's names of a block's fields, as format 2 names them, by block kind.
_FIELDS: Final[Mapping[str, Mapping[str, str]]] = {
    "text": {"text": "text"},
    "image": {"data": "data", "mimeType": "mime_type", "uri": "uri"},
    "resource_link": {
        "uri": "uri",
        "name": "name",
        "title": "title",
        "description": "description",
        "mimeType": "mime_type",
        "size": "size",
    },
}
_RESOURCE_FIELDS: Final[Mapping[str, str]] = {
    "uri": "uri",
    "text": "text",
    "blob": "blob",
    "mimeType": "mime_type",
    "_meta": "resource_meta",
}
_ANNOTATION_FIELDS: Final[Mapping[str, str]] = {
    "audience": "audience",
    "priority": "priority",
    "lastModified": "last_modified",
    "_meta": "meta",
}


def upgrade_payload(kind: str, version: int, data: dict[str, Any]) -> dict[str, Any]:
    """A payload of `kind` stored at format `version` in this version's shape."""
    if version < 2:
        upgrade_1 = _FROM_1.get(kind)
        if upgrade_1 is not None:
            return upgrade_1(data)
    return data


def _input_from_1(data: dict[str, Any]) -> dict[str, Any]:
    """A format 1 `user_input.adopted`: content blocks to parts, what was sent to `sent`."""
    content: list[dict[str, Any]] = []
    sent: list[dict[str, Any] | None] = []
    for block in data.get("content") or ():
        part = _part(block)
        if part is None:
            logger.warning("a stored prompt block of format 1 cannot be read; left out")
            continue
        original = _sent(block)
        if original is not None:
            part.pop("meta", None)  # our own key's holder: never shown, never read
        content.append(part)
        sent.append(original)
    return {**data, "content": content, "sent": sent if any(sent) else []}


def _part(block: object) -> dict[str, Any] | None:
    """A format 1 content block as a format 2 part (without what was sent); None if
    format 1 could not have shown it."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    part: dict[str, Any] = {"type": kind}
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict):
            return None
        part.update(_renamed(resource, _RESOURCE_FIELDS))
    elif isinstance(kind, str) and kind in _FIELDS:
        part.update(_renamed(block, _FIELDS[kind]))
    else:
        return None
    annotations = block.get("annotations")
    if isinstance(annotations, dict):
        part["annotations"] = _renamed(annotations, _ANNOTATION_FIELDS)
    if block.get("_meta") is not None:
        part["meta"] = block["_meta"]
    return part


def _sent(block: dict[str, Any]) -> dict[str, Any] | None:
    """What the person sent for a format 1 block the agent changed, as a part."""
    meta = block.get("_meta")
    ours = meta.get(_META_KEY) if isinstance(meta, dict) else None
    sent = ours.get("sent") if isinstance(ours, dict) else None
    return _part(sent) if isinstance(sent, dict) else None


def _renamed(fields: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    return {names[key]: value for key, value in fields.items() if key in names}


#: How a format 1 payload of each changed kind reads as format 2.
_FROM_1: Final[Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "user_input.adopted": _input_from_1,
}
