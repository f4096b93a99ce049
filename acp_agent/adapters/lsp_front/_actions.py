"""The code actions and commands the LSP front end offers an editor.

On a diagnostic: "Fix this problem", its prompt quoting the problem and the lines
around it; on a selection: "Explain this" and "Write tests for this function"; each
runs `acp-agent.ask` with its prompt. While a proposal waits for the person (an editor
that cannot ask, `_approvals`): "Apply acp-agent's change (N files)", which carries the
edit and runs `acp-agent.approve`, and a reject action running `acp-agent.reject`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from lsprotocol import types
from pygls.workspace import TextDocument

from acp_agent.adapters.lsp_front._approvals import Pending

__all__ = (
    "APPROVE",
    "ASK",
    "CANCEL",
    "COMMANDS",
    "REJECT",
    "REWIND",
    "STATUS",
    "ask_actions",
    "proposal_actions",
)

ASK: Final = "acp-agent.ask"
CANCEL: Final = "acp-agent.cancel"
STATUS: Final = "acp-agent.status"
REWIND: Final = "acp-agent.rewind"
APPROVE: Final = "acp-agent.approve"
REJECT: Final = "acp-agent.reject"
COMMANDS: Final = (ASK, CANCEL, STATUS, REWIND, APPROVE, REJECT)

#: How many lines around a diagnostic a "Fix this problem" prompt quotes.
_CONTEXT_LINES: Final = 3


def ask_actions(
    document: TextDocument, params: types.CodeActionParams, *, folder: str
) -> list[types.CodeAction]:
    """The prompts offered for `params`' diagnostics and selection in `document`."""
    path = document.path
    shown = _relative(path, folder)
    lines = document.lines
    actions: list[types.CodeAction] = []
    for diagnostic in params.context.diagnostics:
        start, end = diagnostic.range.start.line, diagnostic.range.end.line
        quoted = "".join(lines[max(start - _CONTEXT_LINES, 0) : end + _CONTEXT_LINES + 1])
        source = f" ({diagnostic.source})" if diagnostic.source else ""
        prompt = (
            f"Fix this problem in {shown} at line {start + 1}{source}: "
            f"{diagnostic.message}\n\n```\n{quoted.rstrip()}\n```"
        )
        actions.append(
            _ask_action(
                f"acp-agent: Fix this problem ({_short(diagnostic.message)})",
                prompt,
                path,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
            )
        )
    selected = params.range
    if selected.start != selected.end:
        text = document.source.splitlines(keepends=True)
        quoted = "".join(text[selected.start.line : selected.end.line + 1]).rstrip()
        where = f"{shown}, lines {selected.start.line + 1}-{selected.end.line + 1}"
        actions.append(
            _ask_action(
                "acp-agent: Explain this",
                f"Explain this code from {where}:\n\n```\n{quoted}\n```",
                path,
            )
        )
        actions.append(
            _ask_action(
                "acp-agent: Write tests for this function",
                f"Write tests for this function from {where}, beside the project's "
                f"other tests:\n\n```\n{quoted}\n```",
                path,
            )
        )
    return actions


def proposal_actions(waiting: Sequence[Pending]) -> list[types.CodeAction]:
    """The actions that accept or reject each proposal `waiting` for the person."""
    actions: list[types.CodeAction] = []
    for pending in waiting:
        arguments: list[Any] = [pending.approval_id]
        actions.append(
            types.CodeAction(
                title=pending.title,
                kind=types.CodeActionKind.QuickFix,
                edit=pending.edit,
                command=types.Command(
                    title=pending.title,
                    command=APPROVE,
                    arguments=[*arguments, "applied"] if pending.edit else arguments,
                ),
                is_preferred=True,
            )
        )
        actions.append(
            types.CodeAction(
                title="Reject acp-agent's change"
                if pending.edit is not None
                else f"Reject: {pending.title}",
                kind=types.CodeActionKind.QuickFix,
                command=types.Command(title="Reject", command=REJECT, arguments=arguments),
            )
        )
    return actions


def _ask_action(
    title: str,
    prompt: str,
    path: str,
    *,
    kind: types.CodeActionKind = types.CodeActionKind.Refactor,
    diagnostics: list[types.Diagnostic] | None = None,
) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=kind,
        diagnostics=diagnostics,
        command=types.Command(title=title, command=ASK, arguments=[prompt, path]),
    )


def _relative(path: str, folder: str) -> str:
    try:
        return str(Path(path).relative_to(folder))
    except ValueError:
        return path


def _short(message: str, limit: int = 60) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "problem"
    return first if len(first) <= limit else first[: limit - 1] + "…"
