"""Writing the tagged blocks the model reads: `<state source="...">value</state>`.

A tag is written by the runtime only. What goes inside (a value, a rule's
text, a notification) is escaped, so content can never close its tag or
forge another one: `<` becomes `&lt;`, `&` becomes `&amp;`, `>` becomes
`&gt;`, and in attributes `"` becomes `&quot;`. The guide tells the model so.

Attributes are written in the order given, so the same block is always the
same bytes (the provider's prompt cache depends on it).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ("escape_attribute", "escape_text", "tag", "wrap")


def escape_text(text: str) -> str:
    """`text` safe inside a tag's body."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_attribute(value: str) -> str:
    """`value` safe inside a double-quoted attribute."""
    return escape_text(value).replace('"', "&quot;")


def tag(name: str, attributes: Iterable[tuple[str, str]] = (), body: str | None = None) -> str:
    """One block: `<name a="1">body</name>`; no body gives `<name a="1"/>`.

    A body that spans lines starts and ends on a line of its own, so a
    Markdown file inside stays readable. `body` is escaped here.
    """
    attrs = "".join(f' {key}="{escape_attribute(value)}"' for key, value in attributes)
    if body is None:
        return f"<{name}{attrs}/>"
    escaped = escape_text(body)
    if "\n" in escaped:
        return f"<{name}{attrs}>\n{escaped.strip(chr(10))}\n</{name}>"
    return f"<{name}{attrs}>{escaped}</{name}>"


def wrap(name: str, attributes: Iterable[tuple[str, str]], blocks: Iterable[str]) -> str:
    """`<name ...>` around blocks that are already escaped (tags written by `tag`)."""
    attrs = "".join(f' {key}="{escape_attribute(value)}"' for key, value in attributes)
    inner = "\n".join(blocks)
    return f"<{name}{attrs}>\n{inner}\n</{name}>"
