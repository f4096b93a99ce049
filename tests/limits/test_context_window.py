"""A prompt the model cannot take never strands the session.

Against a server that refuses any request over N bytes as over its context
window (which the agent does not know: it believes the model takes 128k
tokens), a prompt of 3 x N is answered, the person is told what happened
to it, the next small prompt ends `end_turn` and `/compact` succeeds. A
message larger than the window the agent does know is refused before it is
recorded, saying how large one may be.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from protocol import types
from tests.adapters.acp.support import text_of_updates
from tests.support import openai_env, running_agent, write_script
from tests.support.fake_provider import Exchange, FakeProviderServer, openai_chunk, openai_stream

pytestmark = pytest.mark.e2e

#: What the fake server takes: the guide and tools (about 25 KB) and some conversation.
BODY_LIMIT = 60_000


def reply(text: str) -> Exchange:
    return Exchange(
        chunks=[
            openai_stream(
                openai_chunk({"role": "assistant", "content": text}), openai_chunk({}, "stop")
            )
        ]
    )


async def test_a_prompt_three_times_the_window_is_answered_and_the_session_goes_on(
    tmp_path: Path,
):
    big = "The log says: " + "all systems nominal, no errors today. " * (3 * BODY_LIMIT // 38 + 10)
    with FakeProviderServer() as server:
        server.body_limit = BODY_LIMIT
        server.add(
            reply("Hello."),
            reply("Summary: the person pasted a long log of nominal systems."),
            reply("I read the summary of your log."),
            reply("A small answer."),
            reply("Summary: a log, then a small question."),
        )
        env = openai_env(server.base_url)
        async with running_agent(tmp_path / "home", env=env) as client:
            session_id = await client.new_session(tmp_path)
            first = await client.prompt(session_id, "Hi.")
            seen = len(client.updates_for(session_id))
            large = await client.prompt(session_id, big)
            told = client.updates_for(session_id)[seen:]
            small = await client.prompt(session_id, "Anything wrong?")
            compacted = await client.prompt(session_id, "/compact")
            after_compact = client.updates_for(session_id)
        refused, sent = server.refused, [len(r.body) for r in server.requests]

    assert first.stop_reason == types.StopReason.END_TURN
    assert len(big.encode()) > 3 * BODY_LIMIT
    # The big prompt was refused by the server, the session compacted itself (cutting the
    # prompt to fit), and the turn went on from the summary.
    assert refused >= 2
    assert large.stop_reason == types.StopReason.END_TURN
    said = text_of_updates(told)
    assert "longer than the model takes" in said
    assert "the longest messages truncated to their beginning and end" in said
    assert "I read the summary of your log." in said
    # The next small prompt works, and so does /compact.
    assert small.stop_reason == types.StopReason.END_TURN
    assert compacted.stop_reason == types.StopReason.END_TURN
    assert "A small answer." in text_of_updates(after_compact)
    summaries = [
        u
        for u in after_compact
        if isinstance(u, types.ToolCallProgress) and u.status == types.ToolCallStatus.COMPLETED
    ]
    assert summaries, "both compactions show completed"
    # Nothing the server accepted was over its limit after the first refusal taught it.
    assert max(size for size in sent if size <= BODY_LIMIT) <= BODY_LIMIT


async def test_a_message_larger_than_the_window_is_refused_unrecorded_saying_the_limit(
    tmp_path: Path,
):
    script = write_script(tmp_path / "s.json", [{"text": "Fine."}], context_window=8000)
    home = tmp_path / "home"
    async with running_agent(home, script=script) as client:
        session_id = await client.new_session(tmp_path)
        refused = await client.prompt(session_id, "x" * 200_000)
        told = text_of_updates(client.updates_for(session_id))
        after = await client.prompt(session_id, "A short one.")
    assert refused.stop_reason == types.StopReason.END_TURN
    assert refused.meta is not None
    error = refused.meta["acp-agent"]["error"]
    assert error["kind"] == "prompt_too_large"
    assert error["tokens"] > error["limit"] > 0
    assert f"at most about {error['limit']}" in told
    assert after.stop_reason == types.StopReason.END_TURN
    with sqlite3.connect(home / "data" / "sessions.sqlite3") as db:
        inputs = [
            json.loads(payload)["content"]
            for (payload,) in db.execute(
                "SELECT payload FROM events WHERE kind = 'user_input.adopted'"
            )
        ]
    assert inputs == [[{"type": "text", "text": "A short one."}]]


async def test_a_huge_prompt_and_thousands_of_blocks_are_answered_with_bounded_memory(
    tmp_path: Path,
):
    script = write_script(tmp_path / "s.json", [{"text": "Fine."}])
    async with running_agent(tmp_path / "home", script=script) as client:
        session_id = await client.new_session(tmp_path)
        huge = await client.request_raw(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": "y" * 20_000_000}]},
            timeout_s=60,
        )
        blocks = [{"type": "text", "text": f"part {n} "} for n in range(5000)]
        many = await client.request_raw(
            "session/prompt", {"sessionId": session_id, "prompt": blocks}, timeout_s=60
        )
        assert client.process is not None
        status = await asyncio.to_thread(Path(f"/proc/{client.process.pid}/status").read_text)
    peak_mib = (
        int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
        // 1024
    )

    assert huge["result"]["_meta"]["acp-agent"]["error"]["kind"] == "prompt_too_large"
    assert many["result"]["stopReason"] == "end_turn"
    # 20 MB of text costs a few copies of itself, not unbounded memory.
    assert peak_mib < 400, peak_mib
