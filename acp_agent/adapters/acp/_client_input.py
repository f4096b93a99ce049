"""What a client names, checked before anything is stored: paths, session ids, fork anchors,
its own instructions.

Each check answers -32602 naming the field, so a session that no one could
open (a NUL in its `cwd`, a lone surrogate) is never created.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from acp_agent.values import Value
from protocol import types
from protocol.errors import InvalidParams

if TYPE_CHECKING:
    from acp_agent.agent import ClientInstructions

__all__ = (
    "FORK_META_KEY",
    "ForkAnchor",
    "absolute_path",
    "additional_directories",
    "client_instructions",
    "fork_anchor",
    "stored_id",
    "workspace_directory",
)

#: `session/fork` takes its anchor in `_meta[FORK_META_KEY]`.
FORK_META_KEY: Final = "acp-agent"
#: The anchors a fork may name there; one at most.
_ANCHORS: Final = ("throughPrompt", "throughMessage", "beforeMessage")
#: The longest session id a client may name (ours are 37 characters).
_MAX_ID_CHARS: Final = 256
#: The longest path a client may name (Linux's PATH_MAX).
_MAX_PATH_CHARS: Final = 4096


def stored_id(value: str) -> str:
    """A session id that may be looked up in the store; -32602 for one that cannot be
    stored at all (the store would fail on it, not answer "not found")."""
    if "\x00" in value or len(value) > _MAX_ID_CHARS:
        raise InvalidParams("Invalid params: sessionId: not a session id")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams("Invalid params: sessionId: not valid Unicode") from None
    return value


def absolute_path(path: str, field: str) -> str:
    """`path` normalised, if it is one the file system can take; -32602 before anything is
    stored if not (a NUL or a lone surrogate would make a session no one can open)."""
    if "\x00" in path:
        raise InvalidParams(f"Invalid params: {field}: must not contain a NUL character")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams(
            f"Invalid params: {field}: must be valid Unicode (it holds a lone surrogate)"
        ) from None
    if len(path) > _MAX_PATH_CHARS:
        raise InvalidParams(f"Invalid params: {field}: longer than {_MAX_PATH_CHARS} characters")
    if not os.path.isabs(path):
        raise InvalidParams(f"Invalid params: {field}: must be an absolute path")
    return os.path.normpath(path)


def workspace_directory(path: str, field: str = "cwd") -> str:
    """A new session's `cwd`, checked as `absolute_path` does, that is a directory here now:
    -32602 naming `field` for one that does not exist or is not a directory, before
    anything is stored (a session made there could run no turn, and would say it is
    read-only as one taken over from another machine)."""
    normal = absolute_path(path, field)
    try:
        found = os.stat(normal)
    except OSError as exc:
        raise _unusable(field, normal, exc) from None
    if not stat.S_ISDIR(found.st_mode):
        raise InvalidParams(f"Invalid params: {field}: {normal} is not a directory")
    return normal


def _unusable(field: str, path: str, exc: OSError) -> InvalidParams:
    """-32602 for a directory `field` names that cannot be looked at (`exc`)."""
    if isinstance(exc, FileNotFoundError):
        return InvalidParams(f"Invalid params: {field}: {path} does not exist")
    return InvalidParams(f"Invalid params: {field}: {path} cannot be used ({exc.strerror or exc})")


def additional_directories(
    paths: Sequence[str] | None, field: str = "additionalDirectories"
) -> tuple[str, ...] | None:
    """The directories of an `additionalDirectories` list, each checked as `cwd` is, then
    resolved (symlinks followed) and kept once, in order; None when the list was not sent.

    -32602 naming the entry (`additionalDirectories[1]`) for one that is not an absolute
    path, does not exist or is not a directory: a root the session could never use is
    refused before anything is stored, not found missing at the first tool call.
    """
    if paths is None:
        return None
    kept: list[str] = []
    for index, path in enumerate(paths):
        entry = f"{field}[{index}]"
        if not isinstance(path, str):
            raise InvalidParams(f"Invalid params: {entry}: must be an absolute path")
        normal = absolute_path(path, entry)
        try:
            resolved = os.path.realpath(normal, strict=True)
        except OSError as exc:
            raise _unusable(entry, normal, exc) from None
        if not os.path.isdir(resolved):
            raise InvalidParams(f"Invalid params: {entry}: {normal} is not a directory")
        if resolved not in kept:
            kept.append(resolved)
    return tuple(kept)


@attrs.frozen
class ForkAnchor(Value):
    """Where a fork cuts: after prompt n's turn, after the turn of a message, or just
    before a person's message. `field` names it in errors (`_meta.acp-agent.…`)."""

    field: str
    through_prompt: int | None = None
    message_id: str | None = None
    before: bool = False


