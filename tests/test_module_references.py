"""Every module a docstring, comment or page names by path or dotted name exists.

Modules move (the capabilities became sub-packages, the tool kit a leaf of its own);
a reference left behind sends a reader to nothing. A reference is checked when it is
in backticks and is either a path under one of our packages or the tests and
benchmarks, ending in `.py` or `/` or with a private part (`capabilities/loop/_loop.py`,
`core/_cuts`, relative to `acp_agent/` or the repository), or a dotted name of ours
with a private part (`acp_agent.core._cuts`, `core._cuts.prompt_cut`): its module must
exist, and what follows the module must be defined at its top level. Method names
(`session/new`) and the names of guide entries have no private part and no suffix, and
are not checked. A module's docstring may name a module of its own package alone
(`_recorder`): that one must be beside it, or name something defined in the package
(ACP's `_meta` field aside).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "acp_agent"
PACKAGES = ("acp_agent", "protocol", "jsonbounds")
#: The sub-packages of acp_agent, which docstrings name relative to it (`core/_cuts.py`).
SUBPACKAGES = tuple(sorted(p.name for p in AGENT.iterdir() if (p / "__init__.py").exists()))
HEADS = "|".join((*PACKAGES, *SUBPACKAGES, "tests", "benchmarks"))
PATH = re.compile(rf"`((?:{HEADS})(?:/[\w.]+)+/?)(?::[\w.]+)?`")
DOTTED = re.compile(rf"`((?:{'|'.join((*PACKAGES, *SUBPACKAGES))})(?:\.\w+)+)`")


def _sources() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for top in (*PACKAGES, "tests", "benchmarks"):
        found += sorted(p for p in (ROOT / top).rglob("*.py") if "data" not in p.parts)
    return [p for p in found if p != Path(__file__).resolve()]  # its own examples are broken


def _checked_path(ref: str) -> bool:
    parts = ref.rstrip("/").split("/")
    return ref.endswith((".py", "/")) or any(part.startswith("_") for part in parts[1:])


def _path_exists(ref: str) -> bool:
    ref = ref.rstrip("/")
    return any((base / c).exists() for base in (ROOT, AGENT) for c in (ref, f"{ref}.py"))


@functools.cache
def _top_level_names(module: Path) -> frozenset[str]:
    tree = ast.parse(module.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


def _dotted_resolves(ref: str) -> bool:
    parts = ref.split(".")
    for base in (ROOT, AGENT):
        for i in range(len(parts), 0, -1):
            where = base.joinpath(*parts[:i])
            module = where / "__init__.py" if where.is_dir() else where.with_suffix(".py")
            if module.exists():
                rest = parts[i:]
                return not rest or rest[0] in _top_level_names(module)
    return False


BARE = re.compile(r"`(_[a-z][a-z0-9_]*)`")
#: Private names docstrings use that are no module of ours: ACP's extension field.
NOT_MODULES = frozenset({"_meta"})


@functools.cache
def _defined_in_package(package: Path) -> frozenset[str]:
    """Every function and class a package's modules define (at any depth), and their
    top-level names."""
    names: set[str] = set()
    for module in package.glob("*.py"):
        names |= _top_level_names(module)
        names.update(
            node.name
            for node in ast.walk(ast.parse(module.read_text()))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        )
    return frozenset(names)


def _broken_siblings(module: Path) -> list[str]:
    """The private names `module`'s docstring names that are neither a module beside it
    nor defined in its package."""
    docstring = ast.get_docstring(ast.parse(module.read_text())) or ""
    package = module.parent
    return [
        name
        for name in dict.fromkeys(m.group(1) for m in BARE.finditer(docstring))
        if name not in NOT_MODULES
        and not (package / f"{name}.py").exists()
        and not (package / name).is_dir()
        and name not in _defined_in_package(package)
    ]


def _broken(text: str) -> list[str]:
    broken = [
        m.group(1)
        for m in PATH.finditer(text)
        if _checked_path(m.group(1)) and not _path_exists(m.group(1))
    ]
    broken += [
        m.group(1)
        for m in DOTTED.finditer(text)
        if any(p.startswith("_") and not p.startswith("__") for p in m.group(1).split(".")[1:])
        and not _dotted_resolves(m.group(1))
    ]
    return broken


def test_every_module_named_in_docstrings_and_pages_exists() -> None:
    broken = [
        f"{source.relative_to(ROOT)}: `{ref}`"
        for source in _sources()
        for ref in _broken(source.read_text(errors="replace"))
    ]
    broken += [
        f"{source.relative_to(ROOT)}: `{name}`"
        for source in _sources()
        if source.suffix == ".py" and source.relative_to(ROOT).parts[0] in PACKAGES
        for name in _broken_siblings(source)
    ]
    assert broken == []


def test_a_moved_module_is_caught(tmp_path: Path) -> None:
    assert _broken("see `core/_commands.py` and `capabilities._loop`") == [
        "core/_commands.py",
        "capabilities._loop",
    ]
    assert _broken("see `core/_cuts.py`, `acp_agent.core._cuts.prompt_cut`, `session/new`") == []
    (tmp_path / "_here.py").write_text(
        '"""Beside `_there`, which moved; `_here` and `_helper` stay."""\n'
    )
    (tmp_path / "_other.py").write_text("def _helper() -> None: ...\n")
    assert _broken_siblings(tmp_path / "_here.py") == ["_there"]
