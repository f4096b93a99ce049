"""The one Unicode policy: a lone surrogate in outside text becomes U+FFFD where it enters.

JSON allows an escape such as `\\ud800` on its own, which decodes to a Python
string no UTF-8 can hold: the store, the log file and the editor's JSON parser
would all fail on it, and the turn with them. So at each edge where outside
text enters (the editor's messages and files, the model's stream, tool and MCP
output) every lone surrogate is replaced with U+FFFD, and what is kept, shown
and replayed is that replaced text. A valid pair (two surrogates in a row that
make one character) is joined into that character, never replaced.

Names are not text: a path or an id holding a lone surrogate is refused where
it enters (the client-input checks), because replacing would name another file.
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ("REPLACEMENT", "has_lone_surrogates", "replace_in_json", "replace_lone_surrogates")

#: What a lone surrogate becomes.
REPLACEMENT: Final = "\ufffd"
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def has_lone_surrogates(text: str) -> bool:
    """Whether `text` holds a surrogate code point (a lone one, or a pair not yet joined)."""
    return _SURROGATE.search(text) is not None


def replace_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (pairs joined); itself if none."""
    if _SURROGATE.search(text) is None:
        return text
    # UTF-16 holds any surrogate ("surrogatepass"); decoding it back joins the pairs and
    # replaces each lone one with exactly one U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def replace_in_json(value: Any) -> Any:
    """A JSON value with `replace_lone_surrogates` applied to every string in it, keys
    included; the same object when nothing needed replacing."""
    if isinstance(value, str):
        return replace_lone_surrogates(value)
    if isinstance(value, list):
        items = [replace_in_json(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = [(replace_in_json(key), replace_in_json(item)) for key, item in value.items()]
        changed = any(
            k is not key or v is not item
            for (k, v), (key, item) in zip(pairs, value.items(), strict=True)
        )
        return dict(pairs) if changed else value
    return value
