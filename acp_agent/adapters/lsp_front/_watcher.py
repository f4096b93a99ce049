"""What a running turn shows: its current step as work-done progress, and its reply.

One `TurnWatcher` follows a session's main line (a subscriber of its handle) for as
long as the session is open; while a turn of this front end runs, each step is
reported on that turn's progress token ("Thinking", "Running: <tool call>") and the
model's text is gathered for the reply message.
"""

from __future__ import annotations

from collections.abc import Callable

from acp_agent.agent import (
    Event,
    ModelRequestStarted,
    ModelTextDelta,
    ToolCallRequested,
    ToolCallStarted,
    UserInputAdopted,
)

__all__ = ("StepReporter", "TurnWatcher")

#: Reports a step of the running turn (its progress message).
StepReporter = Callable[[str], None]


class TurnWatcher:
    """A session's subscriber (see the module docstring)."""

    name = "lsp turn watcher"

    def __init__(self) -> None:
        self._report: StepReporter | None = None
        self._titles: dict[str, str] = {}
        self._reply: list[str] = []
        self._reply_request: str | None = None

    def watch(self, report: StepReporter | None) -> None:
        """Follow the turn about to start: its steps go to `report`, its reply is gathered."""
        self._report = report
        self._reply = []
        self._reply_request = None
        self._titles.clear()

    def stop(self) -> str:
        """Stop following the turn; the reply: the text of its model requests."""
        self._report = None
        return "".join(self._reply).strip()

    async def handle(self, event: Event) -> None:
        payload = event.payload
        if isinstance(payload, UserInputAdopted):
            self._step("Reading the request")
        elif isinstance(payload, ModelRequestStarted):
            self._step("Thinking")
        elif isinstance(payload, ModelTextDelta):
            if payload.request_id != self._reply_request:
                # Each model request's text is a paragraph of the reply.
                if self._reply:
                    self._reply.append("\n\n")
                self._reply_request = payload.request_id
            self._reply.append(payload.text)
        elif isinstance(payload, ToolCallRequested):
            self._titles[payload.call_id] = payload.title or payload.tool
        elif isinstance(payload, ToolCallStarted):
            self._step(f"Running: {self._titles.get(payload.call_id, 'a tool')}")

    def _step(self, message: str) -> None:
        if self._report is not None:
            self._report(message)
