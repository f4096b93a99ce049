"""The tagged blocks the model reads, `<state source="...">value</state>`, and their names.

A tag is written by the runtime only, and only with a name listed in
`RUNTIME_TAGS` (`tag()` refuses any other), so the list is exactly what
content must never be able to imitate. Two kinds of content meet the model:

- inside a runtime tag (a value, a rule's text, a notification, an
  attachment), content is escaped: `<` becomes `&lt;`, `&` becomes `&amp;`,
  `>` becomes `&gt;`, and in attributes `"` becomes `&quot;`;
- in a tool result (file contents, search hits, command output, an error
  echoing a path), content stays byte-exact, because the model copies it
  back into edits (`a < b`, HTML and JSX must survive), except that the `<`
  opening a runtime tag name is written `&lt;` (`neutralize_runtime_tags`),
  so `</state>` in a file cannot close or forge the runtime's blocks.
  `restore_runtime_tags` undoes exactly that, for the edit tool to match text
  the model copied from a result.

The guide explains both. Attributes are written in the order given, so the
same block is always the same bytes (the provider's prompt cache depends on it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = (
    "RUNTIME_TAGS",
    "escape_attribute",
    "escape_text",
    "neutralize_runtime_tags",
    "restore_runtime_tags",
    "tag",
    "wrap",
)

#: Every tag name the runtime writes; nothing else may be written with `tag()` or `wrap()`.
RUNTIME_TAGS: Final = frozenset(
    {
        "attachment",
        "branch-message",
        "compaction-request",
        "notification",
        "restatement",
        "rule",
        "state",
        "summary",
    }
)

# `<name` or `</name` followed by what can end a tag name (or the end of the text), in any
# letter case: a model would not tell `<STATE` from `<state`. Longest names first, so
# `<state` never matches inside a longer name it prefixes.
_NAMES: Final = "|".join(sorted(map(re.escape, RUNTIME_TAGS), key=len, reverse=True))
_OPENING: Final = re.compile(rf"<(/?)({_NAMES})(?=[\s/>]|$)", re.IGNORECASE)
_NEUTRALIZED: Final = re.compile(rf"&lt;(/?)({_NAMES})(?=[\s/>]|$)", re.IGNORECASE)


def escape_text(text: str) -> str:
    """`text` safe inside a tag's body."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_attribute(value: str) -> str:
    """`value` safe inside a double-quoted attribute."""
    return escape_text(value).replace('"', "&quot;")


def neutralize_runtime_tags(text: str) -> str:
    """`text` with the `<` of every runtime tag name written `&lt;`; all else byte-exact."""
    if "<" not in text:
        return text
    return _OPENING.sub(r"&lt;\1\2", text)


def restore_runtime_tags(text: str) -> str:
    """Undo `neutralize_runtime_tags`: `&lt;state` back to `<state` (for copied text)."""
    if "&lt;" not in text:
        return text
    return _NEUTRALIZED.sub(r"<\1\2", text)


def _checked(name: str) -> str:
    if name not in RUNTIME_TAGS:
        raise ValueError(f"<{name}> is not a runtime tag; add it to RUNTIME_TAGS first")
    return name


def tag(name: str, attributes: Iterable[tuple[str, str]] = (), body: str | None = None) -> str:
    """One block: `<name a="1">body</name>`; no body gives `<name a="1"/>`.

    A body that spans lines starts and ends on a line of its own, so a
    Markdown file inside stays readable. `body` is escaped here.
    """
    name = _checked(name)
    attrs = "".join(f' {key}="{escape_attribute(value)}"' for key, value in attributes)
    if body is None:
        return f"<{name}{attrs}/>"
    escaped = escape_text(body)
    if "\n" in escaped:
        return f"<{name}{attrs}>\n{escaped.strip(chr(10))}\n</{name}>"
    return f"<{name}{attrs}>{escaped}</{name}>"


def wrap(name: str, attributes: Iterable[tuple[str, str]], blocks: Iterable[str]) -> str:
    """`<name ...>` around blocks that are already escaped (tags written by `tag`)."""
    name = _checked(name)
    attrs = "".join(f' {key}="{escape_attribute(value)}"' for key, value in attributes)
    inner = "\n".join(blocks)
    return f"<{name}{attrs}>\n{inner}\n</{name}>"
