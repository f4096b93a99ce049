"""codex-acp 0.16, the peer the start-up targets are set against, run against a fake model.

`@zed-industries/codex-acp@0.16.0` is the Rust build of codex-acp (retired, still on
npm): the fastest ACP agent measured here (issue 39). `find_codex` returns its native
binary from the benchmarks' cache (`~/.cache/acp-agent/peers/codex-acp-0.16`),
installing it there with `npm install` when asked and it is missing; when that is not
possible it says why, and a benchmark leaves the peer's column out.

`codex_command` points it at an OpenAI-compatible server speaking the Responses API
(`tests/support/fake_provider.py`, `openai_responses_reply`): a custom model provider
with `wire_api = "responses"` and `env_key`, given as `-c` options, so nothing of the
person's own codex configuration is read (`codex_env` gives it a scratch home).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = (
    "CODEX_MODEL",
    "CODEX_PACKAGE",
    "codex_command",
    "codex_env",
    "find_codex",
    "peers_dir",
)

#: The npm package and version: the Rust build.
CODEX_PACKAGE = "@zed-industries/codex-acp@0.16.0"
#: A model codex knows (it warns in the reply about one it has no metadata for); the fake
#: model answers whatever is asked.
CODEX_MODEL = "gpt-5.4-mini"
#: The variable the fake provider's key is read from (`env_key`).
_KEY_VARIABLE = "FAKE_MODEL_API_KEY"
#: How long an `npm install` of the peer may take.
_INSTALL_TIMEOUT_S = 180.0


def peers_dir() -> Path:
    """Where the benchmarks keep the peers they install."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "acp-agent" / "peers"


def _installed_binary(prefix: Path) -> Path | None:
    # The npm package runs a per-platform native binary through node; the benchmark
    # spawns that binary itself, as an editor's registry entry would.
    for candidate in sorted(prefix.glob("node_modules/@zed-industries/codex-acp-*/bin/codex-acp")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def find_codex(*, install: bool) -> Path | str:
    """The codex-acp 0.16 binary, or the reason there is none (`install`: try npm)."""
    prefix = peers_dir() / "codex-acp-0.16"
    binary = _installed_binary(prefix)
    if binary is not None:
        return binary
    if not install:
        return f"not installed in {prefix} (run with --install-peer to install it with npm)"
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not on PATH"
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        result = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", CODEX_PACKAGE],
            capture_output=True,
            text=True,
            timeout=_INSTALL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"`npm install {CODEX_PACKAGE}` took over {_INSTALL_TIMEOUT_S:.0f} s"
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"`npm install {CODEX_PACKAGE}` failed: {last}"
    return _installed_binary(prefix) or f"{CODEX_PACKAGE} installed no binary for this platform"


def codex_command(binary: Path, base_url: str) -> list[str]:
    """codex-acp on the model provider at `base_url` (ending in `/v1`), Responses API."""
    overrides = {
        "model_provider": '"fake"',
        "model": f'"{CODEX_MODEL}"',
        "model_providers.fake.name": '"fake"',
        "model_providers.fake.base_url": f'"{base_url}"',
        "model_providers.fake.wire_api": '"responses"',
        "model_providers.fake.env_key": f'"{_KEY_VARIABLE}"',
    }
    command = [str(binary)]
    for key, value in overrides.items():
        command += ["-c", f"{key}={value}"]
    return command


def codex_env(home: Path) -> dict[str, str]:
    """This environment with codex's home (and HOME) in `home`, and the fake key."""
    home.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "CODEX_HOME": str(home), "HOME": str(home), _KEY_VARIABLE: "sk-fake"}
