"""attrs' methods kept between runs (`acp_agent.attrs_code`): a second process compiles
none of our classes (nor lsprotocol's), gets the very methods attrs would compile, and
never runs a stale or damaged entry.

Each probe runs in a fresh interpreter (attrs defines a class's methods once per
process), with the files in a folder of the test's own.
"""

from __future__ import annotations

import ast
import json
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_agent import attrs_code, cli
from tests.support.agent import agent_env
from tests.support.raw_agent import RawAgent

#: Modules that define ~200 of our attrs classes (the core, the capabilities, the tools).
MODULES = ("acp_agent.core", "acp_agent.capabilities._assembly", "acp_agent.tools")

#: What a probe prints: the kept code's counts, whether it wrote, and a digest of every
#: method attrs made for the classes of `MODULES` (its bytecode, constants, names).
PROBE = """
import importlib, json, sys, types
import attrs
from acp_agent import attrs_code
folder = sys.argv[1]
kept = attrs_code.install(folder) if folder else None
for name in sys.argv[2].split(","):
    importlib.import_module(name)
def digest(code):
    consts = [digest(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return [code.co_code.hex(), consts, code.co_names, code.co_varnames, code.co_flags,
            code.co_filename, code.co_firstlineno]
methods = {}
for module in list(sys.modules.values()):
    if not (getattr(module, "__name__", "") or "").startswith(
        ("acp_agent.", "protocol.", "lsprotocol.")
    ):
        continue
    for value in list(vars(module).values()):
        if isinstance(value, type) and attrs.has(value) and value.__module__ == module.__name__:
            for name, member in vars(value).items():
                code = getattr(member, "__code__", None)
                if code is not None and code.co_filename.startswith("<attrs generated"):
                    methods[f"{value.__module__}.{value.__qualname__}.{name}"] = digest(code)
saved = attrs_code.save()
print(json.dumps({"hits": kept.hits if kept else 0, "misses": kept.misses if kept else 0,
                  "held": kept.held if kept else 0, "saved": saved, "methods": methods}))
"""


