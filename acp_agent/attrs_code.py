"""The methods attrs writes for our classes (and lsprotocol's), compiled once and kept
between runs.

attrs makes each class's `__init__` (and any `__eq__`, `__hash__` or `__repr__` it
makes) by writing their source and compiling it as the class is defined: every
process compiled the same source again for each of the ~250 classes a session
loads, about a third of what attrs costs at start-up, and for lsprotocol's ~550
(the language servers' types, loaded when the first one starts, and by the LSP front
end) half of the ~400 ms its import takes (python-attrs/attrs#575 asks for this
cache upstream). Python keeps a module's compiled code in `__pycache__`; this keeps
attrs' compiled methods beside our bytecode, in one file per package (read when the
package's first class is defined), and hands them back when attrs compiles the same
source under the same generated file name again. An entry whose source differs (a
class that changed) is compiled afresh, so nothing stale ever runs.

    install()   # first thing in a process, before those classes are defined
    ...         # attrs classes are defined, their methods read from the files
    save()      # once what the process needs is imported (and at exit)

Standard library only; it does nothing where attrs compiles otherwise than it
does today (`attr._make._compile_and_eval`), where attrs is not installed, or
where Python writes no bytecode (`PYTHONDONTWRITEBYTECODE`: the files are read,
never written).
"""

from __future__ import annotations
import __future__

import atexit
import contextlib
import marshal
import os
import sys
import threading
from collections.abc import Callable, Mapping
from types import CodeType
from typing import Any, Final

__all__ = ("KeptCode", "KeptCodes", "file_name", "install", "save")

#: The packages whose classes' methods are kept, a file each: ours, and lsprotocol's
#: many (another library's classes are compiled as attrs does).
_PACKAGES: Final = frozenset({"acp_agent", "protocol", "jsonbounds", "lsprotocol"})

#: How attrs names a class's generated source: `<attrs generated methods pkg.mod.Cls>`.
_GENERATED: Final = "<attrs generated "

#: Every `from __future__` flag: compiled code keeps those of the module compiling it.
_FUTURE_FLAGS: Final = sum(
    getattr(__future__, name).compiler_flag for name in __future__.all_feature_names
)

#: What a file's code is valid for: the interpreter's bytecode and the optimization
#: level compile() applies (`-O` drops asserts).
_FORMAT: Final = (1, sys.hexversion, sys.flags.optimize)

#: Entries past which a file drops what this process does not use.
_MAX_ENTRIES: Final = 2_000

#: attrs' `_compile_and_eval(script, globs, locs, filename)`, whose place this takes.
_Compile = Callable[[str, "dict[str, Any] | None", "Mapping[str, object] | None", str], None]


def _default_folder() -> str:
    """Beside our modules' bytecode: `acp_agent/__pycache__/` (or its place under
    `sys.pycache_prefix`, as Python puts a `.pyc`)."""
    folder = os.path.dirname(os.path.abspath(__file__))
    if sys.pycache_prefix is not None:
        drive, rest = os.path.splitdrive(folder)
        return os.path.join(sys.pycache_prefix, drive.rstrip(":"), rest.lstrip(os.sep))
    return os.path.join(folder, "__pycache__")


def file_name(package: str) -> str:
    """The name of `package`'s file: `attrs-code.<package>.<python>.bin`."""
    return f"attrs-code.{package}.{sys.implementation.cache_tag}.bin"


class KeptCode:
    """One package's file of compiled attrs methods: what was read from it, what this
    process compiled since, and the counts of each."""

    def __init__(self, path: str, *, flags: int = 0) -> None:
        self.path = path
        #: The `from __future__` flags attrs compiles with (its module's).
        self.flags = flags
        #: Generated file name -> (its source, its code marshalled: read when used, so a
        #: process pays only for the classes it defines), until it is handed back.
        self._codes: dict[str, tuple[str, bytes]] = {}
        self._changed = False
        #: The generated file names this process asked for (what a file past
        #: `_MAX_ENTRIES` keeps).
        self._used: set[str] = set()
        self._lock = threading.Lock()
        #: Methods handed back from the file, and compiled here.
        self.hits = 0
        self.misses = 0

    @property
    def held(self) -> int:
        """How many entries this process holds (read and not handed back yet, or new)."""
        return len(self._codes)

    def read(self) -> None:
        """Take the file's entries (a missing, unreadable or foreign file: none)."""
        codes = self._read_file()
        if codes:
            self._codes.update(codes)

    def _read_file(self) -> dict[str, tuple[str, bytes]]:
        try:
            with open(self.path, "rb") as file:
                # `loads` of the whole: `load` reads a file object in small pieces
                # (ten times slower here).
                stored = marshal.loads(file.read())
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        if not (isinstance(stored, tuple) and len(stored) == 2 and stored[0] == _FORMAT):
            return {}
        codes = stored[1]
        if not isinstance(codes, dict):
            return {}
        return {
            name: entry
            for name, entry in codes.items()
            if isinstance(name, str)
            and isinstance(entry, tuple)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and isinstance(entry[1], bytes)
        }

    def code(self, script: str, filename: str) -> CodeType:
        """The code of `script` as attrs compiles it under `filename`: the file's, when
        it was compiled from the very same source; compiled (and kept) otherwise."""
        self._used.add(filename)
        kept = self._codes.get(filename)
        if kept is not None and kept[0] == script:
            try:
                stored: object = marshal.loads(kept[1])
            except (EOFError, ValueError, TypeError):
                stored = None
            if isinstance(stored, CodeType):
                self.hits += 1
                # A class is defined once a process: its entry is not needed again here
                # (the file keeps it; lsprotocol's entries hold 1.9 MB).
                self._codes.pop(filename, None)
                return stored
        code: CodeType = compile(script, filename, "exec", flags=self.flags, dont_inherit=True)
        self.misses += 1
        if not _salted(script, filename):
            self._codes[filename] = (script, marshal.dumps(code))
            self._changed = True
        return code

    def save(self) -> bool:
        """Write the entries this process compiled to the file, merged with what it
        holds now (another process may have written since); whether it wrote. Never
        raises: a folder it cannot write leaves the next process to compile again."""
        if not self._changed or sys.dont_write_bytecode:
            return False
        with self._lock:
            self._changed = False
            codes = {**self._read_file(), **dict(self._codes)}
            if len(codes) > _MAX_ENTRIES:  # classes long renamed or gone: start anew
                codes = {name: codes[name] for name in list(self._used) if name in codes}
            temporary = f"{self.path}.{os.getpid()}.{threading.get_ident()}"
            try:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                with open(temporary, "wb") as file:
                    marshal.dump((_FORMAT, codes), file)
                os.replace(temporary, self.path)
            except (OSError, ValueError):
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                return False
        return True


