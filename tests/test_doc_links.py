"""Every relative link in the repository's Markdown points at a file and heading that exist.

The README links the reference in docs/, the pages link each other and the code; a page
renamed or a heading reworded must not leave a link going nowhere.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Inline links and images, `[text](target)` or `[text](target "title")`, and reference
# definitions, `[label]: target`.
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
FENCE = re.compile(r"^ {0,3}(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_files() -> list[Path]:
    """The repository's Markdown files, outside hidden folders (.venv, .git, caches)."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        found += [Path(folder, name) for name in files if name.endswith(".md")]
    return sorted(found)


def prose_lines(text: str) -> list[str]:
    """The lines of `text` outside fenced code blocks."""
    lines: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        opening = FENCE.match(line)
        if opening and (fence is None or opening.group(1) == fence):
            fence = opening.group(1) if fence is None else None
        elif fence is None:
            lines.append(line)
    return lines


def without_code_spans(line: str) -> str:
    return re.sub(r"(`+).*?\1", "", line)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text in lower case, no punctuation, - for spaces."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").replace("*", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The heading anchors of a Markdown file, repeated ones numbered as GitHub numbers them."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(path.read_text()):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    """The link targets in `path`'s prose that name no scheme (no http:, mailto: ...)."""
    targets: list[str] = []
    for line in prose_lines(path.read_text()):
        line = without_code_spans(line)
        targets += INLINE_LINK.findall(line)
        targets += REFERENCE_DEFINITION.findall(line)
    return [t for t in targets if not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", t)]


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Each relative link of `path` going outside `root`, or to a file or heading not there."""
    broken: list[str] = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not linked.is_relative_to(root):
            broken.append(f"{target}: outside the repository")
        elif not linked.exists():
            broken.append(f"{target}: no such file or folder")
        elif anchor and linked.suffix == ".md" and unquote(anchor) not in anchors(linked):
            broken.append(f"{target}: no heading with that anchor in {linked.name}")
    return broken


def test_the_readme_and_the_docs_pages_are_among_the_files_checked() -> None:
    checked = {path.relative_to(ROOT).as_posix() for path in markdown_files()}
    assert "README.md" in checked
    assert {"docs/configuration.md", "docs/development.md"} <= checked


def test_the_readme_links_every_docs_page() -> None:
    linked = {
        (ROOT / target.partition("#")[0]).resolve() for target in relative_links(ROOT / "README.md")
    }
    unlinked = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked]
    assert unlinked == []


@pytest.mark.parametrize(
    "path", markdown_files(), ids=lambda path: path.relative_to(ROOT).as_posix()
)
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


def test_a_link_to_a_missing_file_or_heading_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## A `code` heading: yes\n\ntext\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[fine](other.md#a-code-heading-yes), [here](#page), [gone](gone.md),\n"
        "[wrong](other.md#a-heading), `[in code](nowhere.md)`\n\n"
        "```\n[in a fence](nowhere.md)\n```\n\n[web](https://example.com/x.md) [up](../x.md)\n"
    )
    assert broken_links(page, root=tmp_path.resolve()) == [
        "gone.md: no such file or folder",
        "other.md#a-heading: no heading with that anchor in other.md",
        "../x.md: outside the repository",
    ]
