"""What the sandbox kept in, read from a sandboxed command's exit and output.

A command that failed says so in its own words; the usual ones are
recognised, line by line:

- a write outside the writable places: "Read-only file system" (EROFS,
  `[Errno 30]`), whatever the tool; or "Device or resource busy" (EBUSY)
  renaming or removing a place protected in a root (`.git/config` is a mount
  point), as `git config` does;
- a read of a hidden place: "Permission denied", "No such file or directory"
  or "Read-only file system" naming a path under one of the policy's hidden
  places (a hidden file is unreadable, a hidden folder empty and unlistable);
- a place under `/tmp` outside the roots: "No such file or directory" naming
  it while it (or its folder) is there outside, since a command's `/tmp` is
  its own (`shown_in_tmp`: the places under `/tmp` the sandbox shows);
- with the network off, a connection: "Network is unreachable", "Connection
  refused" (nothing listens on the sandbox's own loopback), a name that does
  not resolve ("Temporary failure in name resolution", curl's and git's "Could
  not resolve host").

A command that exited 0 was not stopped, whatever it printed (pip, for one,
warns of a cache it cannot write and carries on). The classifier is a hint
for the tool result, never a verdict: a refused connection to a server that
is simply down reads the same.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import attrs

from acp_agent.sandbox._policy import SandboxPolicy
from acp_agent.values import Value

__all__ = (
    "MAX_DENIALS",
    "Denial",
    "DenialKind",
    "describe_denials",
    "describe_found",
    "find_denials",
)

#: The most denials reported for one command (the first ones: later ones often follow).
MAX_DENIALS: Final = 3
#: The most of an output line a denial keeps.
_LINE_CHARS: Final = 200

_READ_ONLY: Final = re.compile(r"read-only file system|\[errno 30\]|\berofs\b", re.I)
_NOT_READABLE: Final = re.compile(
    r"permission denied|no such file or directory|\[errno (?:13|2)\]|\beacces\b|\benoent\b",
    re.I,
)
#: Renaming or removing a protected place: it is a mount point.
_BUSY: Final = re.compile(r"device or resource busy|\[errno 16\]|\bebusy\b", re.I)
_NETWORK: Final = re.compile(
    r"network is unreachable|connection refused|\[errno (?:101|111|-2|-3)\]"
    r"|temporary failure in name resolution|could not resolve host"
    r"|name or service not known|\benetunreach\b|\beconnrefused\b|\beai_again\b",
    re.I,
)
#: A quoted path in a message: in ', ", `, or typographic quotes (as GNU tools quote in
#: a UTF-8 locale).
_QUOTED: Final = re.compile(r"['\"`\u2018\u201c]([^'\"`\u2019\u201d\n]+)['\"`\u2019\u201d]")
#: An absolute path anywhere in a message.
_ABSOLUTE: Final = re.compile(r"(?:^|[\s(=])(/[^\s:'\"`\u2019\u201d,;)]*)")


class DenialKind(enum.Enum):
    """What the sandbox kept in."""

    #: A write outside the places the command may write (or to a protected one).
    WRITE = "write"
    #: A read of a hidden place.
    HIDDEN = "hidden"
    #: A place under `/tmp` outside the roots: the command's `/tmp` is its own.
    OWN_TMP = "own_tmp"
    #: A network connection, the network being off.
    NETWORK = "network"


@attrs.frozen
class Denial(Value):
    """One thing the sandbox kept in, as the command's output showed it."""

    kind: DenialKind
    #: The output line that shows it (stripped, cut).
    line: str
    #: The path it names, when it names one.
    path: str | None = None

    def describe(self) -> str:
        """The denial in a phrase, for a person or the model."""
        if self.kind is DenialKind.HIDDEN:
            return f"{self.path} is hidden from sandboxed commands"
        if self.kind is DenialKind.OWN_TMP:
            return (
                f"{self.path} is not in the sandbox, whose /tmp is the command's own "
                "($TMPDIR and the workspace are shared)"
            )
        if self.kind is DenialKind.WRITE:
            where = self.path if self.path is not None else "the place written"
            return f"{where} is read-only in the sandbox"
        return f"the network is off in the sandbox ({self.line})"


def find_denials(
    output: str,
    *,
    exit_code: int | None,
    policy: SandboxPolicy,
    cwd: Path | None = None,
    shown_in_tmp: Sequence[Path] | None = None,
) -> tuple[Denial, ...]:
    """What the sandbox kept in, by `output`'s lines; none when the command exited 0.

    `exit_code` None (ended by a signal) still counts as failed. `cwd`, where the
    command ran, places the relative paths a message names. `shown_in_tmp`: the
    places under `/tmp` the sandbox shows (its roots, temp folder, programs there);
    None leaves `/tmp` out of it. Each path and the network are reported once, at
    most `MAX_DENIALS` in all.
    """
    if exit_code == 0:
        return ()
    hidden = _hidden_prefixes(policy)
    shown = None if shown_in_tmp is None else tuple(str(place) for place in shown_in_tmp)
    found: dict[tuple[DenialKind, str | None], Denial] = {}
    for raw in output.splitlines():
        denial = _denial(raw.strip(), hidden, policy, cwd, shown)
        if denial is None or (denial.kind, denial.path) in found:
            continue
        found[(denial.kind, denial.path)] = denial
        if len(found) == MAX_DENIALS:
            break
    return tuple(found.values())


