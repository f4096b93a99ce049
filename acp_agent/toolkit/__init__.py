"""The tool kit: the contract every tool implements, and everything a tool may use.

A tool (the built-in ones in `acp_agent.tools`, an MCP server's, a language
server's, the runtime's own branch and job tools) is a `Tool`: a definition,
a presentation, a permission need, and a run with a `ToolContext` (its roots,
the editor's side as a `ClientBridge`, progress, read stamps, a `JobHost` to
hand background work to, and `FileChanges` to say what it is about to
change), ending in a `ToolResult` of content parts (`TextContent`,
`DiffContent`, ...). A component may offer the person commands beside its
tools (`CommandSpec`, `ExtraCommand`). The runtime's tags (`tag`, `wrap`)
mark what the model reads as the runtime's, and `neutralize_runtime_tags` /
`restore_runtime_tags` keep workspace content from impersonating them.

A leaf: it imports nothing of the agent but the leaves (`acp_agent.records`),
so a tool loads no part of the runtime (`tests/test_layers.py` checks it at
run time, an import-linter contract statically). Its modules are private;
this face lists what other packages use.
"""

from __future__ import annotations

from acp_agent.toolkit._client_bridge import (
    DEFAULT_REQUEST_TIMEOUT_S,
    NO_CLIENT,
    ClientBridge,
    ClientTerminal,
    ClientTimedOut,
    NotOffered,
    TerminalExit,
    TerminalOutput,
    TerminalsWithheld,
)
from acp_agent.toolkit._commands import CommandSpec, ExtraCommand
from acp_agent.toolkit._cut_middle import cut_middle
from acp_agent.toolkit._file_changes import FileChanges
from acp_agent.toolkit._job_host import (
    JobExit,
    JobHost,
    JobLimitReached,
    JobOutput,
    JobProcess,
    StartedJob,
)
from acp_agent.toolkit._parts import (
    ContentPart,
    DiffContent,
    ImageContent,
    Location,
    PlanContent,
    PlanEntry,
    PlanPriority,
    PlanStatus,
    TerminalContent,
    TextContent,
)
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

__all__ = (
    "DEFAULT_REQUEST_TIMEOUT_S",
    "NO_CLIENT",
    "ClientBridge",
    "ClientTerminal",
    "ClientTimedOut",
    "CommandSpec",
    "ContentPart",
    "DiffContent",
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
    "NotOffered",
    "PermissionNeed",
    "PlanContent",
    "PlanEntry",
    "PlanPriority",
    "PlanStatus",
    "PreviewingTool",
    "ProgressSink",
    "RuntimeTool",
    "StartedJob",
    "TerminalContent",
    "TerminalExit",
    "TerminalOutput",
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
    "cut_middle",
    "neutralize_runtime_tags",
    "object_schema",
    "restore_runtime_tags",
    "tag",
    "text_result",
    "wrap",
)
