"""The warm-up thread: it imports its modules once, gives way while handlers run, and
a module that fails to import is logged without stopping the rest."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_agent.adapters.acp._warmup import Warmup, WarmupState, warmup_enabled


@pytest.fixture
def modules(tmp_path: Path) -> Iterator[list[str]]:
    """Two importable modules nobody has imported yet (and one that fails)."""
    names = [f"warm_{tmp_path.name.replace('-', '_')}_{i}" for i in range(2)]
    for name in names:
        (tmp_path / f"{name}.py").write_text("LOADED = True\n")
    (tmp_path / "warm_broken.py").write_text("raise RuntimeError('broken on purpose')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield names
    finally:
        sys.path.remove(str(tmp_path))
        for name in [*names, "warm_broken"]:
            sys.modules.pop(name, None)


def test_it_imports_each_module_once_started(modules: list[str]) -> None:
    warmup = Warmup(modules)
    assert warmup.state is WarmupState.WAITING
    assert not any(name in sys.modules for name in modules)

    warmup.start()
    warmup.start()  # a second initialize starts nothing more

    assert warmup.wait(10)
    assert warmup.state is WarmupState.DONE
    assert all(name in sys.modules for name in modules)


def test_it_imports_nothing_while_a_handler_runs(modules: list[str]) -> None:
    busy = threading.Event()
    busy.set()
    warmup = Warmup(modules, busy=busy.is_set)

    warmup.start()
    time.sleep(0.2)
    assert warmup.state is WarmupState.RUNNING
    assert not any(name in sys.modules for name in modules)

    busy.clear()
    assert warmup.wait(10)
    assert all(name in sys.modules for name in modules)


def test_a_module_that_fails_is_logged_and_the_rest_still_load(
    modules: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    warmup = Warmup(["warm_broken", *modules])

    warmup.start()

    assert warmup.wait(10)
    assert all(name in sys.modules for name in modules)
    assert "warm_broken could not be imported" in caplog.text


@pytest.mark.parametrize(
    ("value", "enabled"), [(None, True), ("1", True), ("0", False), (" 0 ", False)]
)
def test_acp_agent_warmup_0_switches_it_off(value: str | None, enabled: bool) -> None:
    env = {} if value is None else {"ACP_AGENT_WARMUP": value}
    assert warmup_enabled(env) is enabled
