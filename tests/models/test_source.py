"""The model source's `prepare`: the default model opened ahead, from the warm-up's thread."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio.to_thread
import httpx
import pytest

from acp_agent.models import ConfiguredModels, TextDelta, load_models_config, parse_script
from acp_agent.models._http import LazyCAContext, new_http_client
from tests.models.contract import collect
from tests.support.fake_provider import FakeProviderServer, openai_reply


def openai_models(base_url: str) -> ConfiguredModels:
    env = {
        "OPENAI_BASE_URL": f"{base_url}/v1",
        "OPENAI_API_KEY": "sk-test",
        "ACP_AGENT_MODEL": "openai/gpt-fake",
    }
    return ConfiguredModels(load_models_config(None, env), env)


async def test_a_model_prepared_in_a_thread_shares_its_client_with_later_handles() -> None:
    with FakeProviderServer() as server:
        server.add(openai_reply("One."), openai_reply("Two."))
        models = openai_models(server.base_url)
        try:
            prepared = await anyio.to_thread.run_sync(models.prepare)
            assert prepared is not None
            assert prepared.model_id == "openai/gpt-fake"
            opened = models.open(None)
            first = await collect(prepared.provider)
            second = await collect(opened.provider)
        finally:
            await models.aclose()

    assert [e.text for e in first if isinstance(e, TextDelta)] == ["One."]
    assert [e.text for e in second if isinstance(e, TextDelta)] == ["Two."]
    # One client: the second request went over the first one's kept-alive connection.
    assert server.requests[0].client_port == server.requests[1].client_port


async def test_nothing_is_prepared_for_a_script_for_no_model_or_once_closed() -> None:
    script = parse_script({"replies": [[{"text": "Hi."}]]}, name="plays")
    scripted = ConfiguredModels(load_models_config(None, {}), {}, script=script)
    unconfigured = ConfiguredModels(load_models_config(None, {}), {})
    closed = openai_models("http://127.0.0.1:9")
    await closed.aclose()

    assert scripted.prepare() is None
    assert unconfigured.prepare() is None
    assert closed.prepare() is None


async def test_a_model_over_plain_http_never_reads_the_ca_bundle() -> None:
    with FakeProviderServer() as server:
        server.add(openai_reply("One."))
        models = openai_models(server.base_url)
        try:
            prepared = await anyio.to_thread.run_sync(models.prepare)
            assert prepared is not None
            events = await collect(prepared.provider)
            tls = models._tls
        finally:
            await models.aclose()

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["One."]
    assert tls is not None
    assert not tls.ca_loaded


async def test_a_model_over_https_has_its_ca_bundle_read_by_prepare() -> None:
    models = openai_models("https://127.0.0.1:9")
    try:
        assert await anyio.to_thread.run_sync(models.prepare) is not None
        tls = models._tls
        assert tls is not None
        assert tls.ca_loaded
    finally:
        await models.aclose()


@contextlib.contextmanager
def tcp_listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 that notes the first bytes of each connection, then
    closes it: enough for a TLS handshake to start, or a proxy's CONNECT to be read."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    heard: list[bytes] = []
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(5)
                with contextlib.suppress(OSError):
                    heard.append(connection.recv(4096))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], heard
    finally:
        done.set()
        thread.join(5)
        server.close()


async def test_an_https_connection_reads_the_ca_bundle_first() -> None:
    tls = LazyCAContext()
    with tcp_listener() as (port, heard):
        async with new_http_client(verify=tls) as client:
            assert not tls.ca_loaded
            # The server hangs up mid-handshake: the bundle was read before it began.
            with pytest.raises(httpx.ConnectError):
                await client.get(f"https://127.0.0.1:{port}/")
    assert tls.ca_loaded
    assert heard
    assert heard[0][:1] == b"\x16"  # a TLS handshake record


async def test_the_environments_proxy_still_carries_https_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with tcp_listener() as (port, heard):
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        async with new_http_client() as client:
            with pytest.raises(httpx.HTTPError):
                await client.get("https://models.example.invalid/v1/models")
    assert heard
    assert heard[0].startswith(b"CONNECT models.example.invalid:443 ")


def test_the_lazy_context_checks_what_the_default_context_checks() -> None:
    lazy, default = LazyCAContext(), ssl.create_default_context()

    assert lazy.verify_mode == default.verify_mode == ssl.CERT_REQUIRED
    assert lazy.check_hostname
    assert default.check_hostname
    assert lazy.verify_flags == default.verify_flags
    assert lazy.options == default.options
    assert (lazy.minimum_version, lazy.maximum_version) == (
        default.minimum_version,
        default.maximum_version,
    )
    assert lazy.post_handshake_auth == default.post_handshake_auth
    # Until its first connection it trusts nothing.
    assert lazy.get_ca_certs() == []


async def test_ca_certificates_that_cannot_be_read_fail_the_connection_saying_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    tls = LazyCAContext()
    with tcp_listener() as (port, _):
        async with new_http_client(verify=tls) as client:
            with pytest.raises(httpx.ConnectError) as caught:
                await client.get(f"https://127.0.0.1:{port}/")

    assert str(caught.value).startswith("cannot read the CA certificates from SSL_CERT_FILE ")
    assert "missing.pem" in str(caught.value)
    assert not tls.ca_loaded
