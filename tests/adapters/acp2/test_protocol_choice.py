"""The protocol a connection speaks is chosen at `initialize` (`acp2._choice`), and a v2
connection takes JSON-RPC batches (ACP-BATCH-201..203).

2 gets v2, 1 gets v1, any other version the highest the agent speaks (2), and
`ACP_AGENT_PROTOCOL=v1|v2` forces one. Two real agent starts check the wiring; the
rule itself is checked directly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acp_agent.adapters.acp2 import ProtocolSetting, chosen_version, protocol_setting
from tests.adapters.acp2.support import V2Client, initialize_v2
from tests.support.agent import agent_command, agent_env


@pytest.mark.parametrize(
    ("requested", "setting", "version"),
    [
        (2, ProtocolSetting.AUTO, 2),
        (1, ProtocolSetting.AUTO, 1),
        (3, ProtocolSetting.AUTO, 2),
        (0, ProtocolSetting.AUTO, 2),
        ("2", ProtocolSetting.AUTO, 1),  # not a version: v1 answers it (-32602)
        (True, ProtocolSetting.AUTO, 1),
        (2, ProtocolSetting.V1, 1),
        (1, ProtocolSetting.V2, 2),
    ],
)
def test_the_version_chosen(requested: object, setting: ProtocolSetting, version: int) -> None:
    assert chosen_version(requested, setting) == version


@pytest.mark.parametrize("requested", [0, 1, 2, 65535])
def test_a_v1_shaped_request_gets_v1_whatever_it_asks(requested: int) -> None:
    assert chosen_version(requested, ProtocolSetting.AUTO, v1_shaped=True) == 1


def test_the_setting() -> None:
    assert protocol_setting({}) is ProtocolSetting.AUTO
    assert protocol_setting({"ACP_AGENT_PROTOCOL": "V2"}) is ProtocolSetting.V2
    assert protocol_setting({"ACP_AGENT_PROTOCOL": "v3"}) is ProtocolSetting.AUTO


def test_a_version_above_two_gets_v2(tmp_path: Path) -> None:
    # A home of its own: session/list below must find none of other tests' sessions.
    command = [sys.executable, "-m", "acp_agent", "--home", str(tmp_path)]
    client = V2Client(command, agent_env())
    try:
        assert initialize_v2(client, version=5)["protocolVersion"] == 2
        # v2's methods are served from then on, v1's only names are not.
        assert (
            client.call("session/load", {"sessionId": "s", "cwd": "/", "mcpServers": []})["error"][
                "code"
            ]
            == -32601
        )
        # Batches (v2 only): an empty one is one -32600 with a null id; a notification-only
        # one gets no reply; each entry of another is served alone, a bad one refused alone.
        client.agent.send(b"[]\n")
        assert client.agent.read_message()["error"] == {
            "code": -32600,
            "message": "Invalid request: an empty batch",
        }
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}
        listing = {"jsonrpc": "2.0", "id": 90, "method": "session/list", "params": {}}
        client.agent.send_json([cancel])
        client.agent.send_json([listing, 7])
        answers = [client.agent.read_message(), client.agent.read_message()]
        assert sorted(str(a["id"]) for a in answers) == ["90", "None"]
        assert next(a for a in answers if a["id"] is None)["error"]["code"] == -32600
        assert next(a for a in answers if a["id"] == 90)["result"]["sessions"] == []
        assert client.problems() == []
    finally:
        client.stop()


def test_the_setting_forces_v1() -> None:
    client = V2Client(agent_command(), agent_env(ACP_AGENT_PROTOCOL="v1"))
    try:
        assert initialize_v2(client, version=2)["protocolVersion"] == 1
    finally:
        client.stop()
