"""The tool kit: the contract every tool implements, and everything a tool may use.

A tool (the built-in ones in `acp_agent.tools`, an MCP server's, a language
server's, the runtime's own branch and job tools) is a `Tool`: a definition,
a presentation, a permission need, and a run with a `ToolContext` (its roots,
the editor's side as a `ClientBridge`, progress, read stamps, a `JobHost` to
hand background work to, `FileChanges` to say what it is about to
change, and the `CommandSandbox` its commands run in when the mode confines
them), ending in a `ToolResult` of content parts (`TextContent`,
`DiffContent`, ...: `acp_agent.content`'s, the ones the core's events hold).
A component may offer the person commands beside its tools (`CommandSpec`,
`ExtraCommand`). The runtime's tags (`tag`, `wrap`) mark what the model reads
as the runtime's, and `neutralize_runtime_tags` / `restore_runtime_tags` keep
workspace content from impersonating them; `fenced` puts text in a Markdown
code block nothing in it can close. What the person should know that no reply
says goes to the front end as a `Notice`.

A leaf: it imports nothing of the agent but the leaves (`acp_agent.values`,
`acp_agent.content`), so a tool loads no part of the runtime
(`tests/test_layers.py` checks it at run time, an import-linter contract
statically). Its modules are private; this face lists what other packages use.
The editor bridge loads with it (the ACP adapter needs it before answering
`initialize`); the rest on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_agent.lazy_face import lazy_face as _lazy_face
from acp_agent.toolkit._client_bridge import (
    DEFAULT_REQUEST_TIMEOUT_S,
    NO_CLIENT,
    ClientBridge,
    ClientTerminal,
    ClientTimedOut,
    EditorRefused,
    NoClient,
    NotOffered,
    TerminalExit,
    TerminalOutput,
    TerminalRefused,
    TerminalsWithheld,
)

if TYPE_CHECKING:
    from acp_agent.content import (
        DEFAULT_PLAN_ID,
        ContentPart,
        DiffContent,
        ImageContent,
        Location,
        PlanContent,
        PlanEntry,
        PlanKind,
        PlanPriority,
        PlanStatus,
        TerminalContent,
        TextContent,
    )
    from acp_agent.toolkit._command_sandbox import CommandSandbox, TerminalLaunch
    from acp_agent.toolkit._commands import CommandSpec, ExtraCommand
    from acp_agent.toolkit._fences import fenced
    from acp_agent.toolkit._file_changes import CommandFiles, FileChanges
    from acp_agent.toolkit._job_host import (
        JobExit,
        JobHost,
        JobLimitReached,
        JobOutput,
        JobProcess,
        StartedJob,
    )
    from acp_agent.toolkit._notices import NO_NOTICES, Notice, NoticeSeverity, NoticeSink
    from acp_agent.toolkit._runtime_tool import RuntimeTool, object_schema, text_result
    from acp_agent.toolkit._tags import neutralize_runtime_tags, restore_runtime_tags, tag, wrap
    from acp_agent.toolkit._tool import (
        Effect,
        MemoryReadStamps,
        PermissionNeed,
        PreviewingTool,
        ProgressSink,
        Tool,
        ToolContext,
        ToolDefinition,
        ToolInputError,
        ToolKind,
        ToolPresentation,
        ToolPreview,
        ToolResult,
    )
    from acp_agent.toolkit._truncate import truncate_middle

__all__ = (
    "DEFAULT_PLAN_ID",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "NO_CLIENT",
    "NO_NOTICES",
    "ClientBridge",
    "ClientTerminal",
    "ClientTimedOut",
    "CommandFiles",
    "CommandSandbox",
    "CommandSpec",
    "ContentPart",
    "DiffContent",
    "EditorRefused",
    "Effect",
    "ExtraCommand",
    "FileChanges",
    "ImageContent",
    "JobExit",
    "JobHost",
    "JobLimitReached",
    "JobOutput",
    "JobProcess",
    "Location",
    "MemoryReadStamps",
    "NoClient",
    "NotOffered",
    "Notice",
    "NoticeSeverity",
    "NoticeSink",
    "PermissionNeed",
    "PlanContent",
    "PlanEntry",
    "PlanKind",
    "PlanPriority",
    "PlanStatus",
    "PreviewingTool",
    "ProgressSink",
    "RuntimeTool",
    "StartedJob",
    "TerminalContent",
    "TerminalExit",
    "TerminalLaunch",
    "TerminalOutput",
    "TerminalRefused",
    "TerminalsWithheld",
    "TextContent",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolInputError",
    "ToolKind",
    "ToolPresentation",
    "ToolPreview",
    "ToolResult",
    "fenced",
    "neutralize_runtime_tags",
    "object_schema",
    "restore_runtime_tags",
    "tag",
    "text_result",
    "truncate_middle",
    "wrap",
)

#: Loaded on first use: answering `initialize` needs only the editor bridge.
__getattr__, __dir__ = _lazy_face(
    __name__,
    {
        "CommandSandbox": "_command_sandbox",
        "TerminalLaunch": "_command_sandbox",
        "CommandSpec": "_commands",
        "ExtraCommand": "_commands",
        "CommandFiles": "_file_changes",
        "truncate_middle": "_truncate",
        "fenced": "_fences",
        "FileChanges": "_file_changes",
        "JobExit": "_job_host",
        "JobHost": "_job_host",
        "JobLimitReached": "_job_host",
        "JobOutput": "_job_host",
        "JobProcess": "_job_host",
        "StartedJob": "_job_host",
        "NO_NOTICES": "_notices",
        "Notice": "_notices",
        "NoticeSeverity": "_notices",
        "NoticeSink": "_notices",
        "ContentPart": "acp_agent.content",
        "DEFAULT_PLAN_ID": "acp_agent.content",
        "DiffContent": "acp_agent.content",
        "ImageContent": "acp_agent.content",
        "Location": "acp_agent.content",
        "PlanContent": "acp_agent.content",
        "PlanEntry": "acp_agent.content",
        "PlanKind": "acp_agent.content",
        "PlanPriority": "acp_agent.content",
        "PlanStatus": "acp_agent.content",
        "TerminalContent": "acp_agent.content",
        "TextContent": "acp_agent.content",
        "RuntimeTool": "_runtime_tool",
        "object_schema": "_runtime_tool",
        "text_result": "_runtime_tool",
        "neutralize_runtime_tags": "_tags",
        "restore_runtime_tags": "_tags",
        "tag": "_tags",
        "wrap": "_tags",
        "Effect": "_tool",
        "MemoryReadStamps": "_tool",
        "PermissionNeed": "_tool",
        "PreviewingTool": "_tool",
        "ProgressSink": "_tool",
        "Tool": "_tool",
        "ToolContext": "_tool",
        "ToolDefinition": "_tool",
        "ToolInputError": "_tool",
        "ToolKind": "_tool",
        "ToolPresentation": "_tool",
        "ToolPreview": "_tool",
        "ToolResult": "_tool",
    },
)
