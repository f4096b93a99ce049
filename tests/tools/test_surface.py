"""The tools package declares its surface: every module its names, the face every tool."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import acp_agent.tools as tools

MODULES = [f"{tools.__name__}.{info.name}" for info in pkgutil.iter_modules(tools.__path__)]


@pytest.mark.parametrize("name", MODULES)
def test_every_module_declares_a_tuple_all_whose_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    declared = module.__all__
    assert isinstance(declared, tuple), f"{name}.__all__ must be a tuple"
    assert all(hasattr(module, attribute) for attribute in declared)
    assert len(set(declared)) == len(declared), f"{name}.__all__ repeats a name"


def test_the_face_exports_every_builtin_tool() -> None:
    for tool in tools.builtin_tools():
        name = type(tool).__name__
        assert name in tools.__all__, name
        assert getattr(tools, name) is type(tool)
