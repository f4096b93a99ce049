"""What importing a package loads, at run time: what static contracts cannot see.

import-linter reads `import` statements, but a package face that imports its
submodules (or loads them on first use) decides what actually runs. A tool
must not load the runtime: importing `acp_agent.tools` (and the tool kit it
implements) loads no module of `acp_agent.core` or `acp_agent.capabilities`.
Each probe runs in a fresh interpreter, so nothing this test process has
imported counts.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def loaded_by(module: str) -> list[str]:
    """The modules of ours that importing `module` loads, in a fresh interpreter."""
    probe = (
        "import importlib, json, sys\n"
        f"importlib.import_module({module!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('acp_agent', 'jsonbounds', 'protocol'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("module", ["acp_agent.tools", "acp_agent.toolkit"])
def test_a_tool_loads_no_part_of_the_runtime(module: str) -> None:
    loaded = loaded_by(module)
    assert module in loaded  # the probe saw the import
    runtime = [m for m in loaded if m.startswith(("acp_agent.core", "acp_agent.capabilities"))]
    assert runtime == []


#: The faces that load part of their package on first use (`acp_agent.lazy_face`), a
#: name each loads that way, and a module that only that name loads.
LAZY_FACES = [
    ("acp_agent.models", "new_http_client", "httpx"),
    ("acp_agent.mcp", "McpServerManager", "mcp.client.session"),
    ("acp_agent.store", "MemoryStore", "acp_agent.store._memory"),
    ("acp_agent.process_groups", "Gate", "acp_agent.process_groups._gate"),
    ("acp_agent.toolkit", "Tool", "acp_agent.toolkit._tool"),
    ("acp_agent.capabilities", "register_capabilities", "acp_agent.capabilities._assembly"),
]


@pytest.mark.parametrize(("face", "name", "costly"), LAZY_FACES)
def test_a_lazy_face_loads_a_costly_name_on_first_use_only(
    face: str, name: str, costly: str
) -> None:
    probe = (
        "import importlib, json, sys\n"
        f"face = importlib.import_module({face!r})\n"
        f"before = {costly!r} in sys.modules\n"
        f"value = getattr(face, {name!r})\n"
        f"print(json.dumps([before, {costly!r} in sys.modules, vars(face).get({name!r}) is value,"
        f" {name!r} in dir(face)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [False, True, True, True]


def test_a_lazy_face_refuses_a_name_it_does_not_have() -> None:
    import acp_agent.store

    with pytest.raises(AttributeError, match="no attribute 'NoSuchStore'"):
        _ = acp_agent.store.NoSuchStore  # type: ignore[attr-defined]
