"""What a session used and cost, end to end: the stdio agent, the fake provider's counts.

Every reply reports its own token counts (cached and reasoning tokens among
them) and the model has prices in `config.toml`; the agent reports them as the
provider counted them: per request in `usage_update` (the session's cost and
counts so far, by line of work), per turn and per session in the prompt's
answer (`usage`, and `_meta["acp-agent"].usage`), a branch's requests included
and named; a load replays the same. With `--unstable`, so the answer's `usage`
(an unstable field) is on the wire and checked against the schema.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from protocol import types
from tests.support import (
    EditorClient,
    line_of_request,
    openai_env,
    running_agent,
)
from tests.support.fake_provider import (
    Exchange,
    FakeProviderServer,
    openai_chunk,
    openai_stream,
)

pytestmark = pytest.mark.e2e

PRICES = '[providers.openai.prices."gpt-fake"]\ninput = 2.0\noutput = 8.0\ncache_read = 0.5\n'


def reply(prompt: int, completion: int, cached: int = 0, thought: int = 0, **tool: Any) -> Exchange:
    """An OpenAI reply reporting these counts: text, or one call of `tool` (`name`, `args`)."""
    if tool:
        call = {
            "index": 0,
            "id": f"call_{tool['name']}",
            "type": "function",
            "function": {"name": tool["name"], "arguments": json.dumps(tool["args"])},
        }
        body = [
            openai_chunk({"role": "assistant", "tool_calls": [call]}),
            openai_chunk({}, "tool_calls"),
        ]
    else:
        body = [openai_chunk({"content": f"{prompt} in."}), openai_chunk({}, "stop")]
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": thought},
    }
    return Exchange(chunks=[openai_stream(*body, openai_chunk(usage=usage))])


def counts(inputs: int, outputs: int, cached: int = 0, thought: int = 0) -> dict[str, Any]:
    """A usage as the agent reports it, cost at `PRICES` (cached input at the cache price)."""
    cost = ((inputs - cached) * 2.0 + cached * 0.5 + outputs * 8.0) / 1_000_000
    return {
        "totalTokens": inputs + outputs,
        "inputTokens": inputs,
        "outputTokens": outputs,
        "thoughtTokens": thought,
        "cachedReadTokens": cached,
        "cachedWriteTokens": 0,
        "cost": {"amount": round(cost, 6), "currency": "USD"},
    }


def without_cost(usage: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in usage.items() if key != "cost"}


async def test_turn_and_session_usage_are_the_providers_counts_with_branches_by_line(
    tmp_path: Path,
):
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text(PRICES)
    with FakeProviderServer(route=line_of_request) as server:
        server.add(
            reply(1000, 20, name="branch", args={"task": "Count", "title": "counter"}),
            reply(1100, 30, cached=1000, name="branch_wait", args={"all": True, "timeout_s": 20}),
            reply(1300, 40, cached=1100, thought=10),
            reply(1400, 50, cached=1300),
            queue="main",
        )
        server.add(reply(900, 60, thought=25), queue="branch")
        client = EditorClient(unstable=True)
        env = openai_env(server.base_url)
        async with running_agent(home, env=env, client=client, unstable=True):
            session_id = await client.new_session(tmp_path)
            first = await client.prompt(session_id, "Count with a branch.")
            second = await client.prompt(session_id, "Thanks.")
            live = [u for u in client.updates_for(session_id) if isinstance(u, types.UsageUpdate)]
            replay_from = len(client.updates)
            await client.load(session_id, tmp_path)
            replay = [n.update for n in client.updates[replay_from:]]
            replayed = [u for u in replay if isinstance(u, types.UsageUpdate)]

    main_one = [counts(1000, 20), counts(1100, 30, 1000), counts(1300, 40, 1100, 10)]
    branch = counts(900, 60, thought=25)
    turn_one = sum_of(*main_one, branch)
    session = sum_of(turn_one, counts(1400, 50, 1300))
    [branch_id] = [line["line"] for line in ours(first)["session"]["lines"][1:]]
    # The first turn: main's three requests and the branch's, each line apart.
    assert ours(first)["turn"] == {
        **turn_one,
        "lines": [
            {"line": "main", "title": None, **sum_of(*main_one)},
            {"line": branch_id, "title": "counter", **branch},
        ],
    }
    assert first.usage == types.Usage(
        total_tokens=turn_one["totalTokens"],
        input_tokens=turn_one["inputTokens"],
        output_tokens=turn_one["outputTokens"],
        thought_tokens=35,
        cached_read_tokens=2100,
        cached_write_tokens=0,
    )
    # The second: main's one request; the session: both turns.
    assert ours(second)["turn"] == {
        **counts(1400, 50, 1300),
        "lines": [{"line": "main", "title": None, **counts(1400, 50, 1300)}],
    }
    assert without_lines(ours(second)["session"]) == session
    # Each usage_update: the context main's last request filled, and the session so far.
    last = live[-1]
    assert (last.used, last.size) == (1450, 128_000)
    assert last.cost == types.Cost(amount=session["cost"]["amount"], currency="USD")
    assert last.meta is not None
    assert last.meta["usage"] == without_cost(session)
    assert last.meta["acp-agent"]["lines"] == ours(second)["session"]["lines"]
    # One update per main request, and one when the branch's showing said what it used.
    assert len(live) == 5
    costs = [update.cost.amount for update in live if update.cost is not None]
    assert costs == sorted(costs)
    # A replay shows the usage once, as it ended.
    assert replayed == [last]


async def test_a_compactions_request_counts_in_the_session_and_the_next_turn(tmp_path: Path):
    with FakeProviderServer() as server:
        # The first prompt's reply, the summary `/compact` asks for, the second prompt's.
        server.add(reply(100, 10), reply(300, 30), reply(400, 40))
        async with running_agent(tmp_path / "home", env=openai_env(server.base_url)) as client:
            session_id = await client.new_session(tmp_path)
            await client.prompt(session_id, "First")
            await client.prompt(session_id, "/compact")
            after = await client.prompt(session_id, "Second")

    no_cost = {"thoughtTokens": 0, "cachedReadTokens": 0, "cachedWriteTokens": 0, "cost": None}
    turn = {"totalTokens": 770, "inputTokens": 700, "outputTokens": 70, **no_cost}
    assert ours(after)["turn"] == {**turn, "lines": [{"line": "main", "title": None, **turn}]}
    assert without_lines(ours(after)["session"]) == {
        **turn,
        "totalTokens": 880,
        "inputTokens": 800,
        "outputTokens": 80,
    }


def test_exec_json_reports_the_turns_and_the_sessions_usage(tmp_path: Path):
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text(PRICES)
    with FakeProviderServer() as server:
        server.add(reply(1200, 30, cached=800, thought=5))
        result = subprocess.run(
            [sys.executable, "-m", "acp_agent", "exec", "--home", str(home), "--json", "Hi"],
            cwd=tmp_path,
            env=openai_env(server.base_url),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    [line] = [json.loads(text) for text in result.stdout.splitlines() if '"result"' in text]

    usage = counts(1200, 30, 800, 5)
    assert result.returncode == 0, result.stderr
    assert line["usage"]["turn"] == {**usage, "lines": [{"line": "main", "title": None, **usage}]}
    assert line["usage"]["session"] == line["usage"]["turn"]
    assert (line["usage"]["used"], line["usage"]["cost"]) == (1230, usage["cost"])


def ours(answer: types.PromptResponse) -> dict[str, Any]:
    assert answer.meta is not None
    return dict(answer.meta["acp-agent"]["usage"])


def without_lines(usage: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in usage.items() if key != "lines"}


def sum_of(*usages: dict[str, Any]) -> dict[str, Any]:
    """Usages added up as the agent adds them (the cost from each one's, rounded)."""
    total: dict[str, Any] = {key: sum(u[key] for u in usages) for key in without_cost(usages[0])}
    cost = sum(u["cost"]["amount"] for u in usages)
    return {**total, "cost": {"amount": round(cost, 6), "currency": "USD"}}
