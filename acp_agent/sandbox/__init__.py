"""An operating-system sandbox for the commands the agent runs: bubblewrap on Linux.

A leaf: the tools and the process-group code import it, it imports neither.
One module per idea:

- `_policy`: `SandboxPolicy`, what a command may touch besides the session's
  roots (writable tool caches, hidden secrets, the network, a private temp
  folder), its documented defaults and `sandbox_policy` to build the person's;
- `_settings`: the person's `[sandbox]` table in their `config.toml`;
- `_argv`: `bwrap_argv` and `Sandbox` (a policy on a session's roots), the
  command line that confines a command;
- `_terminal`: `TerminalWrap`, that command line as an editor's terminal runs
  it, which fails fast (`NO_SANDBOX_STATUS`) where the editor's side cannot
  start the sandbox;
- `_probe`: `probe_sandbox`, whether bwrap can run here, or why not and how to
  enable it (cached);
- `_denials`: `find_denials`, what the sandbox kept in, read from a command's
  exit and output.

`tools._process` wraps a local command when it is given a `Sandbox` (as a
`CommandSandbox`: the command line, the environment without the hidden
variables, what was kept in), and the shell an editor terminal's command
(`Sandbox.in_terminal`); which calls get one is the permission modes'
business (`capabilities.sandboxing`). `SandboxUnavailable` is what a start
that must be sandboxed raises where it cannot be.
"""

from __future__ import annotations

from acp_agent.sandbox._argv import Sandbox, bwrap_argv, places_in_tmp
from acp_agent.sandbox._denials import Denial, DenialKind, describe_denials, find_denials
from acp_agent.sandbox._policy import (
    DEFAULT_HIDDEN,
    DEFAULT_HIDDEN_ENV,
    DEFAULT_TOOL_CACHES,
    PROTECTED_IN_ROOTS,
    SandboxPolicy,
    sandbox_policy,
)
from acp_agent.sandbox._probe import (
    SandboxSupport,
    SandboxUnavailable,
    forget_probes,
    probe_sandbox,
    why_bwrap_failed,
)
from acp_agent.sandbox._settings import SandboxSettings, load_sandbox_settings
from acp_agent.sandbox._terminal import NO_SANDBOX_STATUS, TerminalWrap

__all__ = (
    "DEFAULT_HIDDEN",
    "DEFAULT_HIDDEN_ENV",
    "DEFAULT_TOOL_CACHES",
    "NO_SANDBOX_STATUS",
    "PROTECTED_IN_ROOTS",
    "Denial",
    "DenialKind",
    "Sandbox",
    "SandboxPolicy",
    "SandboxSettings",
    "SandboxSupport",
    "SandboxUnavailable",
    "TerminalWrap",
    "bwrap_argv",
    "describe_denials",
    "find_denials",
    "forget_probes",
    "load_sandbox_settings",
    "places_in_tmp",
    "probe_sandbox",
    "sandbox_policy",
    "why_bwrap_failed",
)