class KeptCodes:
    """This process's kept code: a `KeptCode` per package, made (and its file read) when
    the package's first class is defined."""

    def __init__(self, folder: str, *, flags: int = 0) -> None:
        self.folder = folder
        self.flags = flags
        self.files: dict[str, KeptCode] = {}
        self._lock = threading.Lock()

    @property
    def hits(self) -> int:
        return sum(kept.hits for kept in list(self.files.values()))

    @property
    def misses(self) -> int:
        return sum(kept.misses for kept in list(self.files.values()))

    @property
    def held(self) -> int:
        return sum(kept.held for kept in list(self.files.values()))

    def file(self, package: str) -> KeptCode:
        """`package`'s file, read on first use."""
        kept = self.files.get(package)
        if kept is None:
            with self._lock:  # two threads defining its first classes read it once
                kept = self.files.get(package)
                if kept is None:
                    kept = KeptCode(os.path.join(self.folder, file_name(package)), flags=self.flags)
                    kept.read()
                    self.files[package] = kept
        return kept

    def save(self) -> bool:
        """Write each file this process compiled anything for (`KeptCode.save`); whether
        it wrote any."""
        wrote = [kept.save() for kept in list(self.files.values())]
        return any(wrote)


_kept: KeptCodes | None = None


def install(folder: str | None = None) -> KeptCodes | None:
    """Hand attrs the kept methods of our classes and lsprotocol's from now on (`folder`:
    where the files are; default beside our bytecode), and save what it compiles anew
    at exit. Once per process; None where attrs compiles otherwise or is not installed."""
    global _kept
    if _kept is not None:
        return _kept
    try:
        from attr import _make
    except ImportError:
        return None
    original = getattr(_make, "_compile_and_eval", None)
    code = getattr(original, "__code__", None)
    if not isinstance(code, CodeType) or code.co_varnames[:4] != (
        "script",
        "globs",
        "locs",
        "filename",
    ):
        return None  # another attrs: its classes are compiled as it does
    kept = KeptCodes(folder or _default_folder(), flags=code.co_flags & _FUTURE_FLAGS)
    compile_original: _Compile = original  # type: ignore[assignment]

    def compile_and_eval(
        script: str,
        globs: dict[str, Any] | None,
        locs: Mapping[str, object] | None = None,
        filename: str = "",
    ) -> None:
        package = _package(filename)
        if package not in _PACKAGES:
            compile_original(script, globs, locs, filename)
            return
        # attrs' own source, run as attrs runs it.
        eval(kept.file(package).code(script, filename), globs, locs)

    _make._compile_and_eval = compile_and_eval
    atexit.register(kept.save)
    _kept = kept
    return kept


def save() -> bool:
    """Write what this process compiled anew (see `KeptCodes.save`); False before
    `install` or with nothing new."""
    return _kept.save() if _kept is not None else False


def _package(filename: str) -> str | None:
    """The top package of the class attrs' generated `filename` is for, None if it is
    not one attrs generated."""
    # "<attrs generated methods acp_agent.core._events.TurnStarted>"
    if not filename.startswith(_GENERATED):
        return None
    qualified = filename[len(_GENERATED) :].partition(" ")[2]
    return qualified.partition(".")[0]


def _salted(script: str, filename: str) -> bool:
    """Whether the source holds this process's salt for the class's `__hash__`: attrs
    writes `hash("<attrs generated hash pkg.mod.Cls>")` into it, which differs from one
    process to the next (`PYTHONHASHSEED`), so the next never compiles the same source."""
    qualified = filename[len(_GENERATED) :].partition(" ")[2].rstrip(">")
    return str(hash(f"{_GENERATED}hash {qualified}>")) in script
