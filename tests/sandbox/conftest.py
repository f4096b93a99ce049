"""Sandbox tests run real bubblewrap on real files, in a play area outside `/tmp`.

Outside `/tmp` because a sandboxed command gets an empty `/tmp` of its own: a
place under it would be out of reach for that reason alone, not because the
sandbox keeps it read-only or hidden. Under CI, bwrap that cannot run fails
these tests (`.ci/run` installs and probes it first); elsewhere they are
skipped, saying why.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from acp_agent.paths import AgentPaths, resolve_paths
from acp_agent.sandbox import Sandbox, SandboxPolicy, probe_sandbox, sandbox_policy

__all__ = ("Play", "needs_bwrap", "outside", "play")

#: Where the play area goes: outside `/tmp`, writable by anyone.
_PLAY_PARENT = Path("/var/tmp")


def needs_bwrap() -> None:
    """Skip (fail under CI) when bwrap cannot run here."""
    support = probe_sandbox()
    if support.available:
        return
    message = f"bubblewrap cannot run here: {support.reason}"
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI must test the sandbox; .ci/run installs bubblewrap)")
    pytest.skip(message)


@attrs.frozen
class Play:
    """A workspace, a place outside it, a person's home with secrets, the agent's folders."""

    base: Path
    workspace: Path
    outside: Path
    home: Path
    temp: Path
    agent: AgentPaths

    def policy(self, **changes: object) -> SandboxPolicy:
        """The person's policy here (no network unless `network=True`)."""
        policy = sandbox_policy(agent_paths=self.agent, home=self.home, env={}, temp_dir=self.temp)
        return attrs.evolve(policy, **changes)

    def sandbox(self, **changes: object) -> Sandbox:
        return Sandbox(self.policy(**changes), (self.workspace,))


@pytest.fixture
def play() -> Iterator[Play]:
    needs_bwrap()
    base = Path(tempfile.mkdtemp(prefix="acp-agent-sandbox-", dir=_PLAY_PARENT)).resolve()
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".netrc").write_text("machine example.com password hunter2\n")
    (home / ".cache" / "pip").mkdir(parents=True)
    agent = resolve_paths(base / "agent-home")
    agent.data_dir.mkdir(parents=True)
    (agent.data_dir / "sessions.sqlite3").write_text("the store\n")
    for place in ("workspace", "outside", "temp"):
        (base / place).mkdir()
    try:
        yield Play(base, base / "workspace", base / "outside", home, base / "temp", agent)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the roots and outside `/tmp` (where the sandbox shows it read-only)."""
    needs_bwrap()
    place = Path(tempfile.mkdtemp(prefix="acp-agent-outside-", dir=_PLAY_PARENT)).resolve()
    try:
        yield place
    finally:
        shutil.rmtree(place, ignore_errors=True)
