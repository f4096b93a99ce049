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

Everything but writing a new session (`create_session`, `NewSession`) loads on
first use: a `session/new` answer waits for that write, not for the runtime, the
handles or the capabilities, which load as the session opens behind the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_agent.agent._errors import SessionBusy, SessionReadOnly, TurnCancelled
from acp_agent.agent._new import NewSession, create_session, other_roots, release_unopened
from acp_agent.lazy_face import lazy_face as _lazy_face

if TYPE_CHECKING:
    from acp_agent.agent._agent import Agent, ForkAnchor, FrontEndMaker, open_agent
    from acp_agent.agent._session import SessionHandle
    from acp_agent.agent._subscriptions import (
        DeliveryStopped,
        SessionSubscription,
        TurnOutcome,
        child_history,
        follow_child,
    )
    from acp_agent.agent._turns import TurnHandle, TurnSlot
    from acp_agent.agent._usage import MAIN_BRANCH, BranchUsage, UsageReport, UsageTally, usage_json
    from acp_agent.capabilities import FrontEnd
    from acp_agent.capabilities.branches import BranchManager, BranchSide, ChildBranch, ChildState
    from acp_agent.capabilities.context import CompactionView, compaction_view
    from acp_agent.capabilities.controls import (
        INSTRUCTION_MODES,
        MODE_KEY,
        MODES,
        ClientInstructions,
        InvalidSetting,
        SessionControls,
        SessionOption,
    )
    from acp_agent.capabilities.loop import PromptTooLarge
    from acp_agent.capabilities.permissions import (
        PermissionAnswer,
        PermissionChoice,
        PermissionMode,
        PermissionPrompter,
        PermissionQuestion,
    )
    from acp_agent.capabilities.session import (
        CommandInvocation,
        CommandRunner,
        NoRewindPoint,
        RewindOutcome,
        RewindRefused,
        parse_invocation,
        title_from_prompt,
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
    from acp_agent.mcp import (
        HttpServerConfig,
        McpOrigin,
        McpServerConfig,
        SseServerConfig,
        StdioServerConfig,
    )
    from acp_agent.store import StoreOpening

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
    "PermissionMode",
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
    "StoreOpening",
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
        # The handles and what they translate: with the runtime, once a session opens.
        "Agent": "acp_agent.agent._agent",
        "ForkAnchor": "acp_agent.agent._agent",
        "FrontEndMaker": "acp_agent.agent._agent",
        "open_agent": "acp_agent.agent._agent",
        "SessionHandle": "acp_agent.agent._session",
        "DeliveryStopped": "acp_agent.agent._subscriptions",
        "SessionSubscription": "acp_agent.agent._subscriptions",
        "TurnOutcome": "acp_agent.agent._subscriptions",
        "follow_child": "acp_agent.agent._subscriptions",
        "child_history": "acp_agent.agent._subscriptions",
        "TurnHandle": "acp_agent.agent._turns",
        "TurnSlot": "acp_agent.agent._turns",
        "MAIN_BRANCH": "acp_agent.agent._usage",
        "BranchUsage": "acp_agent.agent._usage",
        "UsageReport": "acp_agent.agent._usage",
        "UsageTally": "acp_agent.agent._usage",
        "usage_json": "acp_agent.agent._usage",
        "INSTRUCTION_MODES": "acp_agent.capabilities.controls",
        "MODE_KEY": "acp_agent.capabilities.controls",
        "MODES": "acp_agent.capabilities.controls",
        "ClientInstructions": "acp_agent.capabilities.controls",
        "InvalidSetting": "acp_agent.capabilities.controls",
        "SessionControls": "acp_agent.capabilities.controls",
        "SessionOption": "acp_agent.capabilities.controls",
        "PermissionAnswer": "acp_agent.capabilities.permissions",
        "PermissionChoice": "acp_agent.capabilities.permissions",
        "PermissionMode": "acp_agent.capabilities.permissions",
        "PermissionPrompter": "acp_agent.capabilities.permissions",
        "PermissionQuestion": "acp_agent.capabilities.permissions",
        "AlreadyStarted": "acp_agent.core",
        "BranchCreated": "acp_agent.core",
        "BranchId": "acp_agent.core",
        "BranchMessageReceived": "acp_agent.core",
        "BranchShown": "acp_agent.core",
        "ConversationRewound": "acp_agent.core",
        "Event": "acp_agent.core",
        "FailureKind": "acp_agent.core",
        "IllegalCut": "acp_agent.core",
        "JobEnded": "acp_agent.core",
        "JobEndShown": "acp_agent.core",
        "JobStarted": "acp_agent.core",
        "ModelReasoningDelta": "acp_agent.core",
        "ModelRequestFailed": "acp_agent.core",
        "ModelRequestFinished": "acp_agent.core",
        "ModelRequestStarted": "acp_agent.core",
        "ModelTextDelta": "acp_agent.core",
        "Payload": "acp_agent.core",
        "Seq": "acp_agent.core",
        "ServiceRegistry": "acp_agent.core",
        "SessionHeld": "acp_agent.core",
        "SessionId": "acp_agent.core",
        "SessionMetadataChanged": "acp_agent.core",
        "SessionPosition": "acp_agent.core",
        "SessionRecord": "acp_agent.core",
        "Store": "acp_agent.core",
        "StoreError": "acp_agent.core",
        "StoreFull": "acp_agent.core",
        "StoreNotFound": "acp_agent.core",
        "StoreUnavailable": "acp_agent.core",
        "Subscriber": "acp_agent.core",
        "ToolCallOutputDelta": "acp_agent.core",
        "ToolCallProgressed": "acp_agent.core",
        "ToolCallRequested": "acp_agent.core",
        "ToolCallStarted": "acp_agent.core",
        "ToolResultRecorded": "acp_agent.core",
        "TurnEnded": "acp_agent.core",
        "TurnId": "acp_agent.core",
        "TurnInterrupted": "acp_agent.core",
        "Usage": "acp_agent.core",
        "UserInputAdopted": "acp_agent.core",
        "hidden_ranges": "acp_agent.core",
        "is_hidden": "acp_agent.core",
        "new_id": "acp_agent.core",
        "FrontEnd": "acp_agent.capabilities",
        # What `session/new` writes through before the runtime opens (the host's).
        "StoreOpening": "acp_agent.store",
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
