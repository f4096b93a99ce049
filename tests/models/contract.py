"""The provider contract: what every `ModelProvider` does, over real HTTP to the fake server.

Each provider's test module subclasses `ProviderContract` and supplies its
wire format: how a text reply, tool calls, reasoning, an error event and
error answers look on that API. The assertions are the same for all: the
same neutral events, the same errors, the same retry behaviour.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import ClassVar

import anyio
import httpx
import pytest

from acp_agent.models import (
    AuthenticationFailed,
    ContextWindowExceeded,
    Message,
    ModelEvent,
    ModelNotFound,
    ModelProvider,
    ModelRequest,
    ProviderConnectError,
    ProviderOverloaded,
    ProviderResponseInvalid,
    ProviderTimeout,
    QuotaExceeded,
    RateLimited,
    Reasoning,
    ReasoningDelta,
    ReasoningEnded,
    ReplyBuilder,
    ResponseEnded,
    RetryPolicy,
    StopReason,
    StreamBroken,
    Text,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallEnded,
    ToolCallStarted,
    UsageReported,
)
from tests.support.fake_provider import (
    Exchange,
    FakeProviderServer,
    RecordingSleep,
    closed_port,
    split_at,
)

#: The usage every scripted complete reply reports, in neutral terms.
USAGE = UsageReported(input_tokens=120, output_tokens=30, cache_read_tokens=100)
#: Shaped like a real key, so redaction of key-like text is exercised too.
API_KEY = "sk-test-0123456789abcdefghij"
REQUEST = ModelRequest(
    model="test-model",
    guide="You are a test.",
    messages=[Message("user", [Text("Say hello.")])],
)
TOOL_CALLS = (
    ToolCall("call_a", "read_file", '{"path":"src/a.py"}'),
    ToolCall("call_b", "grep", '{"pattern":"TODO","path":"src"}'),
)


async def collect(provider: ModelProvider, request: ModelRequest = REQUEST) -> list[ModelEvent]:
    async with provider.stream(request) as events:
        return [event async for event in events]


async def collect_into(received: list[ModelEvent], provider: ModelProvider) -> None:
    """Append each event to `received` as it arrives, so a test sees them after a raise."""
    async with provider.stream(REQUEST) as events:
        async for event in events:
            received.append(event)


def neutral(events: list[ModelEvent]) -> list[ModelEvent]:
    """`events` without the provider's own stop-reason word."""
    return [
        ResponseEnded(event.stop_reason) if isinstance(event, ResponseEnded) else event
        for event in events
    ]


