"""The agent as its front ends drive it: one handle for the runtime, one per session.

    async with open_agent(store, registry=registry, models=models) as agent:
        session = await agent.load(session_id, FrontEnd(client=editor, prompter=person))
        subscription = await session.subscribe(viewer, after=cursor)
        async with session.turn_slot() as slot:
            turn = await slot.start([TextContent("Hi")])
            outcome = await turn.outcome(seen_by=subscription)

Every front end reaches the runtime through here (the ACP adapter, and any
other that does not drive an agent process over ACP); an import contract
keeps `acp_agent.adapters.acp` from importing the core or the capabilities
itself. `Agent` opens (new, load, fork), lists and deletes sessions, with the
front end's side given at open time; `SessionHandle` owns the session's turn
queue, its services, its subscriptions (any number, each from its own
cursor) and its clean-up. Besides the handles, this face exports what a front
end reads and answers: the facts it translates, the settings, the errors.

The handles load with the first session (the adapter imports this face
then); the capabilities' parts a front end names only once a session is
assembled (the branch lines, the slash commands, the MCP server configs)
load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_agent.agent._agent import (
    Agent,
    ForkAnchor,
    FrontEndMaker,
    NewSession,
    create_session,
    open_agent,
    release_unopened,
)
from acp_agent.agent._errors import SessionBusy, SessionReadOnly, TurnCancelled
from acp_agent.agent._session import SessionHandle, other_roots
from acp_agent.agent._subscriptions import (
    DeliveryStopped,
    SessionSubscription,
    TurnOutcome,
    child_history,
    follow_child,
)
from acp_agent.agent._turns import TurnHandle, TurnSlot
from acp_agent.agent._usage import MAIN_BRANCH, BranchUsage, UsageReport, UsageTally, usage_json
from acp_agent.capabilities.controls import (
    INSTRUCTION_MODES,
    MODE_KEY,
    MODES,
    ClientInstructions,
    InvalidSetting,
    SessionControls,
    SessionOption,
)
from acp_agent.capabilities.permissions import (
    PermissionAnswer,
    PermissionChoice,
    PermissionPrompter,
    PermissionQuestion,
)
from acp_agent.core import (
    AlreadyStarted,
    BranchCreated,
    BranchId,
    BranchMessageReceived,
    BranchShown,
    ConversationRewound,
    Event,
    FailureKind,
    IllegalCut,
    JobEnded,
    JobEndShown,
    JobStarted,
    ModelReasoningDelta,
    ModelRequestFailed,
    ModelRequestFinished,
    ModelRequestStarted,
    ModelTextDelta,
    Payload,
    Seq,
    ServiceRegistry,
    SessionHeld,
    SessionId,
    SessionMetadataChanged,
    SessionPosition,
    SessionRecord,
    Store,
    StoreError,
    StoreFull,
    StoreNotFound,
    StoreUnavailable,
    Subscriber,
    ToolCallOutputDelta,
    ToolCallProgressed,
    ToolCallRequested,
    ToolCallStarted,
    ToolResultRecorded,
    TurnEnded,
    TurnId,
    TurnInterrupted,
    Usage,
    UserInputAdopted,
    hidden_ranges,
    is_hidden,
    new_id,
)
from acp_agent.lazy_face import lazy_face as _lazy_face

if TYPE_CHECKING:
    from acp_agent.capabilities import FrontEnd
    from acp_agent.capabilities.branches import BranchManager, BranchSide, ChildBranch, ChildState
    from acp_agent.capabilities.context import CompactionView, compaction_view
    from acp_agent.capabilities.loop import PromptTooLarge
    from acp_agent.capabilities.session import (
        CommandInvocation,
        CommandRunner,
        NoRewindPoint,
        RewindOutcome,
        RewindRefused,
        parse_invocation,
        title_from_prompt,
    )
    from acp_agent.mcp import (
        HttpServerConfig,
        McpOrigin,
        McpServerConfig,
        SseServerConfig,
        StdioServerConfig,
    )

__all__ = (
    "INSTRUCTION_MODES",
    "MAIN_BRANCH",
    "MODES",
    "MODE_KEY",
    "Agent",
    "AlreadyStarted",
    "BranchCreated",
    "BranchId",
    "BranchManager",
    "BranchMessageReceived",
    "BranchShown",
    "BranchSide",
    "BranchUsage",
    "ChildBranch",
    "ChildState",
    "ClientInstructions",
    "CommandInvocation",
    "CommandRunner",
    "CompactionView",
    "ConversationRewound",
    "DeliveryStopped",
    "Event",
    "FailureKind",
    "ForkAnchor",
    "FrontEnd",
    "FrontEndMaker",
    "HttpServerConfig",
    "IllegalCut",
    "InvalidSetting",
    "JobEndShown",
    "JobEnded",
    "JobStarted",
    "McpOrigin",
    "McpServerConfig",
    "ModelReasoningDelta",
    "ModelRequestFailed",
    "ModelRequestFinished",
    "ModelRequestStarted",
    "ModelTextDelta",
    "NewSession",
    "NoRewindPoint",
    "Payload",
    "PermissionAnswer",
    "PermissionChoice",
    "PermissionPrompter",
    "PermissionQuestion",
    "PromptTooLarge",
    "RewindOutcome",
    "RewindRefused",
    "Seq",
    "ServiceRegistry",
    "SessionBusy",
    "SessionControls",
    "SessionHandle",
    "SessionHeld",
    "SessionId",
    "SessionMetadataChanged",
    "SessionOption",
    "SessionPosition",
    "SessionReadOnly",
    "SessionRecord",
    "SessionSubscription",
    "SseServerConfig",
    "StdioServerConfig",
    "Store",
    "StoreError",
    "StoreFull",
    "StoreNotFound",
    "StoreUnavailable",
    "Subscriber",
    "ToolCallOutputDelta",
    "ToolCallProgressed",
    "ToolCallRequested",
    "ToolCallStarted",
    "ToolResultRecorded",
    "TurnCancelled",
    "TurnEnded",
    "TurnHandle",
    "TurnId",
    "TurnInterrupted",
    "TurnOutcome",
    "TurnSlot",
    "Usage",
    "UsageReport",
    "UsageTally",
    "UserInputAdopted",
    "child_history",
    "compaction_view",
    "create_session",
    "follow_child",
    "hidden_ranges",
    "is_hidden",
    "new_id",
    "open_agent",
    "other_roots",
    "parse_invocation",
    "release_unopened",
    "title_from_prompt",
    "usage_json",
)

#: Loaded on first use (see the docstring).
__getattr__, __dir__ = _lazy_face(
    __name__,
    {
        "FrontEnd": "acp_agent.capabilities",
        **dict.fromkeys(
            ("BranchManager", "BranchSide", "ChildBranch", "ChildState"),
            "acp_agent.capabilities.branches",
        ),
        **dict.fromkeys(("CompactionView", "compaction_view"), "acp_agent.capabilities.context"),
        "PromptTooLarge": "acp_agent.capabilities.loop",
        **dict.fromkeys(
            (
                "CommandInvocation",
                "CommandRunner",
                "NoRewindPoint",
                "RewindOutcome",
                "RewindRefused",
                "parse_invocation",
                "title_from_prompt",
            ),
            "acp_agent.capabilities.session",
        ),
        **dict.fromkeys(
            (
                "HttpServerConfig",
                "McpOrigin",
                "McpServerConfig",
                "SseServerConfig",
                "StdioServerConfig",
            ),
            "acp_agent.mcp",
        ),
    },
)
