"""What a sandboxed command may touch besides the session's roots: the policy and its defaults.

A `SandboxPolicy` names places, never mounts: the writable ones besides the
roots (tool caches, what the person adds), the hidden ones (never readable:
credentials, the agent's own folders, sockets that lead out of the sandbox),
the ones kept read-only inside every root (`.git/hooks`, `.git/config`: code
there runs later, outside the sandbox), the network, a private temporary
folder, and the environment variables a command does not get (the model
providers' keys: `DEFAULT_HIDDEN_ENV`, and those the person's providers name).
Paths that do not exist are kept: each command's mounts are worked out when it
starts (`_argv`), so a cache or a secret made later counts from then on.

`sandbox_policy` builds the person's policy from the defaults here, their
`[sandbox]` settings (`_settings`: more writable or hidden places and variables,
defaults shown after all) and the agent's folders (always hidden).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

import attrs

from acp_agent.paths import AgentPaths
from acp_agent.sandbox._settings import SandboxSettings
from acp_agent.values import Value

__all__ = (
    "DEFAULT_HIDDEN",
    "DEFAULT_HIDDEN_ENV",
    "DEFAULT_TOOL_CACHES",
    "PROTECTED_IN_ROOTS",
    "SandboxPolicy",
    "sandbox_policy",
)

#: Tool caches a sandboxed command may write (those that exist), so installs and builds
#: work inside: caches only, never a tool's config or `bin` folder (a planted program
#: there would run later outside the sandbox), which is why `~/.cargo` is its
#: `registry` and `git` and `~/.m2` its `repository`.
DEFAULT_TOOL_CACHES: Final = (
    "~/.cache/pip",
    "~/.cache/uv",
    "~/.cache/pypoetry",
    "~/.cache/pre-commit",
    "~/.cache/go-build",
    "~/go/pkg/mod",
    "~/.npm",
    "~/.cache/yarn",
    "~/.local/share/pnpm/store",
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/.m2/repository",
    "~/.gradle/caches",
)

#: Never readable in the sandbox (a folder shows empty and unreadable, a file unreadable):
#: credentials and config files holding keys, and sockets that lead out of the sandbox
#: whatever the network setting (a container engine's, or a session's agent sockets under
#: its runtime folder, added by `sandbox_policy`). The agent's own folders are added too.
DEFAULT_HIDDEN: Final = (
    # Keys and cloud credentials.
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.oci",
    "~/.docker/config.json",
    "~/.password-store",
    "~/.local/share/keyrings",
    "~/.vault-token",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.config/rclone",
    # Config files holding passwords or tokens.
    "~/.netrc",
    "~/.pgpass",
    "~/.my.cnf",
    "~/.s3cfg",
    "~/.boto",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.config/hub",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.codex/auth.json",
    "~/.claude/.credentials.json",
    # Sockets: a command that reaches one acts outside the sandbox.
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
)

#: Environment variables a sandboxed command never gets: the model providers' API keys
#: (the agent's, not the command's: a command that read one could spend or leak it) and
#: the agent's own store address (a PostgreSQL URL may hold a password, and its Unix
#: socket stays reachable). `sandbox_policy` adds the variables the configured providers
#: name (`api_key_env`) and the person's `[sandbox] hidden_env`.
DEFAULT_HIDDEN_ENV: Final = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "COHERE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "ACP_AGENT_STORE",
)

#: Inside every root, kept read-only: git runs hooks and reads `core.hooksPath`,
#: `core.fsmonitor` and the like from these, later, outside the sandbox. `git commit`
#: works without writing either.
PROTECTED_IN_ROOTS: Final = (".git/hooks", ".git/config")


@attrs.frozen
class SandboxPolicy(Value):
    """What a sandboxed command may do besides writing the session's roots.

    The file system is read-only except the roots, `writable` and `temp_dir`;
    `hidden` is never readable; inside each root `protected_in_roots` (relative
    paths) stays read-only. Where two of them nest, the deeper one wins: a secret
    inside a root stays hidden, a root inside a hidden folder stays usable.
    """

    #: Writable besides the roots (tool caches, the person's additions).
    writable: tuple[Path, ...] = ()
    #: Never readable.
    hidden: tuple[Path, ...] = ()
    #: Relative to each root: read-only there.
    protected_in_roots: tuple[str, ...] = PROTECTED_IN_ROOTS
    #: Whether the command may use the network (False: a network namespace of its own,
    #: with only its own loopback).
    network: bool = False
    #: The session's private temporary folder (TMPDIR), kept across its commands; the
    #: caller makes and removes it. Without one, TMPDIR is the command's own `/tmp`.
    temp_dir: Path | None = None
    #: Environment variables the command does not get (removed before bwrap starts).
    hidden_env: tuple[str, ...] = ()


def sandbox_policy(
    *,
    agent_paths: AgentPaths | None,
    settings: SandboxSettings | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    network: bool = False,
    temp_dir: Path | None = None,
    key_variables: Iterable[str] = (),
) -> SandboxPolicy:
    """The person's policy: the defaults, their `[sandbox]` settings, the agent's folders.

    `home` (default: the user's) is what `~` means; `env` (default: this process's)
    gives the session's runtime folder (`XDG_RUNTIME_DIR`: its agent sockets, such as
    ssh-agent's and gpg-agent's) and `SSH_AUTH_SOCK`, both hidden. `key_variables`:
    the variables the configured model providers read their keys from, hidden from
    the command's environment with `DEFAULT_HIDDEN_ENV`.
    """
    settings = settings if settings is not None else SandboxSettings()
    home = home if home is not None else Path.home()
    env = os.environ if env is None else env
    writable = [*(DEFAULT_TOOL_CACHES if settings.tool_caches else ()), *settings.writable]
    shown = set(_expanded(settings.readable, home))
    defaults = [place for place in DEFAULT_HIDDEN if _expanded([place], home)[0] not in shown]
    hidden: list[str | Path] = [*defaults, *settings.hidden]
    if agent_paths is not None:
        hidden += [
            agent_paths.config_dir,
            agent_paths.data_dir,
            agent_paths.state_dir,
            agent_paths.log_dir,
        ]
    runtime_dir = env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    hidden.append(runtime_dir)
    if env.get("SSH_AUTH_SOCK"):
        hidden.append(env["SSH_AUTH_SOCK"])
    hidden_env = dict.fromkeys([*DEFAULT_HIDDEN_ENV, *key_variables, *settings.hidden_env])
    return SandboxPolicy(
        writable=_expanded(writable, home),
        hidden=_expanded(hidden, home),
        network=network,
        temp_dir=temp_dir,
        hidden_env=tuple(name for name in hidden_env if name),
    )


def _expanded(paths: Iterable[str | Path], home: Path) -> tuple[Path, ...]:
    """Each path with `~` as `home`, in order, once each (absolute ones only)."""
    found: dict[Path, None] = {}
    for entry in paths:
        text = str(entry)
        path = home / text[2:] if text == "~" or text.startswith("~/") else Path(text)
        if path.is_absolute():
            found.setdefault(path, None)
    return tuple(found)
