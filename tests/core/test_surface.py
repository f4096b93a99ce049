"""The core package declares its surface, and the core stays on anyio."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import acp_agent.core


def modules_of(package: ModuleType) -> list[ModuleType]:
    """The package's implementation modules (private: the package face is the surface)."""
    return [
        importlib.import_module(f"{package.__name__}.{info.name}")
        for info in pkgutil.iter_modules(package.__path__)
    ]


PACKAGES = [acp_agent.core]
MODULES = [m for p in PACKAGES for m in modules_of(p)]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_module_lists_exactly_the_public_names_it_defines(module: ModuleType) -> None:
    exported = module.__all__
    assert isinstance(exported, tuple)
    assert all(hasattr(module, name) for name in exported)
    defined = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    }
    assert defined <= set(exported)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_each_package_reexports_its_modules_public_names(package: ModuleType) -> None:
    from_modules = {
        name: getattr(module, name) for module in modules_of(package) for name in module.__all__
    }
    assert set(package.__all__) == set(from_modules)
    assert all(getattr(package, name) is value for name, value in from_modules.items())


def test_the_core_never_imports_asyncio() -> None:
    core = Path(acp_agent.core.__file__).parent
    offenders = []
    for path in sorted(core.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "asyncio"]
    assert offenders == []
