"""What a client names, checked before anything is stored: paths, session ids, fork meta.

Each check answers -32602 naming the field, so a session that no one could
open (a NUL in its `cwd`, a lone surrogate) is never created.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from protocol.errors import InvalidParams

__all__ = ("FORK_META_KEY", "THROUGH_PROMPT_FIELD", "absolute_path", "stored_id", "through_prompt")

#: `session/fork` `_meta[FORK_META_KEY]["throughPrompt"]`: keep the first n prompts.
FORK_META_KEY: Final = "acp-agent"
#: How errors name that field.
THROUGH_PROMPT_FIELD: Final = f"_meta.{FORK_META_KEY}.throughPrompt"
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


def through_prompt(meta: Mapping[str, Any] | None) -> int | None:
    """`_meta["acp-agent"]["throughPrompt"]` of a fork: a whole number >= 1, or None."""
    ours = (meta or {}).get(FORK_META_KEY)
    if ours is None:
        return None
    through = ours.get("throughPrompt") if isinstance(ours, Mapping) else None
    if isinstance(through, bool) or not isinstance(through, int) or through < 1:
        raise InvalidParams(f"Invalid params: {THROUGH_PROMPT_FIELD}: must be a whole number >= 1")
    return through
