"""`acp-agent doctor`: what works in this set-up, and what to fix.

    acp-agent doctor [--home DIR] [--script FILE] [--model ID] [--cwd DIR] [--store URL]
                     [--timeout S] [--mcp-timeout S] [--json]

Looks at what `acp-agent` would use with the same settings (`--home` or
`ACP_AGENT_HOME`, `--script` or `ACP_AGENT_SCRIPT`, `ACP_AGENT_MODEL` and the
provider variables, the config file), without serving anything: the version and
folders, the config file, the model new sessions would use and whether its
provider answers (`--timeout`, default 5 s), the session store (`--store` or
`ACP_AGENT_STORE` or `[store] url`: a PostgreSQL one is connected to and read:
its schema version and its lease holders), the command sandbox (bubblewrap), the
MCP servers (started once, within their startup timeout or `--mcp-timeout`), the
language servers, and the workspace's own files (`--cwd`, default the current
directory).

Prints one aligned row per check (`--json`: the shape in `_report`). Exit status
0 when a prompt would work (a model is configured and its provider answered, the
store is usable), 1 otherwise, 2 on a usage error. No key or credential is ever
printed: keys are named by the variable that holds them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

import anyio

from acp_agent.adapters.doctor._installation import check_config_file, check_paths, check_version
from acp_agent.adapters.doctor._lsp import check_lsp
from acp_agent.adapters.doctor._mcp import check_mcp, configured_servers
from acp_agent.adapters.doctor._model import check_model
from acp_agent.adapters.doctor._project import check_project
from acp_agent.adapters.doctor._redaction import redact_report
from acp_agent.adapters.doctor._report import Check, Report
from acp_agent.adapters.doctor._sandbox import check_sandbox
from acp_agent.adapters.doctor._screen import render_screen, wants_colour
from acp_agent.adapters.doctor._setup import DoctorSetup
from acp_agent.adapters.doctor._store import check_store
from acp_agent.adapters.doctor._warnings import install_warning_capture
from acp_agent.paths import resolve_paths

__all__ = ("main", "parser", "run_checks")

#: Exit status for a bad command line.
_USAGE_ERROR = 2


def parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    """The `doctor` command line (defaults from `env`, as `acp-agent` takes them)."""
    parser = argparse.ArgumentParser(
        prog="acp-agent doctor",
        description="Check the set-up acp-agent would serve with: what works, what to fix.",
        epilog="Exit status: 0 when a prompt would work, 1 when not, 2 on a usage error.",
    )
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        metavar="DIR",
        help="the agent's config, data, state and logs under DIR, as for acp-agent "
        "(env ACP_AGENT_HOME; default: the platform's user folders)",
    )
    parser.add_argument(
        "--script",
        type=Path,
        default=None,
        metavar="FILE",
        help="check the scripted model of FILE, as acp-agent --script (env ACP_AGENT_SCRIPT)",
    )
    parser.add_argument(
        "--model",
        default=None,
        metavar="ID",
        help="check this model (<provider>/<model>) instead of the default of new sessions",
    )
    parser.add_argument(
        "--cwd",
        type=Path,
        default=None,
        metavar="DIR",
        help="the workspace whose project files and MCP servers to check (default: here)",
    )
    parser.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="check the store at URL, as acp-agent --store (env ACP_AGENT_STORE; else "
        "[store] url in config.toml; default: the SQLite file in the data folder)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=5.0,
        metavar="S",
        help="seconds the provider may take to answer (default 5)",
    )
    parser.add_argument(
        "--mcp-timeout",
        type=_positive_seconds,
        default=None,
        metavar="S",
        help="at most this many seconds for each MCP server to start "
        "(default: each server's startup_timeout_s)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object for scripts")
    return parser


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def main(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Run `doctor` with `argv` (after the command name); returns the exit status."""
    env = dict(os.environ if env is None else env)
    out = sys.stdout if stdout is None else stdout
    try:
        args = parser(env).parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    setup = _setup(args, env)
    if isinstance(setup, str):
        print(f"acp-agent doctor: {setup}", file=sys.stderr)
        return _USAGE_ERROR
    install_warning_capture()
    report = redact_report(anyio.run(run_checks, setup), setup.secrets())
    if args.json:
        out.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(render_screen(report, colour=wants_colour(out.isatty(), env)))
    out.flush()
    return report.exit_status


def _setup(args: argparse.Namespace, env: Mapping[str, str]) -> DoctorSetup | str:
    """The run's inputs, or why the command line cannot be used."""
    home, home_source = args.home, "--home"
    if home is None and env.get("ACP_AGENT_HOME"):
        home, home_source = Path(env["ACP_AGENT_HOME"]), "ACP_AGENT_HOME"
    script, script_source = args.script, "--script"
    if script is None and env.get("ACP_AGENT_SCRIPT"):
        script, script_source = Path(env["ACP_AGENT_SCRIPT"]), "ACP_AGENT_SCRIPT"
    cwd = (args.cwd or Path.cwd()).expanduser().absolute()
    if not cwd.is_dir():
        return f"--cwd: not a directory: {cwd}"
    return DoctorSetup(
        paths=resolve_paths(home),
        home=home,
        home_source=home_source if home is not None else None,
        env=env,
        cwd=cwd,
        script=script,
        script_source=script_source if script is not None else None,
        model=args.model,
        timeout_s=args.timeout,
        mcp_timeout_s=args.mcp_timeout,
        store_url=args.store,
    )


async def run_checks(setup: DoctorSetup) -> Report:
    """Every check, in screen order.

    The provider is asked before the MCP servers start, not beside them: loading the
    MCP SDK blocks the event loop for a second or two, which would count against the
    provider's `--timeout` and its reported answer time.
    """
    first: list[Check] = [check_version(), check_paths(setup), check_config_file(setup)]
    store = check_store(setup)
    sandbox = check_sandbox(setup)
    lsp = check_lsp(setup)
    configured = configured_servers(setup)
    project = check_project(setup, configured)
    model = await check_model(setup)
    mcp = await check_mcp(setup, configured)
    return Report((*first, model, store, sandbox, *mcp, *lsp, project))
