"""The contract a tool implements, and everything a tool may use: a public sub-API.

A tool (`acp_agent.tools`, an MCP server's `McpTool`) is a `Tool`: a
definition, a presentation, a permission need and a run with a `ToolContext`
(its roots, the editor's side as a `ClientBridge`, progress, read stamps,
a `JobHost` to hand background work to, and `FileChanges` to say what it is
about to change),
ending in a `ToolResult`. `restore_runtime_tags` undoes what the model reads
of a result, for text the model copied from one. Tools import this module
only, never the package face: it loads nothing of the runtime (an
import-linter contract checks that tools never reach the core).
"""

from __future__ import annotations

from acp_agent.capabilities._client_bridge import (
    NO_CLIENT,
    ClientBridge,
    ClientTerminal,
    ClientTimedOut,
    NoClient,
    NotOffered,
    TerminalExit,
    TerminalOutput,
)
from acp_agent.capabilities._file_changes import FileChanges
from acp_agent.capabilities._job_host import (
    JobExit,
    JobHost,
    JobLimitReached,
    JobOutput,
    JobProcess,
    StartedJob,
)
from acp_agent.capabilities._tool import (
    ContentPart,
    DiffContent,
    Effect,
    ImageContent,
    Location,
    MemoryReadStamps,
    PermissionNeed,
    PlanContent,
    PlanEntry,
    PlanPriority,
    PlanStatus,
    PreviewingTool,
    ProgressSink,
    ReadStamps,
    TerminalContent,
    TextContent,
    Tool,
    ToolContext,
    ToolDefinition,
    ToolInputError,
    ToolKind,
    ToolPresentation,
    ToolPreview,
    ToolResult,
)
from acp_agent.capabilities.context._tags import restore_runtime_tags

__all__ = (
    "NO_CLIENT",
    "ClientBridge",
    "ClientTerminal",
    "ClientTimedOut",
    "ContentPart",
    "DiffContent",
    "Effect",
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
    "PermissionNeed",
    "PlanContent",
    "PlanEntry",
    "PlanPriority",
    "PlanStatus",
    "PreviewingTool",
    "ProgressSink",
    "ReadStamps",
    "StartedJob",
    "TerminalContent",
    "TerminalExit",
    "TerminalOutput",
    "TextContent",
    "Tool",
    "ToolContext",
    "ToolDefinition",
    "ToolInputError",
    "ToolKind",
    "ToolPresentation",
    "ToolPreview",
    "ToolResult",
    "restore_runtime_tags",
)
