"""The error tree: wire codes, translation from the wire, and the separate misuse family."""

from __future__ import annotations

import pytest

from protocol import errors
from protocol.errors import AcpError

WIRE_ERRORS = [
    (errors.ParseError, -32700, "Parse error"),
    (errors.InvalidRequest, -32600, "Invalid request"),
    (errors.MethodNotFound, -32601, "Method not found"),
    (errors.InvalidParams, -32602, "Invalid params"),
    (errors.InternalError, -32603, "Internal error"),
    (errors.RequestCancelled, -32800, "Request cancelled"),
    (errors.AuthRequired, -32000, "Authentication required"),
    (errors.ResourceNotFound, -32002, "Resource not found"),
]


@pytest.mark.parametrize(("error_class", "code", "message"), WIRE_ERRORS)
def test_each_wire_error_carries_its_json_rpc_code_and_a_default_message(
    error_class: type[AcpError], code: int, message: str
):
    error = error_class()

    assert (error.code, error.message, error.data) == (code, message, None)
    assert error.to_wire() == {"code": code, "message": message}


@pytest.mark.parametrize(("error_class", "code", "message"), WIRE_ERRORS)
def test_an_error_from_the_wire_becomes_the_class_for_its_code(
    error_class: type[AcpError], code: int, message: str
):
    error = AcpError.from_wire(code, "said the peer", {"detail": 1})

    assert type(error) is error_class
    assert (error.code, error.message, error.data) == (code, "said the peer", {"detail": 1})


def test_an_error_code_without_a_class_keeps_its_code_on_the_base_class():
    error = AcpError.from_wire(-32099, "vendor specific")

    assert type(error) is AcpError
    assert error.to_wire() == {"code": -32099, "message": "vendor specific"}


def test_data_goes_on_the_wire_only_when_there_is_some():
    error = errors.ResourceNotFound("Resource not found: no session s", {"sessionId": "s"})

    assert error.to_wire() == {
        "code": -32002,
        "message": "Resource not found: no session s",
        "data": {"sessionId": "s"},
    }
    assert str(error) == "Resource not found: no session s"


@pytest.mark.parametrize(
    "misuse",
    [
        errors.ConnectionNotStarted(),
        errors.ConnectionClosed(),
        errors.UnstableNotEnabled("session/fork"),
        errors.WrongMethod("session/update is handled by the client"),
    ],
)
def test_misuse_errors_are_runtime_errors_and_never_wire_errors(misuse: Exception):
    assert isinstance(misuse, errors.ConnectionMisuse)
    assert isinstance(misuse, RuntimeError)
    assert not isinstance(misuse, AcpError)


def test_peer_errors_are_neither_wire_errors_nor_misuse():
    for error in (errors.PeerDisconnected(), errors.RemoteProtocolError("bad result")):
        assert isinstance(error, errors.PeerError)
        assert not isinstance(error, AcpError | RuntimeError)


def test_the_module_exports_every_error_it_defines():
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, Exception) and not name.startswith("_")
    }

    assert set(errors.__all__) == defined
