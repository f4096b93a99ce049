"""Server-sent events from raw bytes, as the WHATWG event-stream format defines them.

`SSEDecoder.feed()` takes bytes exactly as the network delivered them and
returns the events completed so far; `end()` is called at end of stream.

- UTF-8 is decoded incrementally, so a character split across chunks is whole
  (invalid bytes become U+FFFD, as the format prescribes).
- Lines end with CRLF, LF or CR, also when a CRLF is split across chunks.
- `:` lines are comments (keep-alives) and are skipped.
- `data:` lines accumulate, joined by "\\n"; `event:` names the event; an empty
  line dispatches it. Events without data are not dispatched.
- At end of stream a last event whose lines all ended but which lacks the
  closing empty line is still dispatched; a stream that ends in the middle of
  a line raises `SSETruncated`.
"""

from __future__ import annotations

import codecs
import re

import attrs

from acp_agent.values import Value

__all__ = ("SSEDecoder", "SSETruncated", "ServerSentEvent")

_LINE_END = re.compile(r"\r\n|\r|\n")


@attrs.frozen
class ServerSentEvent(Value):
    """One dispatched event: its type (`message` unless named) and its data."""

    event: str
    data: str
    id: str | None = None


class SSETruncated(Exception):
    """The stream ended in the middle of a line: the last event is cut off."""


class SSEDecoder:
    """An incremental event-stream parser; one per response."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial_line: list[str] = []
        # The previous chunk ended with "\r": a "\n" starting the next one is that CRLF's end.
        self._after_cr = False
        self._event_type: str | None = None
        self._data: list[str] = []
        self._last_id: str | None = None
        self._fields_seen = False

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events completed by `chunk`."""
        return self._feed_text(self._text.decode(chunk))

    def end(self) -> list[ServerSentEvent]:
        """The events completed by the end of the stream; `SSETruncated` if it ended mid-line."""
        events = self._feed_text(self._text.decode(b"", final=True))
        if any(self._partial_line):
            raise SSETruncated("the stream ended in the middle of a line")
        if self._fields_seen:
            self._dispatch(events)
        return events

    def _feed_text(self, text: str) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        if not text:
            return events
        if self._after_cr and text.startswith("\n"):
            text = text[1:]
        self._after_cr = False
        start = 0
        for match in _LINE_END.finditer(text):
            piece = text[start : match.start()]
            if self._partial_line:
                self._partial_line.append(piece)
                line = "".join(self._partial_line)
                self._partial_line.clear()
            else:
                line = piece
            start = match.end()
            self._after_cr = match.group() == "\r" and start == len(text)
            self._process_line(line, events)
        if start < len(text):
            self._partial_line.append(text[start:])
        return events

    def _process_line(self, line: str, events: list[ServerSentEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        self._fields_seen = True
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event_type = value
        elif name == "id" and "\0" not in value:
            self._last_id = value

    def _dispatch(self, events: list[ServerSentEvent]) -> None:
        if self._data:
            events.append(
                ServerSentEvent(
                    event=self._event_type or "message",
                    data="\n".join(self._data),
                    id=self._last_id,
                )
            )
        self._event_type = None
        self._data = []
        self._fields_seen = False
