"""`acp_agent.models` declares its surface, and importing it stays cheap."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import acp_agent.models as models

MODULES = [f"{models.__name__}.{info.name}" for info in pkgutil.iter_modules(models.__path__)]


def test_every_name_in_all_resolves_and_others_do_not() -> None:
    assert len(set(models.__all__)) == len(models.__all__)
    for name in models.__all__:
        assert getattr(models, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'SSEDecoder'"):
        models.SSEDecoder  # noqa: B018


@pytest.mark.parametrize("name", MODULES)
def test_every_module_declares_a_tuple_all_whose_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    declared = module.__all__
    assert isinstance(declared, tuple), f"{name}.__all__ must be a tuple"
    assert all(hasattr(module, attribute) for attribute in declared)
    assert len(set(declared)) == len(declared), f"{name}.__all__ repeats a name"


def test_each_module_surface_is_exported_by_the_package() -> None:
    from acp_agent.models import _errors, _events, _provider, _reply, _request

    for module in (_errors, _events, _provider, _reply, _request):
        assert set(module.__all__) <= set(models.__all__), module.__name__


def test_importing_the_package_does_not_import_httpx_or_tomllib() -> None:
    code = (
        "import sys, acp_agent.models; from acp_agent.models import ScriptedProvider;"
        "print(sorted({'httpx', 'tomllib'} & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