class ProviderContract:
    """Subclass per provider; implement the wire-format hooks at the bottom."""

    KEY_ENV: ClassVar[str]
    PATH: ClassVar[str]
    #: The signature a scripted reasoning block carries (None where the API has none).
    REASONING_SIGNATURE: ClassVar[str | None]

    @pytest.fixture
    def server(self) -> Iterator[FakeProviderServer]:
        with FakeProviderServer() as server:
            yield server

    @pytest.fixture
    async def client(self) -> AsyncIterator[httpx.AsyncClient]:
        async with httpx.AsyncClient(timeout=5.0) as client:
            yield client

    @pytest.fixture
    def sleep(self) -> RecordingSleep:
        return RecordingSleep()

    @pytest.fixture
    def provider(
        self, server: FakeProviderServer, client: httpx.AsyncClient, sleep: RecordingSleep
    ) -> ModelProvider:
        retry = RetryPolicy(max_attempts=3, base_delay_s=1.0, sleep=sleep, jitter=lambda: 0.5)
        return self.make_provider(client, server.base_url, retry)

    # Streaming

    async def test_text_reply_streams_deltas_then_usage_then_end(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(Exchange(chunks=[self.text_stream("Hel", "lo.")]))
        assert neutral(await collect(provider)) == [
            TextDelta("Hel"),
            TextDelta("lo."),
            USAGE,
            ResponseEnded(StopReason.END_TURN),
        ]

    async def test_request_goes_to_the_api_path_with_the_key_and_json(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(Exchange(chunks=[self.text_stream("Hi")]))
        await collect(provider)
        (request,) = server.requests
        name, value = self.auth_header()
        assert (request.path, request.headers[name]) == (self.PATH, value)
        assert request.headers["content-type"] == "application/json"
        assert request.json()["stream"] is True

    async def test_consecutive_replies_reuse_one_connection(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(
            Exchange(chunks=[self.text_stream("One")]), Exchange(chunks=[self.text_stream("Two")])
        )
        await collect(provider)
        await collect(provider)
        first, second = server.requests
        assert first.client_port == second.client_port

    async def test_utf8_characters_split_across_chunks_arrive_whole(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        text = "héllo, 世界 🎉"
        body = self.text_stream(text)
        start = body.index("世".encode())
        # Cut inside "世" (3 bytes) and inside "🎉" (4 bytes), with pauses so the
        # client reads each piece on its own.
        emoji = body.index("🎉".encode())
        server.add(Exchange(chunks=split_at(body, start + 1, start + 2, emoji + 3, delay_s=0.02)))
        events = await collect(provider)
        assert [event for event in events if isinstance(event, TextDelta)] == [TextDelta(text)]

    async def test_keep_alive_comments_and_pings_are_ignored(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        body = self.text_stream("A", "B")
        cut = body.index(b"\n\n") + 2
        server.add(Exchange(chunks=[self.keep_alive(), body[:cut], self.keep_alive(), body[cut:]]))
        assert neutral(await collect(provider)) == [
            TextDelta("A"),
            TextDelta("B"),
            USAGE,
            ResponseEnded(StopReason.END_TURN),
        ]

    async def test_two_tool_calls_with_arguments_split_across_chunks(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        body = self.tool_calls_stream()
        # Cut in the middle of JSON lines, not only between events.
        cuts = range(37, len(body), 91)
        server.add(Exchange(chunks=split_at(body, *cuts, delay_s=0.001)))
        events = await collect(provider)

        builder = ReplyBuilder()
        for event in events:
            builder.add(event)
        reply = builder.reply()
        assert (reply.tool_calls, reply.stop_reason) == (TOOL_CALLS, StopReason.TOOL_USE)
        for index, call in enumerate(TOOL_CALLS):
            started = events.index(ToolCallStarted(index, call.call_id, call.name))
            ended = events.index(ToolCallEnded(index, call.call_id, call.name, call.arguments))
            deltas = [
                event.delta
                for event in events[started:ended]
                if isinstance(event, ToolCallArgumentsDelta) and event.index == index
            ]
            assert len(deltas) > 1
            assert "".join(deltas) == call.arguments

    async def test_reasoning_streams_first_and_is_kept_for_replay(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(Exchange(chunks=[self.reasoning_stream(("Think", "ing."), "Answer.")]))
        assert neutral(await collect(provider)) == [
            ReasoningDelta("Think"),
            ReasoningDelta("ing."),
            ReasoningEnded(Reasoning("Thinking.", self.REASONING_SIGNATURE)),
            TextDelta("Answer."),
            USAGE,
            ResponseEnded(StopReason.END_TURN),
        ]

    @pytest.mark.parametrize("stop", list(StopReason))
    async def test_each_stop_reason_arrives_as_the_neutral_one(
        self, server: FakeProviderServer, provider: ModelProvider, stop: StopReason
    ) -> None:
        server.add(Exchange(chunks=[self.text_stream("x", stop=stop)]))
        events = await collect(provider)
        assert isinstance(events[-1], ResponseEnded)
        assert events[-1].stop_reason is stop

    # Errors inside the stream

    async def test_error_event_after_output_raises_stream_broken_and_is_not_retried(
        self, server: FakeProviderServer, provider: ModelProvider, sleep: RecordingSleep
    ) -> None:
        server.add(Exchange(chunks=[self.text_then_error_stream("Partial")]))
        received: list[ModelEvent] = []
        with pytest.raises(StreamBroken) as caught:
            await collect_into(received, provider)
        assert received == [TextDelta("Partial")]
        assert caught.value.events_received == 1
        assert isinstance(caught.value.__cause__, ProviderOverloaded)
        assert (len(server.requests), sleep.delays) == (1, [])

    async def test_error_event_before_any_output_is_retried(
        self, server: FakeProviderServer, provider: ModelProvider, sleep: RecordingSleep
    ) -> None:
        server.add(
            Exchange(chunks=[self.error_before_output_stream()]),
            Exchange(chunks=[self.text_stream("Fine.")]),
        )
        assert neutral(await collect(provider))[0] == TextDelta("Fine.")
        assert (len(server.requests), sleep.delays) == (2, [0.5])

    async def test_truncated_stream_after_output_raises_stream_broken(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        opening = self.opening("Hal")
        server.add(Exchange(chunks=[opening, b'data: {"trunc'], truncate=True))
        received: list[ModelEvent] = []
        with pytest.raises(StreamBroken):
            await collect_into(received, provider)
        assert received == [TextDelta("Hal")]
        assert len(server.requests) == 1

    async def test_a_connection_dropped_after_the_final_event_leaves_the_reply_complete(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(Exchange(chunks=[self.text_stream("Done.")], truncate=True))
        events = await collect(provider)
        assert neutral(events)[-1] == ResponseEnded(StopReason.END_TURN)

    async def test_stream_that_ends_in_the_middle_of_an_event_raises_stream_broken(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(Exchange(chunks=[self.opening("Hal"), b'data: {"cut o']))
        with pytest.raises(StreamBroken, match="middle of an event"):
            await collect(provider)
        assert len(server.requests) == 1

    async def test_stream_that_ends_before_any_output_is_retried(
        self, server: FakeProviderServer, provider: ModelProvider, sleep: RecordingSleep
    ) -> None:
        server.add(
            Exchange(chunks=[b'data: {"cut'], truncate=True),
            Exchange(chunks=[self.text_stream("Again.")]),
        )
        assert neutral(await collect(provider))[0] == TextDelta("Again.")
        assert (len(server.requests), sleep.delays) == (2, [0.5])
        assert server.requests[0].body == server.requests[1].body

    # Error answers

    async def test_rate_limit_is_retried_after_the_retry_after_delay(
        self,
        server: FakeProviderServer,
        provider: ModelProvider,
        sleep: RecordingSleep,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.DEBUG, logger="acp_agent.models")
        server.add(self.rate_limited(retry_after="2"), Exchange(chunks=[self.text_stream("Ok")]))
        assert neutral(await collect(provider))[0] == TextDelta("Ok")
        assert (len(server.requests), sleep.delays) == (2, [2.0])
        assert "retrying in 2.0 s" in caplog.text
        assert API_KEY not in caplog.text

    async def test_rate_limit_asking_for_a_long_wait_is_raised_at_once(
        self, server: FakeProviderServer, provider: ModelProvider, sleep: RecordingSleep
    ) -> None:
        server.add(self.rate_limited(retry_after="3600"))
        with pytest.raises(RateLimited) as caught:
            await collect(provider)
        assert (caught.value.retry_after_s, caught.value.status) == (3600.0, 429)
        assert (len(server.requests), sleep.delays) == (1, [])

    async def test_overload_is_retried_with_backoff_then_raised(
        self, server: FakeProviderServer, provider: ModelProvider, sleep: RecordingSleep
    ) -> None:
        server.add(self.overloaded(), self.overloaded(), self.overloaded())
        with pytest.raises(ProviderOverloaded):
            await collect(provider)
        # Full jitter with a draw of 0.5: half of 1 s, then half of 2 s.
        assert (len(server.requests), sleep.delays) == (3, [0.5, 1.0])

    async def test_unauthorized_names_the_key_variable_and_never_the_key(
        self, server: FakeProviderServer, provider: ModelProvider, sleep: RecordingSleep
    ) -> None:
        server.add(self.unauthorized())
        with pytest.raises(AuthenticationFailed) as caught:
            await collect(provider)
        assert self.KEY_ENV in str(caught.value)
        assert API_KEY not in str(caught.value)
        assert API_KEY[:12] not in str(caught.value)
        assert (len(server.requests), sleep.delays) == (1, [])

    async def test_context_window_exceeded_is_recognised(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(self.context_exceeded())
        with pytest.raises(ContextWindowExceeded, match="context window"):
            await collect(provider)

    async def test_unknown_model_raises_model_not_found(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(self.model_not_found())
        with pytest.raises(ModelNotFound):
            await collect(provider)

    async def test_exhausted_quota_is_not_retried(
        self, server: FakeProviderServer, provider: ModelProvider, sleep: RecordingSleep
    ) -> None:
        server.add(self.quota_exhausted())
        with pytest.raises(QuotaExceeded, match="billing"):
            await collect(provider)
        assert (len(server.requests), sleep.delays) == (1, [])

    async def test_json_instead_of_an_event_stream_is_invalid(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(Exchange(headers={"content-type": "application/json"}, chunks=[b'{"id": "x"}']))
        with pytest.raises(ProviderResponseInvalid, match="instead of an event stream"):
            await collect(provider)

    # Transport

    async def test_refused_connection_is_retried_then_raised(
        self, client: httpx.AsyncClient, sleep: RecordingSleep
    ) -> None:
        retry = RetryPolicy(max_attempts=2, sleep=sleep, jitter=lambda: 0.5)
        provider = self.make_provider(client, unused_port_url(), retry)
        with pytest.raises(ProviderConnectError, match="cannot connect"):
            await collect(provider)
        assert sleep.delays == [0.5]

    async def test_silent_server_raises_provider_timeout(
        self, server: FakeProviderServer, sleep: RecordingSleep
    ) -> None:
        server.add(Exchange(hold=True))
        async with httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=0.2)) as client:
            provider = self.make_provider(
                client, server.base_url, RetryPolicy(max_attempts=1, sleep=sleep)
            )
            with pytest.raises(ProviderTimeout):
                await collect(provider)

    # Closing

    async def test_cancelling_the_consumer_closes_the_connection_at_once(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(Exchange(chunks=[self.opening("Hal")], hold=True))
        received: list[ModelEvent] = []
        async with anyio.create_task_group() as group:

            async def consume() -> None:
                async for event in provider.stream(REQUEST):
                    received.append(event)
                    group.cancel_scope.cancel()

            group.start_soon(consume)
        cancelled_at = time.monotonic()
        assert await anyio.to_thread.run_sync(server.disconnected.wait, 2.0)
        assert time.monotonic() - cancelled_at < 1.0
        assert received == [TextDelta("Hal")]

    async def test_cancelling_while_the_consumer_handles_an_event_closes_the_connection(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(Exchange(chunks=[self.opening("Hal")], hold=True))
        with anyio.CancelScope() as scope:
            async with provider.stream(REQUEST) as events:
                async for _ in events:
                    scope.cancel()
                    await anyio.sleep(5)  # cancelled here, outside the stream
        assert scope.cancelled_caught
        assert await anyio.to_thread.run_sync(server.disconnected.wait, 2.0)

    async def test_leaving_the_block_early_closes_the_connection(
        self, server: FakeProviderServer, provider: ModelProvider
    ) -> None:
        server.add(Exchange(chunks=[self.opening("Hal")], hold=True))
        async with provider.stream(REQUEST) as events:
            async for event in events:
                assert event == TextDelta("Hal")
                break
        assert await anyio.to_thread.run_sync(server.disconnected.wait, 2.0)

    # Wire format hooks

    def make_provider(
        self, client: httpx.AsyncClient, base_url: str, retry: RetryPolicy
    ) -> ModelProvider:
        raise NotImplementedError

    def auth_header(self) -> tuple[str, str]:
        """The header carrying `API_KEY`: (lower-case name, value)."""
        raise NotImplementedError

    def text_stream(self, *pieces: str, stop: StopReason = StopReason.END_TURN) -> bytes:
        """A complete reply of text `pieces` ending with `stop`, reporting `USAGE`."""
        raise NotImplementedError

    def opening(self, text: str) -> bytes:
        """The start of a reply up to and including one text event."""
        raise NotImplementedError

    def reasoning_stream(self, reasoning: tuple[str, ...], text: str) -> bytes:
        raise NotImplementedError

    def tool_calls_stream(self) -> bytes:
        """`TOOL_CALLS`, each call's arguments in several pieces, stopping for tool use."""
        raise NotImplementedError

    def keep_alive(self) -> bytes:
        raise NotImplementedError

    def text_then_error_stream(self, text: str) -> bytes:
        """One text event, then an overloaded error event, then nothing."""
        raise NotImplementedError

    def error_before_output_stream(self) -> bytes:
        """An overloaded error event before any output."""
        raise NotImplementedError

    def rate_limited(self, retry_after: str) -> Exchange:
        raise NotImplementedError

    def overloaded(self) -> Exchange:
        raise NotImplementedError

    def unauthorized(self) -> Exchange:
        """401 whose message echoes `API_KEY`, as some providers do."""
        raise NotImplementedError

    def context_exceeded(self) -> Exchange:
        raise NotImplementedError

    def model_not_found(self) -> Exchange:
        raise NotImplementedError

    def quota_exhausted(self) -> Exchange:
        raise NotImplementedError


def unused_port_url() -> str:
    """A base URL on 127.0.0.1 whose port nothing listens on."""
    return f"http://127.0.0.1:{closed_port()}"
