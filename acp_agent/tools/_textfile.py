"""Text files as the tools see them: encoding, line endings, stamps, and the two channels.

A file is read and written through one of two channels, decided per file:

- the **client** (`fs/read_text_file` / `fs/write_text_file`), when the editor
  offers it and the file is plain UTF-8 (or new): reads then see unsaved
  buffers and the editor tracks the edit for review;
- the **disk**, otherwise: bytes decoded as UTF-8 (with or without a BOM),
  UTF-16 with a BOM, or a single-byte encoding (cp1252, else latin-1), and
  written back in the same encoding, atomically (temporary file + rename), so
  the bytes of untouched parts never change. Legacy encodings stay on disk
  because the editor's text channel would re-encode them.

A stamp is a digest of what the channel returned; an edit compares the
branch's stamp with a fresh one (`file_modified_since_read`).

An editor that does not answer in time is a refusal: a read (`editor_timeout`)
read nothing; a write (`write_unconfirmed`) may or may not have landed, so the
checkpoint treats the file as changed outside the agent from then on
(`FileChanges.after_unconfirmed_write`) and the model is told to read it first.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final, Literal

import anyio
import attrs

from acp_agent.toolkit import ClientBridge, ClientTimedOut, FileChanges
from acp_agent.values import Value

__all__ = (
    "MAX_TEXT_BYTES",
    "FileRefusal",
    "FileSnapshot",
    "TextCodec",
    "detect_codec",
    "first_changed_line",
    "line_ending",
    "load_snapshot",
    "path_lock",
    "require_fresh_read",
    "store_text",
)

#: Files larger than this are not read whole (nor edited): use grep or shell.
MAX_TEXT_BYTES: Final = 16 * 1024 * 1024

_BOMS: Final = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


class FileRefusal(Exception):
    """A file operation refused for a reason the model can act on; `code` names the reason.

    `message` says what happened (what the person reads); `advice`, what the model
    can do about it (it reads both: `model_text`).
    """

    def __init__(self, code: str, message: str, advice: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.advice = advice

    @property
    def model_text(self) -> str:
        return f"{self.message}; {self.advice}" if self.advice else self.message


@attrs.frozen
class TextCodec(Value):
    """How a file's bytes become text and back: a codec and the byte-order mark it carries."""

    codec: str
    bom: bytes = b""

    #: Plain UTF-8 without a BOM: the only encoding the editor's text channel keeps as is.
    @property
    def is_plain_utf8(self) -> bool:
        return self.codec == "utf-8" and not self.bom

    @property
    def label(self) -> str:
        return f"{self.codec} with BOM" if self.bom else self.codec

    def decode(self, data: bytes) -> str:
        return data[len(self.bom) :].decode(self.codec)

    def encode(self, text: str) -> bytes:
        """The bytes of `text`; `FileRefusal` when it has characters the encoding lacks."""
        try:
            return self.bom + text.encode(self.codec)
        except UnicodeEncodeError as error:
            bad = text[error.start : error.end]
            raise FileRefusal(
                "unencodable_text",
                f"the file is {self.label}, which cannot hold {bad!r}",
                "the file keeps its encoding, so use characters it can represent",
            ) from None


UTF8: Final = TextCodec("utf-8")


def detect_codec(data: bytes) -> TextCodec | None:
    """The encoding of `data`, or None when it looks binary (a NUL byte, no UTF-16 BOM)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            candidate = TextCodec(codec, bom)
            try:
                candidate.decode(data)
            except UnicodeDecodeError:
                break
            return candidate
    if b"\x00" in data:
        return None
    for codec in ("utf-8", "cp1252"):
        try:
            data.decode(codec)
        except UnicodeDecodeError:
            continue
        return TextCodec(codec)
    return TextCodec("latin-1")


def line_ending(text: str) -> Literal["crlf", "lf", "mixed", "none"]:
    """The file's line-ending style."""
    crlf = text.count("\r\n")
    lf = text.count("\n")
    if lf == 0:
        return "none"
    if crlf == lf:
        return "crlf"
    if crlf == 0:
        return "lf"
    return "mixed"


def first_changed_line(old: str, new: str) -> int:
    """The 1-based line where `new` first differs from `old`."""
    limit = min(len(old), len(new))
    index = 0
    while index < limit and old[index] == new[index]:
        index += 1
    return old.count("\n", 0, index) + 1


