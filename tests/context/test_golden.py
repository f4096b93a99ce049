"""Golden request bodies: a scripted session as the fake provider received it, byte for byte.

The session: rules in the workspace and the person's config dir, a tool
call, the clock passing midnight, a rule file edited and another deleted,
a background notification, `/compact`, and a turn after it. Every body the
provider received (OpenAI and Anthropic wire) is compared with the files in
`golden/`, which are reviewed like code. Clock, ids and environment are
injected; the workspace's temporary path is written as `/workspace`.

Regenerate (then review the diff) with::

    ACP_AGENT_REGENERATE_GOLDEN=1 python -m pytest tests/context/test_golden.py
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from acp_agent.capabilities.context import record_notification
from acp_agent.capabilities.context._state_sources import GitSource
from acp_agent.models import ToolCall
from tests.support.fake_provider import FakeProviderServer

from .support import (
    ENVIRONMENT,
    WIRES,
    Clock,
    at,
    drive_turn,
    make_engine,
    open_main_branch,
    sequential_ids,
    sources,
)

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = os.environ.get("ACP_AGENT_REGENERATE_GOLDEN") == "1"
WORKSPACE = "/workspace"


def _workspace(root: Path) -> tuple[Path, Path]:
    workspace, config = root / "shop", root / "config"
    (workspace / "src" / "api").mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("Run `make test` before you commit.\n")
    (workspace / "src" / "api" / "AGENTS.md").write_text(
        "Handlers are async; never block the event loop.\n"
    )
    config.mkdir()
    (config / "AGENTS.md").write_text("Answer in British English.\n")
    subprocess.run(
        ["git", "-C", str(workspace), "init", "-q", "-b", "main"], check=True, capture_output=True
    )
    return workspace, config


async def _play_session(wire_name: str, server: FakeProviderServer, root: Path) -> None:
    wire = WIRES[wire_name]
    workspace, config = _workspace(root)
    clock, ids = Clock(at("2026-11-29T23:58:00")), sequential_ids()
    read = ToolCall("call_1", "read_file", '{"path":"src/api/app.py"}')
    server.add(
        wire.tool_call(read),
        wire.text('I added `GET /health`, which returns `{"status": "ok"}`.'),
        wire.text("Yes: `make check` passed, 12 tests."),
        wire.text(
            "The person asked for a /health endpoint; I added it to src/api/app.py. "
            "`make check` passed (12 tests)."
        ),
        wire.text("I added tests/test_health.py."),
    )
    async with httpx.AsyncClient() as client, open_main_branch(cwd=str(workspace)) as (_, branch):
        provider = wire.provider(client, server.base_url)
        engine = make_engine(
            branch,
            clock,
            workspace=workspace,
            config_dir=config,
            state_sources=[*sources(clock, str(workspace)), GitSource(str(workspace), ENVIRONMENT)],
            new_id=ids,
        )
        app = "from fastapi import FastAPI\n\napp = FastAPI()\n"
        await drive_turn(
            branch,
            engine,
            provider,
            "Add a /health endpoint to the API.",
            new_id=ids,
            tool_output={"read_file": app},
        )
        clock.advance(minutes=5)  # 00:03 on 2026-11-30
        (workspace / "AGENTS.md").write_text("Run `make check` before you commit.\n")
        (workspace / "src" / "api" / "AGENTS.md").unlink()
        await record_notification(branch, "tools/bash", "job 1 (`make check`) exited 0: 12 passed")
        await drive_turn(branch, engine, provider, "Did the checks pass?", new_id=ids)
        await engine.compact(model="test-model", provider=provider)
        await drive_turn(branch, engine, provider, "Now add a test for it.", new_id=ids)
    return None


@pytest.mark.parametrize("wire_name", list(WIRES))
async def test_the_request_bodies_of_a_scripted_session_match_the_golden_file(
    wire_name: str, tmp_path: Path
) -> None:
    with FakeProviderServer() as server:
        await _play_session(wire_name, server, tmp_path)
    workspace = str(tmp_path / "shop")
    received: list[dict[str, Any]] = [
        {
            "path": request.path,
            "body": json.loads(request.body.decode().replace(workspace, WORKSPACE)),
        }
        for request in server.requests
    ]
    golden = GOLDEN / f"{wire_name}_session.json"
    if REGENERATE:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps(received, indent=2, ensure_ascii=False) + "\n")
    expected = json.loads(golden.read_text())
    assert received == expected
