"""How many questions a real coding session asks: the sandboxed mode against ask.

Usage (from the repository root, with the virtual environment that has acp-agent
installed, bwrap on PATH):

    .venv/bin/python benchmarks/sandbox_session.py [--modes sandboxed,ask]

For each mode, a fresh clone of this repository (under /var/tmp) is the workspace
and the real `acp-agent` (a fresh `--home`, the scripted model) plays the same
session, the benchmark answering every question "allow once" as a person who lets
the work go on would:

1. `git status --short`;
2. this repository's own `pytest` on one test file (`tests/test_url_credentials.py`);
3. `ruff check` of one package;
4. a virtual environment made inside the workspace, `pip install` of a local wheel
   into it, offline (`--no-index --find-links`), and an import of what it installed;
5. a note written with the `write` tool;
6. `git add` and `git commit` of it.

Reported per mode: the questions asked (commands, edits), whether every call did what
it should (each result completed, the package importable, the commit made, the tests
passed), the calls that ran in the sandbox (`_meta`), and the session's wall time.
The sandboxed mode's target: no question, every command doing its work. Then what
checkpointing a sandboxed command costs on such a clone: the first walk of the roots
(every file read and kept) and the median of later ones (two per command: before and
after).

It is a report: nothing here asserts a count. Linux only (bubblewrap).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acp_agent.capabilities.session import CheckpointStore, RootsIndex  # noqa: E402
from protocol import types  # noqa: E402
from tests.support import (  # noqa: E402
    EditorClient,
    agent_env,
    default_mode_env,
    running_agent,
    write_script,
)
from tests.support.editor_client import allow_all  # noqa: E402

TIMEOUT_S = 600.0
#: What the session's package holds, checked after it is installed.
PACKAGE_VALUE = "installed offline"


def _wheel(folder: Path) -> Path:
    """A minimal pure-Python wheel, `benchpkg` 1.0, made by hand (nothing to download)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "benchpkg-1.0-py3-none-any.whl"
    files = {
        "benchpkg/__init__.py": f"VALUE = {PACKAGE_VALUE!r}\n",
        "benchpkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: benchpkg\nVersion: 1.0\n",
        "benchpkg-1.0.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},,\n" for name in files) + "benchpkg-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr("benchpkg-1.0.dist-info/RECORD", record)
    return path


def _call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_call": {"name": tool, "arguments": arguments, "id": call_id}}


def _script(path: Path, wheels: Path) -> Path:
    python = sys.executable
    ruff = str(Path(sys.executable).parent / "ruff")
    commit = (
        "git add NOTES.md && git -c user.name=bench -c user.email=bench@example.com "
        "commit -q -m 'Add notes'"
    )
    return write_script(
        path,
        [_call("status", "shell", command="git status --short")],
        [
            _call(
                "pytest",
                "shell",
                command=f"{python} -m pytest -q -n 0 tests/test_url_credentials.py",
            )
        ],
        [_call("ruff", "shell", command=f"{ruff} check acp_agent/sandbox")],
        [_call("venv", "shell", command=f"{python} -m venv .venv-bench")],
        [
            _call(
                "pip",
                "shell",
                command=f".venv-bench/bin/pip install -q --no-index --find-links {wheels} benchpkg",
            )
        ],
        [
            _call(
                "import",
                "shell",
                command=".venv-bench/bin/python -c 'import benchpkg; print(benchpkg.VALUE)'",
            )
        ],
        [_call("note", "write", path="NOTES.md", content="Checked: tests, lint, install.\n")],
        [_call("commit", "shell", command=commit)],
        [{"text": "Done: tests pass, lint is clean, the package installs, the note is in."}],
    )


def _clone(into: Path) -> Path:
    workspace = into / "workspace"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(workspace)], check=True)
    return workspace


