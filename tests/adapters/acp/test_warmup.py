"""The warm-up thread: it imports its modules once, then runs its steps, gives way while
handlers run, and a module or step that fails is logged without stopping the rest; its
wire step leaves the first prompt nothing to compile."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import protocol._hooks
from acp_agent.adapters.acp._warmup import (
    Warmup,
    WarmupState,
    prepare_event_readers,
    prepare_wire_types,
    warmup_enabled,
)
from acp_agent.core import PAYLOAD_TYPES, _codec
from protocol import types
from protocol.converter import get_converter


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


def test_its_steps_run_after_the_modules_and_one_that_fails_stops_none(
    modules: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[bool] = []

    def broken() -> None:
        raise RuntimeError("broken on purpose")

    def step() -> None:
        seen.append(all(name in sys.modules for name in modules))

    warmup = Warmup(modules, then=[broken, step])
    warmup.start()

    assert warmup.wait(10)
    assert seen == [True]
    assert "broken failed" in caplog.text


def test_a_step_in_parts_gives_way_between_them() -> None:
    # A handler that starts while a step is under way waits for one part, not the step.
    busy = threading.Event()
    done: list[int] = []

    def parts() -> Iterator[None]:
        for part in range(3):
            done.append(part)
            if part == 0:
                busy.set()  # a request arrives during the first part
            yield

    warmup = Warmup([], busy=busy.is_set, then=[parts])
    warmup.start()
    time.sleep(0.2)
    assert done == [0]
    assert warmup.state is WarmupState.RUNNING

    busy.clear()
    assert warmup.wait(10)
    assert done == [0, 1, 2]


def test_the_wire_step_builds_what_a_first_prompt_writes_and_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[type] = []
    make = protocol._hooks.make_dict_unstructure_fn

    def counting(cls: type, *args: object, **kwargs: object) -> object:
        built.append(cls)
        return make(cls, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(protocol._hooks, "make_dict_unstructure_fn", counting)
    converter = get_converter()

    prepare_wire_types(converter)()
    assert types.ToolCall in built
    prepared = len(built)

    update = types.ToolCall(
        tool_call_id="call_1",
        title="Read a.py",
        kind=types.ToolKind.READ,
        status=types.ToolCallStatus.PENDING,
        content=[types.Content(content=types.TextContent(text="x"))],
    )
    note = types.SessionNotification(session_id="sess_1", update=update)
    converter.unstructure(note)
    converter.unstructure(types.PromptResponse(stop_reason=types.StopReason.END_TURN))
    converter.structure(
        {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "Go"}]}, types.PromptRequest
    )
    assert built[prepared:] == []  # nothing left to compile


@pytest.mark.parametrize(
    ("value", "enabled"), [(None, True), ("1", True), ("0", False), (" 0 ", False)]
)
def test_acp_agent_warmup_0_switches_it_off(value: str | None, enabled: bool) -> None:
    env = {} if value is None else {"ACP_AGENT_WARMUP": value}
    assert warmup_enabled(env) is enabled


def test_once_stopped_it_imports_nothing_more_and_is_done(modules: list[str]) -> None:
    busy = threading.Event()
    busy.set()
    warmup = Warmup(modules, busy=busy.is_set)

    warmup.start()
    warmup.stop()  # at shutdown, while a handler still runs

    assert warmup.wait(10)
    busy.clear()
    assert not any(name in sys.modules for name in modules)


def test_the_readers_step_makes_every_stored_kinds_reader_without_cattrs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A first load then reads each kind at once: no reader to make, no cattrs hook
    # compiled for a payload class (the readers fall back to those only for rows that
    # are not as stored).
    readers: dict[type, object] = {}
    hooks: dict[object, object] = {}
    monkeypatch.setattr(_codec, "_READERS", readers)
    monkeypatch.setattr(_codec, "_STRUCTURE", hooks)

    for _ in prepare_event_readers():
        pass

    assert set(PAYLOAD_TYPES.values()) <= set(readers)
    assert all(getattr(readers[cls], "__name__", "") == "read" for cls in PAYLOAD_TYPES.values())
    assert not set(PAYLOAD_TYPES.values()) & set(hooks)
