"""The runtime's settings read from the environment: a bad value falls back to the default."""

from __future__ import annotations

import pytest

from acp_agent.runtime_setup import mcp_startup_wait_s


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(None, 5.0), ("30", 30.0), ("0", 0.0), ("-1", 5.0), ("soon", 5.0), ("", 5.0)],
)
def test_the_mcp_startup_wait_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, seconds: float
) -> None:
    if value is None:
        monkeypatch.delenv("ACP_AGENT_MCP_STARTUP_WAIT_S", raising=False)
    else:
        monkeypatch.setenv("ACP_AGENT_MCP_STARTUP_WAIT_S", value)
    assert mcp_startup_wait_s() == seconds