def _last_commit(workspace: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(workspace), "log", "-1", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _finished(updates: list[types.SessionUpdate]) -> dict[str, types.ToolCallProgress]:
    return {
        str(u.tool_call_id): u
        for u in updates
        if isinstance(u, types.ToolCallProgress)
        and u.status in (types.ToolCallStatus.COMPLETED, types.ToolCallStatus.FAILED)
    }


def _text(update: types.ToolCallProgress) -> str:
    return "\n".join(
        part.content.text
        for part in update.content or ()
        if isinstance(part, types.Content) and isinstance(part.content, types.TextContent)
    )


async def _session(mode: str, base: Path, wheels: Path) -> dict[str, Any]:
    workspace = _clone(base)
    script = _script(base / "session.json", wheels)
    # The default mode as a person gets it (no ACP_AGENT_MODE), or the one named.
    env = default_mode_env() if mode == "sandboxed" else agent_env(ACP_AGENT_MODE=mode)
    started = time.perf_counter()
    client = EditorClient(decide=allow_all)
    async with running_agent(base / "home", script=script, env=env, client=client) as client:
        session_id = await client.new_session(workspace)
        answer = await client.prompt(session_id, "Check the work and commit a note")
        updates = client.updates_for(session_id)
    elapsed = time.perf_counter() - started
    finished = _finished(updates)
    calls = ("status", "pytest", "ruff", "venv", "pip", "import", "note", "commit")
    failed = [
        call
        for call in calls
        if finished.get(call) is None or finished[call].status is types.ToolCallStatus.FAILED
    ]
    log = _last_commit(workspace)
    checks = {
        "every call completed": not failed,
        "tests passed": "passed" in _text(finished["pytest"]) if "pytest" in finished else False,
        "package imported": PACKAGE_VALUE in _text(finished["import"])
        if "import" in finished
        else False,
        "commit made": log == "Add notes",
    }
    kinds = {str(r.tool_call.tool_call_id): r.tool_call.kind for r in client.permission_requests}
    commands = sum(1 for kind in kinds.values() if kind is types.ToolKind.EXECUTE)
    sandboxed = sorted(
        call
        for call, update in finished.items()
        if update.meta and update.meta.get("acp-agent", {}).get("sandboxed") is True
    )
    return {
        "mode": mode,
        "questions": len(client.permission_requests),
        "command questions": commands,
        "edit questions": len(kinds) - commands,
        "failed": failed,
        "checks": checks,
        "sandboxed calls": sandboxed,
        "stop": answer.stop_reason.value,
        "seconds": elapsed,
    }


def _walks(runs: int = 9) -> tuple[int, float, float]:
    """(files, first walk ms, median later walk ms) of the roots index on a fresh clone."""
    base = Path(tempfile.mkdtemp(prefix="acp-agent-bench-walk-", dir="/var/tmp"))
    try:
        workspace = _clone(base)
        time.sleep(2.5)  # past the racy window: files as old as a real workspace's
        store = CheckpointStore(base / "checkpoints")
        index = RootsIndex(lambda data: store.save("bench", data, durable=False))
        started = time.perf_counter()
        tree = index.tree([workspace])
        first = (time.perf_counter() - started) * 1000
        later = []
        for _ in range(runs):
            started = time.perf_counter()
            index.tree([workspace])
            later.append((time.perf_counter() - started) * 1000)
        return len(tree.files), first, statistics.median(later)
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def main(modes: list[str]) -> None:
    wheels = Path(tempfile.mkdtemp(prefix="acp-agent-bench-wheels-", dir="/var/tmp"))
    _wheel(wheels)
    results = []
    try:
        for mode in modes:
            base = Path(tempfile.mkdtemp(prefix=f"acp-agent-bench-{mode}-", dir="/var/tmp"))
            try:
                with_timeout = asyncio.wait_for(_session(mode, base, wheels), TIMEOUT_S)
                results.append(await with_timeout)
            finally:
                shutil.rmtree(base, ignore_errors=True)
    finally:
        shutil.rmtree(wheels, ignore_errors=True)
    print(
        f"{'mode':<10} {'questions':>9} {'commands':>8} {'edits':>5} {'all did their work':>18}"
        f" {'sandboxed calls':>15} {'seconds':>7}"
    )
    for r in results:
        ok = all(r["checks"].values())
        print(
            f"{r['mode']:<10} {r['questions']:>9} {r['command questions']:>8} "
            f"{r['edit questions']:>5} {'yes' if ok else 'NO':>18} {len(r['sandboxed calls']):>15} "
            f"{r['seconds']:>7.1f}"
        )
        if not ok:
            print(f"  {r['mode']}: {r['checks']}, failed calls: {r['failed']}")
    files, first, later = _walks()
    print(
        f"checkpoints of a sandboxed command on the clone ({files} files): first walk "
        f"{first:.0f} ms (every file read and kept), later walks {later:.0f} ms median "
        "(two per command)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="sandboxed,ask", help="comma-separated modes")
    args = parser.parse_args()
    asyncio.run(main([mode.strip() for mode in args.modes.split(",") if mode.strip()]))
