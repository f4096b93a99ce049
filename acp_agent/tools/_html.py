"""HTML reduced to readable text (stdlib `html.parser`): blocks as lines, links kept.

Scripts, styles and other invisible parts are dropped; headings become `#`
lines, list items `- ` lines, links `[text](absolute url)`, `<pre>` keeps its
whitespace; elsewhere runs of whitespace collapse to one space.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Final
from urllib.parse import urljoin

__all__ = ("html_to_text",)

_SKIPPED: Final = frozenset(
    {"script", "style", "noscript", "template", "svg", "canvas", "iframe", "object"}
)
_BLOCKS: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "dd", "details", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "html",
        "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody",
        "tfoot", "thead", "ul", "h1", "h2", "h3", "h4", "h5", "h6", "title",
    }
)  # fmt: skip
_VOID: Final = frozenset({"br", "img", "input", "meta", "link", "hr", "wbr", "source", "area"})
_SPACES: Final = re.compile(r"[ \t\r\n\f\v]+")


class _Reducer(HTMLParser):
    def __init__(self, base_url: str):
        super().__init__(convert_charrefs=True)
        self._base = base_url
        self._out: list[str] = []
        self._skipping = 0
        self._pre = 0
        self._title_seen = False
        self._links: list[tuple[str | None, int]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and not self._title_seen and not self._skipping:
            self._title_seen = True
            self._out.append("\n\n# ")
            return
        if tag in _SKIPPED:
            if tag not in _VOID:
                self._skipping += 1
            return
        if self._skipping:
            return
        if tag == "br":
            self._out.append("\n")
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._out.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "li":
            self._out.append("\n- ")
        elif tag in ("td", "th"):
            self._out.append(" | ")
        elif tag == "tr":
            self._out.append("\n")
        elif tag in _BLOCKS:
            self._out.append("\n\n")
        if tag == "pre":
            self._pre += 1
            self._out.append("```\n")
        if tag == "a":
            href = dict(attrs).get("href")
            self._links.append((href, len(self._out)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title_seen and self._skipping == 0:
            self._out.append("\n\n")
            return
        if tag in _SKIPPED:
            if tag not in _VOID and self._skipping:
                self._skipping -= 1
            return
        if self._skipping:
            return
        if tag == "pre" and self._pre:
            self._pre -= 1
            self._out.append("\n```")
        if tag == "a" and self._links:
            href, start = self._links.pop()
            label = "".join(self._out[start:]).strip()
            if href and label and not href.startswith(("javascript:", "#")):
                del self._out[start:]
                self._out.append(f"[{_SPACES.sub(' ', label)}]({urljoin(self._base, href)})")
        elif tag in _BLOCKS:
            self._out.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        self._out.append(data if self._pre else _SPACES.sub(" ", data))

    def text(self) -> str:
        raw = "".join(self._out)
        lines = [line.rstrip() for line in raw.split("\n")]
        lines = [line[1:] if line.startswith(" ") and line[1:2] != " " else line for line in lines]
        joined = "\n".join(lines)
        return re.sub(r"\n{3,}", "\n\n", joined).strip()


def html_to_text(html: str, base_url: str = "") -> str:
    """The readable text of `html`; relative links are resolved against `base_url`."""
    reducer = _Reducer(base_url)
    reducer.feed(html)
    reducer.close()
    return reducer.text()