def _stamp(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@attrs.frozen
class FileSnapshot(Value):
    """A file's content as the branch sees it now."""

    path: Path
    #: The text, or None when the file does not exist.
    text: str | None
    #: How the file is encoded (UTF-8 for a file that does not exist yet).
    codec: TextCodec
    #: "client" (the editor's buffer) or "disk".
    via: Literal["client", "disk"]
    #: What `ReadStamps` records for this content; None when the file does not exist.
    stamp: str | None
    #: The file's size on disk in bytes (0 when it does not exist).
    size: int

    @property
    def exists(self) -> bool:
        return self.text is not None

    def stamp_after_write(self, text: str) -> str:
        """The stamp a read would record right after `text` was written over this file.

        Both channels agree: the client's text of a plain UTF-8 file digests
        as its UTF-8 bytes, which are the bytes on disk.
        """
        return _stamp(self.codec.encode(text))


def _read_bytes(path: Path) -> tuple[bytes | None, int]:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None, 0
    if path.is_dir():
        raise FileRefusal("is_a_directory", f"{path} is a directory", "use `list` or `glob`")
    if info.st_size > MAX_TEXT_BYTES:
        raise FileRefusal(
            "file_too_large",
            f"{path} is {info.st_size} bytes, more than the {MAX_TEXT_BYTES} bytes "
            "the file tools read whole",
            "use `grep`, or `shell` with head/tail/sed",
        )
    try:
        return path.read_bytes(), info.st_size
    except PermissionError:
        message = f"{path} cannot be read: permission denied"
        raise FileRefusal("permission_denied", message) from None


async def load_snapshot(path: Path, client: ClientBridge) -> FileSnapshot:
    """Read `path` through the right channel; raises `FileRefusal` for binary or huge files."""
    data, size = await anyio.to_thread.run_sync(_read_bytes, path)
    if data is None:
        return FileSnapshot(path, None, UTF8, "disk", None, 0)
    codec = detect_codec(data)
    if codec is None:
        raise FileRefusal(
            "binary_file",
            f"{path} is a binary file ({size} bytes); the text tools do not read or edit it",
        )
    if client.can_read_files and codec.is_plain_utf8:
        try:
            text = await client.read_text_file(str(path))
        except ClientTimedOut as exc:
            raise FileRefusal(
                "editor_timeout",
                f"the editor did not answer reading {path} within {exc.timeout_s:g} s; "
                "nothing was read. Retry later, or read it another way (`shell`)",
            ) from None
        return FileSnapshot(path, text, codec, "client", _stamp(text.encode("utf-8")), size)
    return FileSnapshot(path, codec.decode(data), codec, "disk", _stamp(data), size)


def _write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` through a temporary file beside it and a rename.

    An existing file keeps its mode; a new one gets the mode any new file gets
    (`0o666` less the umask, or the directory's default ACL).
    """
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = _create_temporary_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp_name, mode)
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise


#: How the temporary file is opened: like `tempfile.mkstemp`, never following a symlink.
_TEMPORARY_FLAGS: Final = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def _create_temporary_beside(path: Path) -> tuple[int, str]:
    """A new, empty `.<name>.<random>.tmp` next to `path`: its descriptor and its path.

    Not `tempfile.mkstemp`: that creates the file 0o600, so a new file written
    through it would end up private. Correcting the mode afterwards would need
    the umask, and reading it (`os.umask`) means setting it, which races with
    every other thread creating a file meanwhile. Opening with mode 0o666 lets
    the kernel apply the umask (or the directory's default ACL) itself, exactly
    as for any program creating a file, with nothing read or set.
    """
    for _ in range(100):
        candidate = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(candidate, _TEMPORARY_FLAGS, 0o666), str(candidate)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


async def store_text(
    snapshot: FileSnapshot, text: str, client: ClientBridge, changes: FileChanges | None = None
) -> Literal["client", "disk"]:
    """Write `text` over the file of `snapshot`, in its encoding; returns the channel used.

    Through the editor when it offers writes and the file is plain UTF-8 (or
    new), else atomically on disk. Raises `FileRefusal` when `text` does not
    fit the file's encoding, or when the editor does not confirm the write in
    time (`write_unconfirmed`). `changes` is told first (a checkpoint of the file).
    """
    data = snapshot.codec.encode(text)
    if changes is not None:
        await changes.before_write(snapshot.path, data)
    if client.can_write_files and snapshot.codec.is_plain_utf8:
        await anyio.to_thread.run_sync(_make_parent, snapshot.path)
        try:
            await client.write_text_file(str(snapshot.path), text)
        except ClientTimedOut as exc:
            if changes is not None:
                await changes.after_unconfirmed_write(snapshot.path)
            raise FileRefusal(
                "write_unconfirmed",
                f"the editor did not confirm the write within {exc.timeout_s:g} s: the file "
                "may have changed; read it before retrying",
            ) from None
        return "client"
    await anyio.to_thread.run_sync(_write_atomically, snapshot.path, data)
    return "disk"


def _make_parent(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)


_locks: weakref.WeakValueDictionary[Path, anyio.Lock] = weakref.WeakValueDictionary()


@contextlib.asynccontextmanager
async def path_lock(path: Path) -> AsyncIterator[None]:
    """Serialise check-then-write on one file within this process (not against other programs)."""
    lock = _locks.get(path)
    if lock is None:
        lock = anyio.Lock()
        _locks[path] = lock
    async with lock:
        yield


def require_fresh_read(snapshot: FileSnapshot, seen: str | None, display: str) -> None:
    """Refuse to change an existing file this branch has not read, or that changed since.

    `seen` is the branch's stamp for the file; `FileRefusal` codes `file_not_read`
    and `file_modified_since_read`.
    """
    if not snapshot.exists:
        return
    if seen is None:
        raise FileRefusal(
            "file_not_read",
            f"{display} exists and has not been read yet",
            "read it first, then retry (so the change is made against what is there now)",
        )
    if seen != snapshot.stamp:
        raise FileRefusal(
            "file_modified_since_read",
            f"{display} changed after it was last read (the person, a program or "
            "another branch changed it)",
            "read it again, then redo the change against its current content",
        )