def describe_denials(denials: tuple[Denial, ...]) -> str | None:
    """One line saying what the sandbox kept in (None for none)."""
    found = describe_found(denials)
    return None if found is None else f"the sandbox kept it in: {found}"


def describe_found(denials: tuple[Denial, ...]) -> str | None:
    """The denials in one phrase, "X is read-only in the sandbox; ..." (None for none)."""
    if not denials:
        return None
    return "; ".join(denial.describe() for denial in denials)


def _denial(
    line: str,
    hidden: tuple[str, ...],
    policy: SandboxPolicy,
    cwd: Path | None,
    shown_in_tmp: tuple[str, ...] | None,
) -> Denial | None:
    if not line:
        return None
    shown = line[:_LINE_CHARS]
    read_only = _READ_ONLY.search(line)
    busy = _BUSY.search(line) is not None
    if read_only or busy or _NOT_READABLE.search(line):
        paths = list(_paths(line))
        for path in paths:
            if _under(path, hidden, cwd):
                return Denial(DenialKind.HIDDEN, shown, path)
        if shown_in_tmp is not None and not read_only and not busy:
            for path in paths:
                if _in_own_tmp(path, shown_in_tmp):
                    return Denial(DenialKind.OWN_TMP, shown, path)
        if read_only:
            return Denial(DenialKind.WRITE, shown, _written(line, read_only))
        for path in paths:
            if busy and _protected(path, policy.protected_in_roots):
                return Denial(DenialKind.WRITE, shown, path)
    if not policy.network and _NETWORK.search(line):
        return Denial(DenialKind.NETWORK, shown)
    return None


def _written(line: str, message: re.Match[str]) -> str | None:
    """The path a read-only message is about: the first named after the message (Python:
    "Read-only file system: '/x'"), else the last named before it (the shells and
    coreutils: "/usr/bin/bash: line 1: /x: Read-only file system", whose first path is
    the shell's own)."""
    after = list(_paths(line[message.end() :]))
    if after:
        return after[0]
    before = list(_paths(line[: message.start()].rstrip(": ")))
    positions = {path: line.rfind(path) for path in before}
    return max(before, key=lambda path: positions[path]) if before else None


def _paths(line: str) -> Iterator[str]:
    """The paths `line` names (quoted, the last word of a `: ` part, absolute), normalised."""
    found = [match.group(1) for match in _QUOTED.finditer(line)]
    found += [part.split()[-1] for part in line.split(": ") if part.strip()]
    found += [match.group(1) for match in _ABSOLUTE.finditer(line)]
    seen: set[str] = set()
    for word in found:
        if "/" not in word or "://" in word:
            continue
        path = os.path.normpath(word)
        if path != "/" and path not in seen:
            seen.add(path)
            yield path


def _in_own_tmp(path: str, shown_in_tmp: tuple[str, ...]) -> bool:
    """Whether `path` is under `/tmp`, outside every place the sandbox shows there, and
    there outside the sandbox (itself, or the folder it would be made in)."""
    if not path.startswith("/tmp/"):
        return False
    if any(path == place or path.startswith(place + "/") for place in shown_in_tmp):
        return False
    return os.path.lexists(path) or os.path.isdir(os.path.dirname(path))


def _under(path: str, places: tuple[str, ...], cwd: Path | None) -> bool:
    """Whether `path` (relative to `cwd`) is one of `places` or inside one, as named or
    through the links it goes through."""
    if not os.path.isabs(path):
        if cwd is None:
            return False
        path = os.path.normpath(cwd / path)
    for form in (path, os.path.realpath(path)):
        if any(form == place or form.startswith(place + "/") for place in places):
            return True
    return False


def _protected(path: str, protected: tuple[str, ...]) -> bool:
    """Whether `path` is, or is inside, a place protected in a root (`.git/config`)."""
    return any(
        path == inside or path.endswith("/" + inside) or f"{inside}/" in f"{path}/"
        for inside in protected
    )


def _hidden_prefixes(policy: SandboxPolicy) -> tuple[str, ...]:
    """Each hidden place as given and as resolved (a message may name either)."""
    places: dict[str, None] = {}
    for place in policy.hidden:
        places.setdefault(os.path.normpath(place), None)
        with contextlib.suppress(OSError, RuntimeError):  # a loop of links
            places.setdefault(str(place.resolve()), None)
    return tuple(places)
