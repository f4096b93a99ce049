"""What a sandboxed command's result adds to its output.

The files it changed in the roots (a rewind takes them back), what the sandbox
kept it from doing and, for the model, how to ask to leave it; and, once, that
it ran in the agent's own sandbox because the editor's terminal could not start
one. The person reads them before a long output (a client showing only the
start of a text still shows them); the raw output carries them as data.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from acp_agent.toolkit import CommandFiles, TextContent, ToolResult

__all__ = ("files_raw", "refused_note", "run_notes", "sandboxed_in_terminal")

#: The most files a sandboxed run's result names (the rest are counted).
_FILES_SHOWN: Final = 20


def run_notes(files: CommandFiles | None, kept_in: str | None) -> tuple[list[str], list[str]]:
    """What the person and the model read after a sandboxed run's output: the files it
    changed, and what the sandbox kept in (for the model, with how to leave it)."""
    shown: list[str] = []
    model: list[str] = []
    if files is not None:
        line = _files_line(files)
        if line:
            shown.append(line)
            model.append(line)
    if kept_in is not None:
        shown.append(
            f"The sandbox kept it in: {kept_in}. The agent may ask you to run it outside the "
            "sandbox."
        )
        model.append(
            f"The sandbox kept it in: {kept_in}. If the command needs that, call shell again "
            "with the same command and `outside_sandbox: true`: the person is asked to let it "
            "run outside the sandbox."
        )
    return shown, model


def _files_line(files: CommandFiles) -> str | None:
    """The line naming what a sandboxed run changed, new and removed files marked; or
    why that is not known (None: nothing changed)."""
    if files.untracked is not None:
        return f"The files it changed are not tracked: {files.untracked}."
    named = [
        *(str(path) for path in files.changed),
        *(f"{path} (new)" for path in files.created),
        *(f"{path} (removed)" for path in files.removed),
    ]
    if not named:
        return None
    shown = ", ".join(named[:_FILES_SHOWN])
    more = len(named) - _FILES_SHOWN
    if more > 0:
        shown += f" and {more} more"
    return f"Files it changed (a rewind takes them back): {shown}."


def files_raw(files: CommandFiles) -> dict[str, Any]:
    """What a sandboxed run changed, as its raw output's `files`."""
    return {
        "changed": [str(path) for path in files.changed],
        "created": [str(path) for path in files.created],
        "removed": [str(path) for path in files.removed],
        "untracked": files.untracked,
    }


def refused_note(why: str) -> str:
    """What the result of the command an editor terminal could not confine says, once."""
    return (
        f"The editor's terminal could not start the sandbox ({why}), so this command ran "
        "in the agent's own sandbox instead, as this session's next commands will."
    )


def sandboxed_in_terminal(
    result: ToolResult, files: CommandFiles | None, kept_in: str | None = None
) -> ToolResult:
    """`result` of a command run confined in an editor's terminal, with what it changed and
    what the sandbox kept in after the terminal (and in its raw output)."""
    shown, model = run_notes(files, kept_in)
    raw = {**(result.raw_output or {}), "sandboxed": True, "kept_in": kept_in}
    if files is not None:
        raw["files"] = files_raw(files)
    return attrs.evolve(
        result,
        content=(*result.content, *map(TextContent, shown)),
        model_text="\n".join([result.model_text, *model]),
        raw_output=raw,
    )
