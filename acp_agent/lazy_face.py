"""A package face that loads some of its names on first use: one helper, not a copy per face.

A face on the agent's start-up path (imported before `initialize` is answered,
or by a command that needs only part of its package) lists its costly names
in a table, name to private module, and gets the module-level `__getattr__`
and `__dir__` (PEP 562) that import that module when the name is first read
and keep the value in the face, so the second read costs nothing:

    __getattr__, __dir__ = lazy_face(__name__, {"MemoryStore": "_memory"})

The face still imports those names under `TYPE_CHECKING` and lists them in
`__all__`, so type checkers and readers see one surface. Standard library
only: `acp_agent.process_groups` uses it, which the reaper imports without
site-packages.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ("lazy_face",)


def lazy_face(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for the face of `package`.

    `names` maps each name loaded on first use to the module that defines it,
    relative to `package` (`"_memory"`) or absolute.
    """
    table = dict(names)

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        qualified = f"{package}.{module}" if module.startswith("_") else module
        value = getattr(importlib.import_module(qualified), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        face = sys.modules[package]
        return sorted(set(vars(face)) | set(getattr(face, "__all__", ())))

    return __getattr__, __dir__