def fork_anchor(meta: Mapping[str, Any] | None) -> ForkAnchor | None:
    """The anchor `_meta["acp-agent"]` of a fork names, or None for the whole history.

    `throughPrompt` is a whole number >= 1; `throughMessage` and `beforeMessage` are
    message ids (as chunks and prompt answers carry them).
    """
    ours = (meta or {}).get(FORK_META_KEY)
    if ours is None:
        return None
    named = [key for key in _ANCHORS if isinstance(ours, Mapping) and key in ours]
    if len(named) != 1:
        raise InvalidParams(
            f"Invalid params: _meta.{FORK_META_KEY}: must name one of " + ", ".join(_ANCHORS)
        )
    key = named[0]
    field = f"_meta.{FORK_META_KEY}.{key}"
    value = ours[key]
    if key == "throughPrompt":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidParams(f"Invalid params: {field}: must be a whole number >= 1")
        return ForkAnchor(field, through_prompt=value)
    if not isinstance(value, str) or not 0 < len(value) <= _MAX_ID_CHARS:
        raise InvalidParams(f"Invalid params: {field}: must be a message id")
    return ForkAnchor(field, message_id=value, before=key == "beforeMessage")


def client_instructions(
    system_prompt: types.SystemPrompt | None, meta: Mapping[str, Any] | None
) -> ClientInstructions | None:
    """The client's own instructions a session request sends, or None when it sends none.

    ACP's `systemPrompt` (`append` or `override`, text blocks, joined by a blank line);
    without it, the form claude-agent-acp's clients send in `_meta.systemPrompt` (acpx's
    `--system-prompt`, `--append-system-prompt`): a string overrides, `{"append": s}`
    appends. -32602 naming what cannot be applied (another mode, a block that is not
    text, no text at all), before anything is created or opened, as ACP requires.
    """
    # The runtime's face loads with the first session (this is called opening one).
    from acp_agent.agent import INSTRUCTION_MODES, ClientInstructions

    if system_prompt is None:
        return _meta_instructions(meta)
    mode = system_prompt.mode.value
    if mode not in INSTRUCTION_MODES:
        raise InvalidParams(
            f"Invalid params: systemPrompt.mode: {mode!r} is not supported "
            f"(it takes {', '.join(INSTRUCTION_MODES)})"
        )
    texts = []
    for index, block in enumerate(system_prompt.content):
        if not isinstance(block, types.TextContent):
            raise InvalidParams(
                f"Invalid params: systemPrompt.content[{index}]: only text blocks are supported"
            )
        texts.append(block.text)
    text = "\n\n".join(texts)
    if not text.strip():
        raise InvalidParams("Invalid params: systemPrompt.content: holds no text")
    return ClientInstructions(mode, text)


def _meta_instructions(meta: Mapping[str, Any] | None) -> ClientInstructions | None:
    from acp_agent.agent import ClientInstructions

    given = (meta or {}).get("systemPrompt")
    if given is None:
        return None
    if isinstance(given, str) and given.strip():
        return ClientInstructions("override", given)
    appended = given.get("append") if isinstance(given, Mapping) else None
    if isinstance(appended, str) and appended.strip():
        return ClientInstructions("append", appended)
    raise InvalidParams('Invalid params: _meta.systemPrompt: must be a text or {"append": text}')
