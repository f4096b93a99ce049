"""Every package and public module declares its surface, and the surface resolves."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import pytest

import acp_agent
import protocol


def _public_modules(package: ModuleType) -> list[str]:
    names = [package.__name__]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        parts = info.name.split(".")
        if any(part.startswith("_") and part != "__main__" for part in parts[1:]):
            continue
        if parts[-1] == "__main__":
            continue
        names.append(info.name)
    return names


MODULES = _public_modules(protocol) + _public_modules(acp_agent)


@pytest.mark.parametrize("name", MODULES)
def test_public_module_declares_a_tuple_all_whose_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    declared = getattr(module, "__all__", None)
    assert isinstance(declared, tuple), f"{name}.__all__ must be a tuple"
    for attribute in declared:
        if hasattr(module, attribute):
            continue
        # Packages may list submodules that load on demand.
        importlib.import_module(f"{name}.{attribute}")
    assert len(set(declared)) == len(declared), f"{name}.__all__ repeats a name"


def test_importing_the_types_does_not_load_pygls() -> None:
    import subprocess
    import sys

    probe = "import sys, protocol.types; print('pygls' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