def probe(folder: Path | None, *, modules: tuple[str, ...] = MODULES, **env: str) -> dict[str, Any]:
    """Run `PROBE` in a fresh interpreter that writes bytecode; its report."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # A fixed seed: attrs writes a per-process salt into a hashable class's `__hash__`,
    # and the digests of two processes are compared.
    environment |= {"PYTHONHASHSEED": "0", **env}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(folder or ""), ",".join(modules)],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def test_a_second_run_compiles_none_of_our_classes_and_gets_the_same_methods(
    tmp_path: Path,
) -> None:
    first = probe(tmp_path)
    assert first["hits"] == 0
    assert first["misses"] > 150  # every class compiled, and written for the next run
    assert first["saved"] is True
    written = {path.name: path.stat().st_mtime_ns for path in tmp_path.iterdir()}
    assert file_of(tmp_path).name in written

    second = probe(tmp_path)
    # Only the hashable classes compile again: their source holds this run's salt.
    assert second["misses"] < 10
    assert second["hits"] == first["misses"] - second["misses"]
    assert second["saved"] is False  # nothing new: the files are left as they were
    assert second["held"] == 0  # each entry let go once its class was defined
    assert {path.name: path.stat().st_mtime_ns for path in tmp_path.iterdir()} == written

    # The methods are those attrs compiles itself (a process without the file).
    plain = probe(None)
    assert plain["methods"] == second["methods"] == first["methods"]
    assert len(plain["methods"]) > 150


def test_lsprotocols_classes_are_kept_in_a_file_of_their_own(tmp_path: Path) -> None:
    # ~550 classes, half of what importing lsprotocol costs: the language servers' types.
    first = probe(tmp_path, modules=("lsprotocol.types",))
    assert first["misses"] > 500
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        file_of(tmp_path, "lsprotocol").name
    ]
    second = probe(tmp_path, modules=("lsprotocol.types",))
    assert second["hits"] > 500
    assert second["misses"] < 10
    assert second["methods"] == first["methods"]
    assert len(first["methods"]) > 1000
    assert second["held"] == 0  # its 1.9 MB let go as its classes were defined


def file_of(folder: Path, package: str = "acp_agent") -> Path:
    return folder / attrs_code.file_name(package)


def entries(path: Path) -> dict[str, tuple[str, bytes]]:
    stored = marshal.loads(path.read_bytes())
    codes: dict[str, tuple[str, bytes]] = stored[1]
    return codes


def test_an_entry_whose_source_changed_is_compiled_anew_and_replaced(tmp_path: Path) -> None:
    path = file_of(tmp_path)
    probe(tmp_path, modules=("acp_agent.core._events",))
    codes = entries(path)
    name = next(n for n in codes if n.endswith(" acp_agent.core._events.TurnInterrupted>"))
    # An older class's methods: another source, and code that would fail if it ran.
    stale = "def __init__(self, *args, **kwargs):\n    raise RuntimeError('stale')\n"
    codes[name] = (stale, marshal.dumps(compile(stale, name, "exec")))
    stored = marshal.loads(path.read_bytes())
    path.write_bytes(marshal.dumps((stored[0], codes)))

    check = (
        "from acp_agent.core import TurnInterrupted, TurnId\n"
        "import json; print(json.dumps(repr(TurnInterrupted(TurnId('t1')))))\n"
    )
    install = f"from acp_agent import attrs_code; attrs_code.install({str(tmp_path)!r})\n"
    out = subprocess.run(
        [sys.executable, "-c", install + check],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        check=True,
    )
    assert "TurnInterrupted(" in json.loads(out.stdout)
    assert entries(path)[name][0] != stale  # saved at exit with today's source


@pytest.mark.parametrize("content", [b"", b"not marshal at all", b"\xff" * 64, None])
def test_a_damaged_or_foreign_file_is_ignored_and_rewritten(
    tmp_path: Path, content: bytes | None
) -> None:
    path = file_of(tmp_path)
    if content is None:  # a file another interpreter's version wrote
        path.write_bytes(marshal.dumps(((1, 0x03000000, 0), {})))
    else:
        path.write_bytes(content)
    report = probe(tmp_path, modules=("acp_agent.core._events",))
    assert report["hits"] == 0
    assert report["misses"] > 50
    assert report["saved"] is True
    # Rewritten whole: what this run compiled (less the salted, never kept).
    assert 50 < len(entries(path)) <= report["misses"]


def test_only_the_classes_of_our_packages_and_lsprotocol_are_kept(tmp_path: Path) -> None:
    path = file_of(tmp_path)
    script = (
        "from acp_agent import attrs_code\n"
        f"kept = attrs_code.install({str(tmp_path)!r})\n"
        "import attrs\n"
        "@attrs.frozen\n"
        "class Theirs:\n"
        "    x: int\n"
        "import acp_agent.runtime_setup\n"
        "print(attrs_code.save(), Theirs(1))\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environment, check=True
    )
    assert out.stdout.split() == ["True", "Theirs(x=1)"]
    names = list(entries(path))
    assert names  # runtime_setup's class
    assert all(" acp_agent." in n or " protocol." in n or " jsonbounds." in n for n in names)
    assert not any("Theirs" in n for n in names)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # none for `__main__`


def test_nothing_is_written_where_python_writes_no_bytecode(tmp_path: Path) -> None:
    report = probe(tmp_path, modules=("acp_agent.core._events",), PYTHONDONTWRITEBYTECODE="1")
    assert report["misses"] > 50
    assert report["saved"] is False
    assert list(tmp_path.iterdir()) == []


def test_an_attrs_that_compiles_otherwise_is_left_alone() -> None:
    script = (
        "import attr._make\n"
        "del attr._make._compile_and_eval\n"
        "from acp_agent import attrs_code\n"
        "print(attrs_code.install('/nonexistent'))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"


def test_the_default_files_sit_with_our_bytecode() -> None:
    assert attrs_code.file_name("acp_agent") == (
        f"attrs-code.acp_agent.{sys.implementation.cache_tag}.bin"
    )
    if sys.pycache_prefix is None:
        folder = Path(attrs_code._default_folder())
        assert folder == Path(attrs_code.__file__).resolve().parent / "__pycache__"


def test_the_stdio_agent_keeps_what_it_compiled_for_the_next_start(tmp_path: Path) -> None:
    # The agent ends with `os._exit` (no exit hooks): it saves before, here under a
    # bytecode prefix of the test's own, where its `.pyc` files go too.
    prefix = tmp_path / "pycache"
    environment = agent_env(PYTHONPYCACHEPREFIX=str(prefix))
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    agent = RawAgent(
        [sys.executable, "-m", "acp_agent", "--home", str(tmp_path / "home")], env=environment
    )
    try:
        agent.send_json(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        )
        assert agent.read_message()["id"] == 1
        agent.send_json(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/new",
                "params": {"cwd": str(tmp_path), "mcpServers": []},
            }
        )
        assert "sessionId" in agent.read_message(timeout_s=60)["result"]
    finally:
        status = agent.stop()
    assert status == 0
    files = list(prefix.rglob(attrs_code.file_name("acp_agent")))
    assert len(files) == 1
    names = list(entries(files[0]))
    # The first class the stdio agent defines, once it knows it is no bridge.
    assert any(n.endswith(" acp_agent.runtime_setup.RuntimeSettings>") for n in names)
    assert any(" acp_agent.core._events." in n for n in names)


def test_every_command_the_cli_dispatches_is_known_as_one() -> None:
    # `main` keeps the collector's start-up threshold for the stdio agent only: the
    # commands it tells apart by name must be those it dispatches.
    tree = ast.parse(Path(cli.__file__).read_text())
    dispatched = {
        node.comparators[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Name)
        and node.left.id == "command"
        and isinstance(node.ops[0], ast.Eq)
        and isinstance(node.comparators[0], ast.Constant)
    }
    assert dispatched - {"serve"} == cli._COMMANDS


def test_a_file_past_its_bound_keeps_only_what_this_run_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In-process, on a file of its own: classes long renamed or gone are dropped.
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "attrs-code.test.bin"
    old = attrs_code.KeptCode(str(path))
    for index in range(attrs_code._MAX_ENTRIES):
        old.code(f"x = {index}\n", f"<attrs generated methods acp_agent.gone.C{index}>")
    assert old.save()
    kept = attrs_code.KeptCode(str(path))
    kept.read()
    code = kept.code("y = 1\n", "<attrs generated methods acp_agent.here.D>")
    assert kept.save()
    assert list(entries(path)) == ["<attrs generated methods acp_agent.here.D>"]
    namespace: dict[str, object] = {}
    exec(code, namespace)
    assert namespace["y"] == 1
