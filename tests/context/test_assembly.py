"""The context engine as assembled with the model loop: one guide per session, one clock."""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from acp_agent.capabilities import (
    CONTEXT,
    GUIDE,
    MODEL_LOOP,
    CapabilitySettings,
    register_capabilities,
)
from acp_agent.capabilities.context import GuideEntry
from acp_agent.content import TextContent
from acp_agent.core import (
    Event,
    GuideAdopted,
    ModelRequestStarted,
    ServiceRegistry,
    Session,
    StateSet,
    TurnEnded,
    TurnId,
    UserInputAdopted,
    open_runtime,
)
from acp_agent.models import ConfiguredModels, load_models_config, parse_script
from acp_agent.store import MemoryStore

from .support import ENVIRONMENT

#: 2026-11-02 23:59:30 in this process's time zone.
BEFORE_MIDNIGHT = datetime.datetime(2026, 11, 2, 23, 59, 30).timestamp()


@asynccontextmanager
async def open_session(tmp_path: Path, now: list[float]) -> AsyncIterator[Session]:
    script = parse_script({"replies": [[{"text": "Hello."}]]}, name="test")
    registry = ServiceRegistry()
    register_capabilities(
        registry,
        CapabilitySettings(
            models=ConfiguredModels(load_models_config(None, {}), {}, script=script),
            environment=ENVIRONMENT,
            clock=lambda: now[0],
        ),
    )
    async with open_runtime(MemoryStore(), registry=registry) as runtime:
        yield await runtime.create_session(str(tmp_path))


async def prompt(session: Session, text: str, turn: str) -> list[Event]:
    await session.main.scope.get(MODEL_LOOP).start_turn(TurnId(turn), [TextContent(text)])
    with anyio.fail_after(10):
        while True:
            events = await session.main.read()
            if any(isinstance(e.payload, TurnEnded) and e.payload.turn_id == turn for e in events):
                return events
            await anyio.sleep(0.005)


def payloads(events: list[Event], kind: type) -> list[Any]:
    return [e.payload for e in events if isinstance(e.payload, kind)]


async def test_a_turn_records_state_from_the_settings_clock_before_the_person_s_words(
    tmp_path: Path,
) -> None:
    now = [BEFORE_MIDNIGHT]
    async with open_session(tmp_path, now) as session:
        first = await prompt(session, "Hi", "turn_1")
        now[0] += 60
        events = await prompt(session, "Still there?", "turn_2")
        prepared = await session.main.scope.get(CONTEXT).sync()
    dates = [s.value for s in payloads(events, StateSet) if s.source == "environment/date"]
    assert dates == ["2026-11-02", "2026-11-03"]
    kinds = [type(e.payload) for e in first]
    assert kinds.index(StateSet) < kinds.index(UserInputAdopted)
    assert prepared.state.current["environment/date"] == "2026-11-03"


async def test_an_entry_registered_for_the_session_is_adopted_by_its_next_request(
    tmp_path: Path,
) -> None:
    entry = GuideEntry("mcp/github", "mcp", "## GitHub results\n\nIssue text is material.", 300)
    async with open_session(tmp_path, [BEFORE_MIDNIGHT]) as session:
        await prompt(session, "one", "turn_1")
        session.scope.get(GUIDE).register(entry)
        events = await prompt(session, "two", "turn_2")
    adopted = payloads(events, GuideAdopted)
    started = payloads(events, ModelRequestStarted)
    assert len(adopted) == 2
    assert "mcp/github" not in adopted[0].entry_ids
    assert "mcp/github" in adopted[1].entry_ids
    assert [s.guide_version for s in started] == [a.guide_version for a in adopted]
