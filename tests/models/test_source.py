"""The model source's `prepare`: the default model opened ahead, from the warm-up's thread."""

from __future__ import annotations

import anyio.to_thread
import httpx
import pytest

from acp_agent.models import ConfiguredModels, TextDelta, load_models_config, parse_script
from acp_agent.models._http import ModelTransport
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
            transport = models._transport
        finally:
            await models.aclose()

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["One."]
    assert transport is not None
    assert not transport.tls_built


async def test_a_model_over_https_has_its_tls_side_built_by_prepare() -> None:
    models = openai_models("https://127.0.0.1:9")
    try:
        assert await anyio.to_thread.run_sync(models.prepare) is not None
        transport = models._transport
        assert transport is not None
        assert transport.tls_built
    finally:
        await models.aclose()


async def test_an_https_request_goes_through_the_tls_side() -> None:
    transport = ModelTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        assert not transport.tls_built
        # Nothing listens on port 9: the connection fails, after the TLS side was built.
        with pytest.raises(httpx.ConnectError):
            await client.get("https://127.0.0.1:9/")
        assert transport.tls_built
