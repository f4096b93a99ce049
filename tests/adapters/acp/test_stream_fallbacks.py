"""An update that cannot be sent goes plainer, then as a notice; the plainer forms are
made only when the update itself could not go (a replay sends thousands that can)."""

from __future__ import annotations

from typing import Any

import pytest

from acp_agent.adapters.acp import _stream
from acp_agent.adapters.acp._stream import SessionStream
from protocol import types
from protocol.connection import AgentConnection
from protocol.errors import MessageTooDeep


class Refusing:
    """A connection that refuses to encode an update `refuse` says no to."""

    def __init__(self, refuse: Any) -> None:
        self._refuse = refuse
        self._connection = AgentConnection()
        self.refused: list[types.SessionUpdate] = []

    def encode_notification(self, method: str, params: types.SessionNotification) -> bytes:
        if self._refuse(params.update):
            self.refused.append(params.update)
            raise MessageTooDeep("nested deeper than 100 levels (the limit)")
        return self._connection.encode_notification(method, params)


def _call() -> types.ToolCall:
    return types.ToolCall(
        tool_call_id="call_1",
        title="Read a.txt",
        status=types.ToolCallStatus.COMPLETED,
        raw_input={"path": "a.txt"},
    )


def _encoded(connection: Refusing, update: types.SessionUpdate) -> str | None:
    stream = SessionStream(connection, "sess_1", translator=None)  # type: ignore[arg-type]
    line = stream._encoded(update, 7, None)
    return None if line is None else line.decode()


def test_an_update_that_goes_as_it_is_makes_no_plainer_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unwanted(update: types.SessionUpdate) -> types.SessionUpdate | None:
        raise AssertionError("a plainer form was made for an update that went as it is")

    monkeypatch.setattr(_stream, "_without_raw", unwanted)
    monkeypatch.setattr(_stream, "_plainer", unwanted)

    line = _encoded(Refusing(lambda update: False), _call())

    assert line is not None
    assert '"rawInput":{"path":"a.txt"}' in line


def test_a_call_that_cannot_go_goes_without_its_raw_input() -> None:
    connection = Refusing(lambda update: getattr(update, "raw_input", None) is not None)

    line = _encoded(connection, _call())

    assert line is not None
    assert '"toolCallId":"call_1"' in line
    assert "rawInput" not in line
    assert len(connection.refused) == 1


def test_what_no_form_of_can_go_is_a_notice_naming_the_event() -> None:
    connection = Refusing(lambda update: isinstance(update, types.ToolCall))

    line = _encoded(connection, _call())

    assert line is not None
    assert "could not be shown" in line
    assert "(event 7)" in line
    # As it is, without its raw input, and plainer: three refusals before the notice.
    assert len(connection.refused) == 3
