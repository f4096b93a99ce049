"""Every package declares its surface, completely, and every module its own.

One convention everywhere (the `mcp/` form): implementation modules are
private (`_name.py`); a package's `__init__` lists its whole public surface in
a tuple `__all__` (lazily loaded names included); a module lists the public
names it defines. As httpx's exported-members test does, a package may bind
no public name it does not export.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import acp_agent
import jsonbounds
import protocol

#: Modules that are programs, not part of an API.
_PROGRAMS = {"acp_agent.__main__", "protocol.generate"}


def _walk(package: ModuleType) -> list[str]:
    names = [package.__name__]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if info.name not in _PROGRAMS:
            names.append(info.name)
    return names


MODULES = _walk(jsonbounds) + _walk(protocol) + _walk(acp_agent)
PACKAGES = [name for name in MODULES if hasattr(importlib.import_module(name), "__path__")]


@pytest.mark.parametrize("name", MODULES)
def test_a_module_declares_a_tuple_all_of_names_that_exist(name: str) -> None:
    module = importlib.import_module(name)
    declared = getattr(module, "__all__", None)
    assert isinstance(declared, tuple), f"{name}.__all__ must be a tuple"
    assert len(set(declared)) == len(declared), f"{name}.__all__ repeats a name"
    for attribute in declared:
        if not hasattr(module, attribute):
            # A package may list a submodule that loads on demand.
            importlib.import_module(f"{name}.{attribute}")


@pytest.mark.parametrize("name", [n for n in MODULES if n not in PACKAGES])
def test_a_module_exports_every_public_class_and_function_it_defines(name: str) -> None:
    module = importlib.import_module(name)
    defined = {
        attribute
        for attribute, value in vars(module).items()
        if not attribute.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == name
    }
    assert defined <= set(module.__all__), defined - set(module.__all__)


@pytest.mark.parametrize("name", PACKAGES)
def test_a_package_binds_no_public_name_it_does_not_export(name: str) -> None:
    package = importlib.import_module(name)
    for attribute in package.__all__:  # resolve the lazy ones too
        if not hasattr(package, attribute):
            importlib.import_module(f"{name}.{attribute}")
    bound = {
        attribute
        for attribute, value in vars(package).items()
        if not attribute.startswith("_")
        and not isinstance(value, ModuleType)  # submodules, and modules it imports
        and _ours(value)  # not `Any`, `Final` or `TYPE_CHECKING`, imported for typing
    }
    assert bound <= set(package.__all__), bound - set(package.__all__)


def _ours(value: object) -> bool:
    """Whether `value` is defined by this project (typing helpers a face imports are not)."""
    module = getattr(value, "__module__", None)
    if not isinstance(module, str) or isinstance(value, bool):
        return False
    return module.split(".")[0] in {"acp_agent", "jsonbounds", "protocol"}


@pytest.mark.parametrize("name", [n for n in PACKAGES if n.startswith("acp_agent.")])
def test_a_package_of_the_agent_keeps_its_implementation_private(name: str) -> None:
    """Only a package face, a subpackage, or a module that says why it is public."""
    package = importlib.import_module(name)
    public = [
        info.name
        for info in pkgutil.iter_modules(package.__path__)
        if not info.name.startswith("_") and not info.ispkg
    ]
    for module_name in public:
        doc = importlib.import_module(f"{name}.{module_name}").__doc__ or ""
        assert "public sub-API" in doc, (
            f"{name}.{module_name} is public: say why, or make it private"
        )


def test_importing_the_types_does_not_load_pygls() -> None:
    import subprocess
    import sys

    probe = "import sys, protocol.types; print('pygls' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
