"""No module-level import cycle joins two modules except through their own package.

The warm-up imports the session's modules in a thread while requests import what
they need on the main thread. Two threads importing at once can deadlock only on
a cycle of module-level imports: a face importing its submodules, which import
names from their face, is safe (the second thread waits for the face to finish),
but a cycle through anything else is not. This reads every module's top-level
imports (not those under `TYPE_CHECKING` or inside functions) and fails on one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import acp_agent
import jsonbounds
import protocol

ROOTS = [Path(m.__file__).parent for m in (acp_agent, jsonbounds, protocol)]


def module_files() -> dict[str, Path]:
    files = {}
    for root in ROOTS:
        for path in root.rglob("*.py"):
            parts = path.relative_to(root.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            files[name] = path
    return files


def top_level_imports(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    """Every module name the top level of `tree` imports (a name imported from a
    package may be a submodule: it is kept, and dropped later if it is not one)."""
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                if "TYPE_CHECKING" in ast.unparse(node.test):
                    visit(node.orelse)
                else:
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{base}" if base else package
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)

    visit(tree.body)
    return found


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        edges = set()
        for imported in top_level_imports(
            ast.parse(path.read_text()), name, path.stem == "__init__"
        ):
            parts = imported.split(".")
            for end in range(1, len(parts) + 1):
                target = ".".join(parts[:end])
                # Importing a submodule imports its packages first; that edge is the safe one.
                if target in files and target != name and not name.startswith(target + "."):
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_graph_is_read_from_every_module() -> None:
    graph = import_graph()
    assert "acp_agent.core._branch" in graph
    assert "acp_agent.core._events" in graph["acp_agent.core._branch"]
    assert "protocol.types" in graph["protocol.methods"]
    assert "protocol._types_handshake" in graph["protocol._types_sessions"]


def test_a_cycle_would_be_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_level_import_cycle_outside_a_package_face() -> None:
    assert cycles(import_graph()) == []
