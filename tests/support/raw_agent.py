"""acp-agent as a bare subprocess: exact bytes in, lines out, no client library between.

For framing and bad-input tests. Reading happens on threads so a test can
wait for a line with a timeout, and stderr is drained so the agent never
blocks on it.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from typing import IO, Any

from tests.support.processes import reset_signals

__all__ = ("RawAgent",)

#: How long to wait for a line that should come; only failing tests wait this long.
LINE_TIMEOUT_S = 10.0


class RawAgent:
    """One agent process; `send` bytes, `read_message` JSON lines.

    `default_signals` start at their default action in the agent, whatever ours are.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        default_signals: Collection[signal.Signals] = (),
    ):
        self.process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            preexec_fn=reset_signals(default_signals),
        )
        #: Every line written to the agent (bad ones included), and every line it wrote.
        self.sent: list[bytes] = []
        self.received: list[bytes] = []
        self.stderr = bytearray()
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self._readers = [
            threading.Thread(target=self._read_stdout, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self.process.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def send(self, data: bytes) -> None:
        """Write `data` as it is (add the newline yourself)."""
        assert self.process.stdin is not None
        self.sent.append(data)
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send_json(self, message: Any) -> None:
        """Write `message` as one JSON line."""
        self.send(json.dumps(message).encode() + b"\n")

    def read_line(self, timeout_s: float = LINE_TIMEOUT_S) -> bytes:
        """The next line from stdout (without its newline); fails the test on timeout or EOF."""
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"no line from the agent within {timeout_s} s") from None
        if line is None:
            self._lines.put(None)
            raise AssertionError("the agent closed stdout")
        return line

    def read_message(self, timeout_s: float = LINE_TIMEOUT_S) -> dict[str, Any]:
        """The next line, decoded."""
        message = json.loads(self.read_line(timeout_s))
        assert isinstance(message, dict), message
        return message

    def close_stdin(self) -> None:
        """End the agent's input (idempotent)."""
        assert self.process.stdin is not None
        self.process.stdin.close()

    def wait_for_exit(self, timeout_s: float = LINE_TIMEOUT_S) -> tuple[int, float]:
        """Wait for the agent to exit: (exit code, seconds waited)."""
        started = time.monotonic()
        returncode = self.process.wait(timeout=timeout_s)
        for reader in self._readers:
            reader.join(timeout=timeout_s)
        return returncode, time.monotonic() - started

    def stop(self) -> int:
        """Close stdin and wait; kill if the agent ignores it. Returns the exit code."""
        self.close_stdin()
        try:
            self.process.wait(timeout=LINE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for reader in self._readers:
            reader.join(timeout=LINE_TIMEOUT_S)
        return self.process.returncode

    def _read_stdout(self, stream: IO[bytes]) -> None:
        for line in stream:
            line = line.rstrip(b"\n")
            self.received.append(line)
            self._lines.put(line)
        self._lines.put(None)
        stream.close()

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            self.stderr.extend(chunk)
        stream.close()
