"""`acp-agent exec` end to end: the real command, its agent child, a fake provider over HTTP.

Each test runs `python -m acp_agent exec ...` as a person's script would, with a
home of its own (a real SQLite store) and the model served by `FakeProviderServer`
in the OpenAI streaming format, and checks stdout, stderr, the exit status and the
workspace on disk.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from protocol import methods, types
from tests.support import WireValidator, agent_env, openai_env, running_agent, write_script
from tests.support.app_server import running_server, socket_client
from tests.support.fake_provider import (
    Chunk,
    Exchange,
    FakeProviderServer,
    json_error,
    openai_chunk,
    openai_reply,
    openai_stream,
    openai_tool_calls,
)
from tests.support.processes import command_lines, run_unread

TIMEOUT_S = 60


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_text("old\n")
    return root


def exec_command(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "acp_agent", "exec", "--home", str(home), *args]


def run_exec(
    server: FakeProviderServer,
    home: Path,
    *args: str,
    stdin: str | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        exec_command(home, *args),
        input=stdin,
        capture_output=True,
        text=True,
        env=openai_env(server.base_url),
        cwd=cwd,
        timeout=TIMEOUT_S,
        check=False,
    )


def json_lines(stdout: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert all(line["version"] == 1 for line in lines), lines
    return lines


def result_of(stdout: str) -> dict[str, Any]:
    lines = json_lines(stdout)
    assert lines[-1]["type"] == "result", lines[-1]
    return lines[-1]


def last_tool_message(server: FakeProviderServer) -> str:
    messages = server.requests[-1].json()["messages"]
    return str([m for m in messages if m["role"] == "tool"][-1]["content"])


def test_exec_prints_the_final_answer_and_nothing_else(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    server.add(openai_reply("The notes say old."))
    done = run_exec(server, tmp_path / "home", "--cwd", str(workspace), "What do the notes say?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The notes say old.\n"
    assert done.stderr == ""  # not a terminal: quiet
    sent = server.requests[0].json()["messages"]
    assert "What do the notes say?" in json.dumps(sent)


def test_exec_reads_the_prompt_from_stdin(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    server.add(openai_reply("Read it."))
    done = run_exec(
        server, tmp_path / "home", "--cwd", str(workspace), "-", stdin="A prompt from a pipe"
    )
    assert done.returncode == 0, done.stderr
    assert "A prompt from a pipe" in json.dumps(server.requests[0].json()["messages"])


def test_json_lines_carry_every_update_valid_against_the_schema(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    server.add(
        openai_tool_calls(("call_w", "write", {"path": "new.md", "content": "new\n"})),
        openai_reply("Wrote the notes."),
    )
    done = run_exec(
        server,
        tmp_path / "home",
        "--cwd",
        str(workspace),
        "--approve",
        "edits",
        "--json",
        "Write the notes.",
    )
    assert done.returncode == 0, done.stderr
    lines = json_lines(done.stdout)
    assert lines[0]["type"] == "session"
    session_id = lines[0]["sessionId"]
    assert lines[0]["cwd"] == str(workspace.resolve())
    assert lines[0]["resumed"] is False
    updates = [line for line in lines if line["type"] == "update"]
    validator = WireValidator()
    for line in updates:
        wire = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": line["sessionId"], "update": line["update"]},
        }
        assert validator.line_problems(json.dumps(wire).encode(), {}) == [], line
    kinds = [line["update"]["sessionUpdate"] for line in updates]
    assert {"tool_call", "tool_call_update", "agent_message_chunk"} <= set(kinds)
    diff = [
        item
        for line in updates
        if line["update"]["sessionUpdate"] == "tool_call_update"
        for item in line["update"].get("content") or []
        if item["type"] == "diff"
    ]
    assert diff
    assert diff[0]["newText"] == "new\n"
    (permission,) = [line for line in lines if line["type"] == "permission"]
    assert permission["decision"] == "allowed"
    assert permission["toolCallId"] == "call_w"
    assert permission["kind"] == "edit"
    result = lines[-1]
    assert result["type"] == "result"
    assert result["sessionId"] == session_id
    assert result["stopReason"] == "end_turn"
    assert result["exitCode"] == 0
    assert result["error"] is None
    assert result["messageId"].startswith("turn_")
    assert "usage" in result  # null: this provider reports none
    assert (workspace / "new.md").read_text() == "new\n"


@pytest.mark.parametrize(
    ("approve", "call", "allowed"),
    [
        ("never", ("write", {"path": "new.md", "content": "new\n"}), False),
        ("edits", ("write", {"path": "new.md", "content": "new\n"}), True),
        ("edits", ("shell", {"command": "echo hi > made.txt"}), False),
        ("all", ("shell", {"command": "echo hi > made.txt"}), True),
    ],
)
def test_approve_policies_inside_the_workspace(
    tmp_path: Path,
    server: FakeProviderServer,
    workspace: Path,
    approve: str,
    call: tuple[str, dict[str, Any]],
    allowed: bool,
) -> None:
    name, arguments = call
    server.add(openai_tool_calls(("call_1", name, arguments)), openai_reply("Finished."))
    done = run_exec(
        server, tmp_path / "home", "--cwd", str(workspace), "--approve", approve, "--json", "Go."
    )
    lines = json_lines(done.stdout)
    (permission,) = [line for line in lines if line["type"] == "permission"]
    changed = (workspace / "new.md").exists() or (workspace / "made.txt").exists()
    if allowed:
        assert done.returncode == 0, done.stderr
        assert permission["decision"] == "allowed"
        assert changed
    else:
        assert done.returncode == 3, done.stderr
        assert permission["decision"] == "refused"
        assert "refused:" in done.stderr  # a refusal is always told
        assert result_of(done.stdout)["exitCode"] == 3
        assert not changed
        assert "rejected" in last_tool_message(server)  # the model is told


@pytest.mark.parametrize(
    ("approve", "tool"), [("edits", "write"), ("all", "write"), ("all", "shell")]
)
def test_outside_the_roots_is_always_refused(
    tmp_path: Path, server: FakeProviderServer, workspace: Path, approve: str, tool: str
) -> None:
    outside = tmp_path / "outside.txt"
    arguments = (
        {"path": str(outside), "content": "x\n"}
        if tool == "write"
        else {"command": "echo x > outside.txt", "cwd": str(tmp_path)}
    )
    server.add(openai_tool_calls(("call_out", tool, arguments)), openai_reply("Could not."))
    done = run_exec(
        server, tmp_path / "home", "--cwd", str(workspace), "--approve", approve, "--json", "Go."
    )
    assert done.returncode == 3, done.stderr
    (permission,) = [line for line in json_lines(done.stdout) if line["type"] == "permission"]
    assert permission["decision"] == "refused"
    assert "outside" in permission["reason"]
    assert not outside.exists()


def test_a_provider_failure_exits_1_with_the_error(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    failure = json_error(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
    server.add(failure)
    done = run_exec(server, tmp_path / "home", "--cwd", str(workspace), "--json", "Hello")
    assert done.returncode == 1, done.stderr
    result = result_of(done.stdout)
    assert result["exitCode"] == 1
    assert result["error"]["kind"] == "authentication"
    assert done.stderr.startswith("acp-agent: ")


def test_a_run_with_no_model_to_answer_stores_nothing(tmp_path: Path, workspace: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run(
        exec_command(home, "--cwd", str(workspace), "--json", "Hello"),
        capture_output=True,
        text=True,
        env=agent_env(),  # no model keys, no configured model
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    result = result_of(done.stdout)
    assert result["error"]["kind"] == "not_configured"
    assert result["sessionId"] is None  # nothing was kept
    assert "No model is configured" in done.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "acp_agent", "sessions", "--home", str(home), "list"],
        capture_output=True,
        text=True,
        env=agent_env(),
        timeout=TIMEOUT_S,
        check=False,
    )
    assert (listed.returncode, listed.stdout) == (0, "")
    assert "no sessions" in listed.stderr


def test_a_refusal_exits_1_and_says_so(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    refused = Exchange(
        chunks=[openai_stream(openai_chunk({"refusal": "No."}), openai_chunk({}, "content_filter"))]
    )
    server.add(refused)
    done = run_exec(server, tmp_path / "home", "--cwd", str(workspace), "--json", "Do it")
    result = result_of(done.stdout)
    assert result["stopReason"] == "refusal", result
    assert done.returncode == 1
    assert result["exitCode"] == 1
    assert "the turn ended with refusal" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--cwd", "/nonexistent/dir", "Hello"],
        ["--add-dir", "/nonexistent/dir", "Hello"],
        ["   "],
        ["--mode", "no-such-mode", "Hello"],
        ["--model", "nowhere/none", "Hello"],
        ["--approve", "sometimes", "Hello"],
        ["--resume", "sess_unknown", "Hello"],
        ["--continue", "Hello"],
        [],
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, server: FakeProviderServer, workspace: Path, args: list[str]
) -> None:
    if "--cwd" not in args:
        args = ["--cwd", str(workspace), *args]
    done = run_exec(server, tmp_path / "home", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr
    assert server.requests == []  # nothing reached the model
    # Nor is anything stored (`--model` is refused once the session exists): no empty
    # session for a later `--continue` to pick up.
    listed = subprocess.run(
        [sys.executable, "-m", "acp_agent", "sessions", "--home", str(tmp_path / "home"), "list"],
        capture_output=True,
        text=True,
        env=agent_env(),
        timeout=TIMEOUT_S,
        check=False,
    )
    assert listed.stdout == ""


def test_resume_and_continue_go_on_with_the_same_session(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    home = tmp_path / "home"
    server.add(openai_reply("First."), openai_reply("Second."), openai_reply("Third."))
    first = run_exec(server, home, "--cwd", str(workspace), "--json", "Remember the word kiwi.")
    session_id = result_of(first.stdout)["sessionId"]
    second = run_exec(server, home, "--cwd", str(workspace), "--json", "--continue", "And now?")
    assert second.returncode == 0, second.stderr
    lines = json_lines(second.stdout)
    assert lines[0]["resumed"] is True, lines[:3]
    assert lines[0]["sessionId"] == session_id
    assert "kiwi" in json.dumps(server.requests[1].json()["messages"])
    third = run_exec(server, home, "--cwd", str(workspace), "--resume", session_id, "Again?")
    assert third.returncode == 0, third.stderr
    assert third.stdout == "Third.\n"
    assert "And now?" in json.dumps(server.requests[2].json()["messages"])


def test_resume_works_in_the_sessions_own_workspace_and_refuses_another_cwd(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    home = tmp_path / "home"
    other = tmp_path / "other"
    other.mkdir()
    server.add(
        openai_reply("First."),
        openai_tool_calls(("call_w", "write", {"path": "made.md", "content": "made\n"})),
        openai_reply("Made it."),
    )
    first = run_exec(server, home, "--cwd", str(workspace), "--json", "Hello")
    session_id = result_of(first.stdout)["sessionId"]
    # An explicit --cwd that is not the session's workspace: refused, nothing runs.
    refused = run_exec(
        server, home, "--cwd", str(other), "--resume", session_id, "--approve", "edits", "Make"
    )
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert str(workspace.resolve()) in refused.stderr
    assert str(other.resolve()) in refused.stderr
    assert len(server.requests) == 1
    # No --cwd, run from another folder: the session's own workspace, said and used.
    args = ["--resume", session_id, "--approve", "edits", "--json", "Make it."]
    resumed = run_exec(server, home, *args, cwd=other)
    assert resumed.returncode == 0, resumed.stderr
    assert json_lines(resumed.stdout)[0]["cwd"] == str(workspace.resolve())
    assert (workspace / "made.md").read_text() == "made\n"
    assert not (other / "made.md").exists()


async def test_a_session_open_in_another_process_exits_4_naming_it(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    home = tmp_path / "home"
    async with running_agent(home, env=openai_env(server.base_url)) as client:
        session_id = await client.new_session(workspace)
        assert client.process is not None
        holder_pid = client.process.pid
        done = run_exec(server, home, "--cwd", str(workspace), "--resume", session_id, "Hi")
    assert done.returncode == 4, done.stderr
    assert f"pid {holder_pid}" in done.stderr
    assert server.requests == []


def test_ctrl_c_cancels_the_turn_and_exits_130(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    slow = Exchange(
        chunks=[
            openai_stream(openai_chunk({"content": "Thinking it over"}), done=False),
            Chunk(openai_stream(openai_chunk({}, "stop")), delay_s=30),
        ]
    )
    server.add(slow)
    process = subprocess.Popen(
        exec_command(tmp_path / "home", "--cwd", str(workspace), "--json", "Take your time."),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=openai_env(server.base_url),
    )
    assert process.stdout is not None
    started = _wait_for_line(process.stdout, lambda line: "agent_message_chunk" in line)
    process.send_signal(signal.SIGINT)
    began = time.monotonic()
    rest, stderr = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 130, stderr
    assert time.monotonic() - began < 15
    result = result_of(started + rest)
    assert result["stopReason"] == "cancelled"
    assert result["exitCode"] == 130
    assert "interrupted" in stderr


def test_a_reader_that_goes_away_cancels_the_turn_and_exec_ends_quietly(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    # `exec --json | head -1`: the next line written meets a closed pipe.
    slow = Exchange(
        chunks=[
            openai_stream(openai_chunk({"content": "Thinking"}), done=False),
            Chunk(openai_stream(openai_chunk({"content": " it over"}), done=False), delay_s=1),
            Chunk(openai_stream(openai_chunk({}, "stop")), delay_s=30),
        ]
    )
    server.add(slow)
    home = tmp_path / "home"
    with subprocess.Popen(
        exec_command(home, "--cwd", str(workspace), "--json", "Take your time."),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=openai_env(server.base_url),
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        _wait_for_line(process.stdout, lambda line: "agent_message_chunk" in line)
        process.stdout.close()
        began = time.monotonic()
        stderr = process.stderr.read()
        process.wait(TIMEOUT_S)
    assert (process.returncode, stderr) == (141, "")  # 128 + SIGPIPE, no traceback
    assert time.monotonic() - began < 15  # cancelled, not waited out
    assert not _agents_serving(home)


def test_an_answer_nobody_reads_ends_exec_quietly(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    # `exec "..." | true`: the answer is written after the turn ended, to a closed pipe.
    server.add(openai_reply("Nobody reads this."))
    home = tmp_path / "home"
    command = exec_command(home, "--cwd", str(workspace), "Hello")
    ended = run_unread(command, env=openai_env(server.base_url), timeout_s=TIMEOUT_S)
    assert ended == (141, "")
    assert len(server.requests) == 1  # the turn ran; only its answer went unread
    assert not _agents_serving(home)


def _wait_for_line(stream: Any, matches: Any) -> str:
    seen = ""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen += line
        if matches(line):
            return seen
    raise AssertionError(f"no such line in: {seen!r}")


def test_the_agent_child_is_gone_when_exec_ends(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    server.add(openai_reply("Bye."))
    done = run_exec(server, tmp_path / "home", "--cwd", str(workspace), "Hello")
    assert done.returncode == 0
    assert not _agents_serving(tmp_path / "home")


def _agents_serving(home: Path) -> Sequence[int]:
    """Agent processes (Linux /proc) started with `--home home`, other than an exec."""
    return [
        pid
        for pid, argv in command_lines().items()
        if str(home) in argv and "exec" not in argv and pid != os.getpid()
    ]


def test_a_second_root_counts_for_edits_and_is_reported(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "AGENTS.md").write_text("Second root rule: always answer in haiku.\n")
    target = other / "made.md"
    server.add(
        openai_tool_calls(("call_o", "write", {"path": str(target), "content": "made\n"})),
        openai_reply("Made it."),
    )
    home = tmp_path / "home"
    args = ["--cwd", str(workspace), "--add-dir", str(other), "--approve", "edits", "--json"]
    done = run_exec(server, home, *args, "Make it in the other root.")
    assert done.returncode == 0, done.stderr
    lines = json_lines(done.stdout)
    assert lines[0]["additionalDirectories"] == [str(other.resolve())]
    (permission,) = [line for line in lines if line["type"] == "permission"]
    assert permission["decision"] == "allowed"
    assert target.read_text() == "made\n"
    assert "always answer in haiku" in json.dumps(server.requests[0].json()["messages"])
    listed = subprocess.run(
        [sys.executable, "-m", "acp_agent", "sessions", "--home", str(home), "list", "--json"],
        capture_output=True,
        text=True,
        env=openai_env(server.base_url),
        timeout=TIMEOUT_S,
        check=False,
    )
    (info,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert info["additionalDirectories"] == [str(other.resolve())]


async def test_connect_runs_the_prompt_on_the_app_server(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    home = tmp_path / "home"
    # The server answers from its script; an agent of exec's own would ask the provider.
    script = write_script(tmp_path / "script.json", [{"text": "Answered by the server."}])
    server.add(openai_reply("Answered by an agent of exec's own."))
    async with running_server(home, script=script) as app:
        done = await asyncio.to_thread(
            run_exec, server, home, "--cwd", str(workspace), "--json", "--connect", "Hi"
        )
        assert done.returncode == 0, done.stderr
        result = result_of(done.stdout)
        assert result["stopReason"] == "end_turn"
        texts = [
            line["update"]["content"]["text"]
            for line in json_lines(done.stdout)
            if line["type"] == "update" and line["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        assert "".join(texts) == "Answered by the server."
        # The session is the server's: another of its clients finds it.
        async with socket_client(app.socket) as client:
            listed = await client.request(
                methods.SESSION_LIST, types.ListSessionsRequest(cwd=str(workspace))
            )
            assert [str(s.session_id) for s in listed.sessions] == [result["sessionId"]]
    assert server.requests == []


def test_connect_with_no_server_exits_1_saying_how_to_start_one(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    done = run_exec(server, tmp_path / "home", "--cwd", str(workspace), "--connect", "Hi")
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "no server listens on" in done.stderr
    assert server.requests == []


def test_connect_with_no_server_says_why_in_the_result(
    tmp_path: Path, server: FakeProviderServer, workspace: Path
) -> None:
    args = ["--cwd", str(workspace), "--connect", "--json", "Hi"]
    done = run_exec(server, tmp_path / "home", *args)
    assert done.returncode == 1, (done.stdout, done.stderr)
    error = result_of(done.stdout)["error"]
    assert error["kind"] == "agent_exited"
    assert error["message"].startswith("no server listens on "), error
    assert done.stderr.count("no server listens on") == 1  # told once


@pytest.mark.parametrize("flag", [["--script", "script.json"], ["--max-turn-requests", "3"]])
def test_connect_refuses_flags_the_server_would_ignore(
    tmp_path: Path, server: FakeProviderServer, workspace: Path, flag: list[str]
) -> None:
    done = run_exec(server, tmp_path / "home", "--cwd", str(workspace), "--connect", *flag, "Hi")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith(f"acp-agent: {flag[0]} does not apply with --connect"), done
    assert done.stderr.count("\n") == 1
    assert server.requests == []


@pytest.mark.parametrize("script", ["garbage{", None])
def test_a_bad_script_is_a_usage_error_told_once(
    tmp_path: Path, server: FakeProviderServer, workspace: Path, script: str | None
) -> None:
    path = tmp_path / "script.json"
    if script is not None:
        path.write_text(script)
    done = run_exec(server, tmp_path / "home", "--cwd", str(workspace), "--script", str(path), "Hi")
    assert done.returncode == 2, (done.stdout, done.stderr)
    # The agent's own line, and nothing after it.
    assert done.stderr.startswith(f"acp-agent: cannot read script {path}: "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert server.requests == []


@pytest.mark.parametrize("command", ["_exec", "_sessions"])
def test_a_headless_command_starts_its_agent_having_loaded_only_its_command_line(
    command: str,
) -> None:
    # What `exec` and `sessions` load before they start their agent: no asyncio, anyio,
    # attrs, cattrs or wire types, which load beside the agent's own start (in a fresh
    # interpreter).
    probe = (
        "import json, sys\n"
        f"import acp_agent.cli, acp_agent.adapters.headless.{command}\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout
    )
    heavy = ("asyncio", "anyio", "attr", "attrs", "cattrs", "protocol")
    assert "acp_agent.adapters.headless._launch" in loaded
    assert [m for m in loaded if m.split(".")[0] in heavy] == []


def test_an_agent_started_for_a_run_that_never_talks_to_it_is_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp_agent.adapters.headless import _exec, _exec_run

    launched: list[subprocess.Popen[bytes]] = []

    def launch(agent_args: Sequence[str]) -> subprocess.Popen[bytes]:
        launched.append(_exec_launch(agent_args))
        return launched[-1]

    def interrupted(*args: object) -> int:
        raise KeyboardInterrupt  # Ctrl-C while the run's modules load

    _exec_launch = _exec.launch_agent
    monkeypatch.setattr(_exec, "launch_agent", launch)
    monkeypatch.setattr(_exec_run, "ExecRun", interrupted)
    status = _exec.main(["--home", str(tmp_path / "home"), "--cwd", str(tmp_path), "Hello"])
    assert status == _exec.EXIT_INTERRUPTED
    (agent,) = launched
    # Its input closed, it ended as it does at the end of an editor's: status 0.
    assert agent.returncode == 0
    assert not _agents_serving(tmp_path / "home")
