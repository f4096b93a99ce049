"""The store package declares its surface: each module's public names, all on the face."""

from __future__ import annotations

import inspect
from types import ModuleType

import pytest

import acp_agent.store
from acp_agent.store import (
    _copy,
    _leases,
    _location,
    _memory,
    _migrations,
    _opening,
    _pg_inspect,
    _pg_schema,
    _postgres,
    _sqlite,
    _sqlite_file,
)

#: The modules whose public names are the package's surface (`_rules`, `_rows`, `_wal` and
#: the `_pg_*` helpers of the PostgreSQL store are theirs). `_pg_leases` gives one name.
MODULES = (
    _copy,
    _leases,
    _location,
    _memory,
    _migrations,
    _opening,
    _pg_inspect,
    _pg_schema,
    _postgres,
    _sqlite,
    _sqlite_file,
)
FROM_HELPERS = {"DEFAULT_LEASE_TIMEOUT_S"}


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_module_lists_exactly_the_public_names_it_defines(module: ModuleType) -> None:
    exported = module.__all__
    assert isinstance(exported, tuple)
    assert all(hasattr(module, name) for name in exported)
    assert len(set(exported)) == len(exported), f"{module.__name__}.__all__ repeats a name"
    defined = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    }
    assert defined <= set(exported)


def test_the_package_reexports_its_modules_public_names() -> None:
    from_modules = {name: getattr(module, name) for module in MODULES for name in module.__all__}
    assert set(acp_agent.store.__all__) == set(from_modules) | FROM_HELPERS
    assert all(getattr(acp_agent.store, name) is value for name, value in from_modules.items())
