"""How tests start acp-agent: the command line, a throwaway home, the scripts, the launcher.

`running_agent()` is the one way a test talks ACP to the real agent: `python -m
acp_agent` over real pipes, with a home of the test's own (a real SQLite file),
an optional script, flags and environment, initialized with the client
capabilities the test wants; when it stops, every line the agent wrote is checked
against the schema. `connected()` is the same for any agent command (the
protocol tests' small agent). `agent_command()` is the command line alone, for
tests that drive the process with another client (bare bytes, the official SDK).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from protocol import methods, types
from tests.support.client import AcpTestClient
from tests.support.editor_client import EditorClient
from tests.support.processes import reset_signals

__all__ = (
    "AGENT_HOME",
    "PROTOCOL_AGENT",
    "SCRIPTS",
    "agent_command",
    "agent_env",
    "connected",
    "default_mode_env",
    "openai_env",
    "remove_agent_home",
    "running_agent",
    "write_script",
)

#: Variables of the developer's environment that would change which model the agent uses.
_MODEL_VARIABLES = ("OPENAI_", "ANTHROPIC_", "ACP_AGENT_")

_home = tempfile.TemporaryDirectory(prefix="acp-agent-tests-")
#: Config, data, state and logs of the agents started with `agent_command` (never the user's).
AGENT_HOME = Path(_home.name)

#: Script files for the scripted model.
SCRIPTS = Path(__file__).resolve().parent / "scripts"

_Client = TypeVar("_Client", bound=AcpTestClient)


def agent_command(*extra: str, script: str | None = None) -> list[str]:
    """The real agent as a subprocess: `python -m acp_agent --home <tmp> [--script ...]`."""
    command = [sys.executable, "-m", "acp_agent", "--home", str(AGENT_HOME)]
    if script is not None:
        command += ["--script", str(SCRIPTS / script)]
    return command + list(extra)


def agent_env(**overrides: str) -> dict[str, str]:
    """This environment without model keys, base URLs or ACP_AGENT_* settings, plus `overrides`.

    So an agent under test never reaches a real provider with the developer's key.
    Code intelligence is off (`ACP_AGENT_LSP=0`) unless a test turns it on: its
    language servers are real processes, tested in `tests/lsp`, and every other test
    that edits a Python file would start them. New sessions are in the `ask` mode
    (`ACP_AGENT_MODE=ask`), which the tests written before the sandboxed mode became
    the default were written for; the sandboxed mode's tests (`tests/sandbox`) start
    the agent without it (`default_mode_env`).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(_MODEL_VARIABLES)}
    # A prompt waits longer for MCP servers than a person's would: on a loaded 2-core
    # machine a Python server's start has taken over the default 5 s.
    quiet = {"ACP_AGENT_LSP": "0", "ACP_AGENT_MODE": "ask", "ACP_AGENT_MCP_STARTUP_WAIT_S": "30"}
    return {**env, **quiet, **overrides}


def default_mode_env(**overrides: str) -> dict[str, str]:
    """`agent_env(**overrides)` without `ACP_AGENT_MODE`: new sessions get the default mode."""
    env = agent_env(**overrides)
    del env["ACP_AGENT_MODE"]
    return env


def openai_env(
    base_url: str, *, model: str = "gpt-fake", api_key: str = "sk-test-0123456789abcdefghij"
) -> dict[str, str]:
    """`agent_env()` with new sessions on `openai/<model>`, served at `base_url` (a fake
    provider's) with `api_key`."""
    return agent_env(
        OPENAI_BASE_URL=f"{base_url}/v1", OPENAI_API_KEY=api_key, ACP_AGENT_MODEL=f"openai/{model}"
    )


def line_of_request(body: bytes) -> str:
    """Which line of work a model request comes from, `main` or `branch` (a fake
    provider's `route`): a branch inherits main's identity block, then gets its own."""
    messages = json.loads(body)["messages"]
    texts = " ".join(m["content"] for m in messages if isinstance(m.get("content"), str))
    return "branch" if "(the history before that belongs to" in texts else "main"


def remove_agent_home() -> None:
    """Delete the throwaway home (at the end of the test session)."""
    _home.cleanup()


def write_script(path: Path, *replies: list[dict[str, Any]], **extra: Any) -> Path:
    """Write a script of `replies` to `path`; returns it."""
    path.write_text(json.dumps({"replies": list(replies), **extra}))
    return path


@asynccontextmanager
async def connected(
    client: _Client,
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    umask: int = -1,
    exit_code: int | None = None,
    default_signals: Collection[signal.Signals] = (),
) -> AsyncIterator[_Client]:
    """`client` talking to a new `command` process over its stdin and stdout.

    On exit the process is stopped (its stdin closed) and every line it wrote,
    those written while stopping included, is checked against the schema and a
    strict client's demands (`tests.support.strict_updates`); with
    `exit_code`, so is its exit status. `env` is its whole environment (default:
    ours), `umask` its umask (-1 keeps ours); `default_signals` start at their
    default action in it, whatever ours are (an ignored signal is inherited).
    """
    async with client:
        await client.start_io(
            *command,
            env=None if env is None else dict(env),
            umask=umask,
            preexec_fn=reset_signals(default_signals),
        )
        yield client
    problems = client.wire_problems()
    assert problems == [], "\n".join(problems)
    if exit_code is not None:
        assert client.process is not None
        assert client.process.returncode == exit_code


@asynccontextmanager
async def running_agent(
    home: Path,
    *,
    script: Path | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    capabilities: types.ClientCapabilities | None = None,
    client: EditorClient | None = None,
    unstable: bool = False,
    initialize: bool = True,
    umask: int = -1,
    exit_code: int | None = None,
    default_signals: Collection[signal.Signals] = (),
) -> AsyncIterator[EditorClient]:
    """The real agent with `home`, initialized; stopped and its wire checked on exit.

    - `script`: the scripted model's replies (`--script`); `args`: more flags;
    - `env`: the agent's whole environment (default `agent_env()`: no model keys);
    - `unstable`: `--unstable`, and a client that opts in too;
    - `client`: the client to talk through (default: a new `EditorClient`);
    - `capabilities`: what the client advertises in `initialize` (default: what
      `client.capabilities()` says); `initialize=False` leaves `initialize` to the test;
    - `umask`: the agent's umask (-1 keeps ours);
    - `exit_code`: when given, the status the agent must have exited with;
    - `default_signals`: signals the agent starts with at their default action, whatever
      ours are (the signal tests: under `nohup` this process ignores SIGHUP).
    """
    command = [sys.executable, "-m", "acp_agent", "--home", str(home), *args]
    if script is not None:
        command += ["--script", str(script)]
    if unstable:
        command.append("--unstable")
    if client is None:
        client = EditorClient(unstable=unstable)
    assert client.unstable == unstable, "the client and the agent opt in to unstable together"
    if capabilities is None:
        capabilities = client.capabilities()
    async with connected(
        client,
        command,
        env=agent_env() if env is None else env,
        umask=umask,
        exit_code=exit_code,
        default_signals=default_signals,
    ):
        if initialize:
            await client.request(
                methods.INITIALIZE,
                types.InitializeRequest(protocol_version=1, client_capabilities=capabilities),
            )
        yield client


#: The protocol-level test agent (see `tests/support/protocol_agent.py`).
PROTOCOL_AGENT = [sys.executable, str(Path(__file__).resolve().parent / "protocol_agent.py")]
