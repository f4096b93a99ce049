"""The cattrs converter for ACP types: one factory and one error formatter.

`get_converter()` installs hooks that write camelCase keys, keep `_meta`,
omit unset optional fields, always write required fields and tags, choose
union members by the schema's discriminators, and apply the schema's
leniency hints when reading. Unstable fields are written only on request.
"""

from __future__ import annotations

import functools
from typing import Any

import cattrs

from protocol._hooks import register_hooks
from protocol._wire import LOADED_TABLES

__all__ = ("get_converter", "shared_converter", "structure_error_message")


def get_converter(
    converter: cattrs.Converter | None = None, *, include_unstable: bool = False
) -> cattrs.Converter:
    """Install the ACP hooks on `converter` (or a new one) and return it.

    Pass a converter of your own to keep its hooks; ours apply only to the
    generated ACP classes and unions, plus strict JSON primitives.
    """
    target = converter if converter is not None else cattrs.Converter(detailed_validation=True)
    register_hooks(target, include_unstable=include_unstable)
    return target


def shared_converter(*, include_unstable: bool = False) -> cattrs.Converter:
    """The process's converter for ACP types (one per `include_unstable`), never modified.

    cattrs compiles a class's (un)structure function on its first use by a converter:
    a converter per session or per prompt paid that again each time (~50 ms of a
    `session/new`). Use `get_converter()` for one to add hooks to.
    """
    return _shared(include_unstable)


@functools.cache
def _shared(include_unstable: bool) -> cattrs.Converter:
    return get_converter(include_unstable=include_unstable)


def structure_error_message(exc: BaseException) -> str:
    """One line naming each offending field, e.g. `sessionId: required field missing`."""
    problems = []
    for path, reason in _leaf_errors(exc, ()):
        where = ".".join(path).replace(".[", "[") if path else "params"
        problems.append(f"{where}: {reason}")
    return "; ".join(dict.fromkeys(problems)) or str(exc)


def _leaf_errors(exc: BaseException, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    if isinstance(exc, BaseExceptionGroup):
        out = []
        for inner in exc.exceptions:
            out.extend(_leaf_errors(inner, path + _note_path(inner)))
        return out
    if exc.__cause__ is not None and isinstance(exc, ValueError) and "any form" in str(exc):
        return [(path, str(exc))]
    if isinstance(exc, KeyError):
        return [(path, "required field missing" if not exc.args else _key_error(exc))]
    return [(path, str(exc) or type(exc).__name__)]


def _key_error(exc: KeyError) -> str:
    text = str(exc.args[0])
    return text if text.startswith("missing") else "required field missing"


def _note_path(exc: BaseException) -> tuple[str, ...]:
    for note in getattr(exc, "__notes__", ()):
        name: Any = getattr(note, "name", None)
        if isinstance(name, str):
            return (LOADED_TABLES.wire_names.get(name, name),)
        if isinstance(name, int):
            return (f"[{name}]",)
        if isinstance(note, str) and note.startswith("Structuring array @ index "):
            return (f"[{note.rsplit(' ', 1)[-1]}]",)
    return ()
