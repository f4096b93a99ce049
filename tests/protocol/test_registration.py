"""What a connection refuses before anything reaches the wire: misuse is loud and early."""

from __future__ import annotations

import pytest

from protocol import methods, types
from protocol.connection import AgentConnection, ClientConnection
from protocol.errors import (
    ConnectionNotStarted,
    UnstableNotEnabled,
    WrongMethod,
)


def _ignore(params: object) -> None:
    return None


@pytest.mark.parametrize(
    ("make", "method"),
    [
        (AgentConnection, methods.SESSION_UPDATE),
        (AgentConnection, methods.FS_READ_TEXT_FILE),
        (ClientConnection, methods.SESSION_PROMPT),
        (ClientConnection, methods.INITIALIZE),
    ],
)
def test_a_connection_refuses_to_serve_the_other_sides_methods(make, method: str):
    with pytest.raises(WrongMethod, match="is handled by the"):
        make().register(method, _ignore)


@pytest.mark.parametrize("method", ["session/teleport", "initialise", methods.CANCEL_REQUEST])
def test_only_acp_methods_and_underscore_extensions_can_be_registered(method: str):
    with pytest.raises(WrongMethod):
        AgentConnection().register(method, _ignore)


def test_registering_a_method_twice_is_refused():
    connection = AgentConnection()
    connection.register(methods.SESSION_NEW, _ignore)

    with pytest.raises(WrongMethod, match="exists already"):
        connection.register(methods.SESSION_NEW, _ignore)


def test_unstable_methods_need_the_unstable_opt_in():
    with pytest.raises(UnstableNotEnabled):
        AgentConnection().register(methods.SESSION_FORK, _ignore)

    AgentConnection(unstable=True).register(methods.SESSION_FORK, _ignore)


def test_a_name_that_is_both_request_and_notification_needs_its_kind():
    connection = ClientConnection(unstable=True)

    with pytest.raises(WrongMethod, match="pass kind="):
        connection.register(methods.MCP_MESSAGE, _ignore)

    connection.register(methods.MCP_MESSAGE, _ignore, kind=methods.MessageKind.REQUEST)


def test_sending_a_method_the_peer_does_not_handle_is_refused():
    agent = AgentConnection()

    with pytest.raises(WrongMethod, match="not by the peer"):
        agent.notify(methods.SESSION_CANCEL, types.CancelNotification(session_id="s"))


def test_sending_params_of_the_wrong_type_is_refused():
    agent = AgentConnection()

    with pytest.raises(TypeError, match="SessionNotification"):
        agent.notify(methods.SESSION_UPDATE, types.CancelNotification(session_id="s"))


def test_sending_before_the_connection_starts_is_refused():
    agent = AgentConnection()
    update = types.SessionNotification(
        session_id="s", update=types.AgentMessageChunk(content=types.TextContent(text="hi"))
    )

    with pytest.raises(ConnectionNotStarted):
        agent.notify(methods.SESSION_UPDATE, update)
