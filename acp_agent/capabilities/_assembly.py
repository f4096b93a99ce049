"""How the capabilities are assembled into the runtime's scopes.

    registry = ServiceRegistry()
    register_capabilities(registry, CapabilitySettings(models=models, tools=builtin_tools))
    async with open_runtime(store, registry=registry) as runtime:
        session = await runtime.create_session(cwd, provide=front_end.provide)
        loop = session.main.scope.get(MODEL_LOOP)
        turn = await loop.start_turn(turn_id, content)

(front ends do this through a session handle, `acp_agent.agent`.)

Per process: the `ResultBudget` every call's result passes (`RESULT_BUDGET`), and
the `FullResults` it keeps a cut result's whole text in (`FULL_RESULTS`: in the
store; each session's `read_result` reads them).
Per session, given by whoever opens it: the front end's side (`FrontEnd`: the
editor, who is asked, how branches are shown, where notices go), read as the
services assemble.
Per session: `SessionControls` (model, mode, the editor's side), the
`BranchManager`, the `JobManager`, the `ToolSet`, the `GuideRegistry`
(tools and MCP servers register guide entries for their inputs there; every
branch's next request adopts them), the `SessionSandbox` the sandboxed mode
runs commands in, and the `RootsIndex` that finds what they changed.
Per branch, in this order: the context engine, the tool executor and the
model loop; the executor and the loop subscribe to the branch's
timeline after rebuilding from it (the executor first: results it
synthesizes for calls a restart cut short precede the loop's record that
the open turn was interrupted).
"""

from __future__ import annotations

import datetime
import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import attrs

from acp_agent.capabilities.branches import (
    BRANCH_TOOL_NAMES,
    BRANCHES_GUIDE_ENTRY,
    DEFAULT_BRANCH_LIMIT,
    BranchManager,
    BranchSide,
    GatedPrompter,
    branch_tools,
)
from acp_agent.capabilities.context import (
    ContextEngine,
    ContextSettings,
    Environment,
    GuideRegistry,
    ValueSource,
    apply_instructions,
    build_context_engine,
    default_guide_registry,
)
from acp_agent.capabilities.controls import DEFAULT_MODE, SessionControls
from acp_agent.capabilities.execution import (
    FullResults,
    ResultBudget,
    ResultLimits,
    ToolExecutor,
    result_tools,
)
from acp_agent.capabilities.jobs import (
    DEFAULT_JOB_LIMIT,
    JOBS_GUIDE_ENTRY,
    JobManager,
    SavedOutputs,
    job_tools,
)
from acp_agent.capabilities.loop import LoopSettings, ModelLoop
from acp_agent.capabilities.permissions import (
    PermissionMode,
    PermissionPrompter,
    RefusingPrompter,
)
from acp_agent.capabilities.sandboxing import SessionSandbox
from acp_agent.capabilities.session import (
    ChangeReview,
    CheckpointStore,
    Rewinder,
    RootsIndex,
    ToolSet,
    available_commands,
    load_templates,
)
from acp_agent.core import (
    BRANCH,
    DISPATCHER,
    SESSION,
    STORE,
    Branch,
    BranchCreated,
    Scope,
    ScopeKind,
    Seq,
    ServiceKey,
    ServiceRegistry,
    Turn,
    TurnId,
)
from acp_agent.models import ModelSource
from acp_agent.sandbox import SandboxPolicy, SandboxSupport, probe_sandbox, sandbox_policy
from acp_agent.toolkit import NO_CLIENT, NO_NOTICES, ClientBridge, NoticeSink, Tool
from acp_agent.values import Value

__all__ = (
    "BRANCHES",
    "CHANGE_REVIEW",
    "CHECKPOINTS",
    "CONTEXT",
    "FRONT_END",
    "FULL_RESULTS",
    "GUIDE",
    "JOBS",
    "MODEL_LOOP",
    "RESULT_BUDGET",
    "REWINDER",
    "ROOTS_INDEX",
    "SANDBOX",
    "SESSION_CONTROLS",
    "TOOLSET",
    "TOOL_EXECUTOR",
    "CapabilitySettings",
    "FrontEnd",
    "register_capabilities",
)


@attrs.frozen
class FrontEnd(Value):
    """The front end's side of one session, given when it opens (nothing is filled in
    later): the services that need it read it as they assemble."""

    #: The editor's file system and terminals.
    client: ClientBridge = NO_CLIENT
    #: Who answers the session's permission questions.
    prompter: PermissionPrompter = attrs.field(factory=RefusingPrompter)
    #: Makes, from the session's branch manager, what shows each branch as a session of
    #: its own; None: branches are shown as tool calls of main.
    branches: Callable[[BranchManager], BranchSide] | None = None
    #: Where the session's notices go (what the person should know that no reply says).
    notices: NoticeSink = NO_NOTICES

    async def provide(self, scope: Scope) -> None:
        """Provide this side to a session scope (`Runtime`'s `provide=`)."""
        scope.provide(FRONT_END, self)


#: The front end's side of a session; a session opened without one has none.
FRONT_END: Final[ServiceKey[FrontEnd]] = ServiceKey("front_end", ScopeKind.SESSION)
BRANCHES: Final[ServiceKey[BranchManager]] = ServiceKey("branches", ScopeKind.SESSION)
JOBS: Final[ServiceKey[JobManager]] = ServiceKey("jobs", ScopeKind.SESSION)
RESULT_BUDGET: Final[ServiceKey[ResultBudget]] = ServiceKey("result_budget", ScopeKind.PROCESS)
FULL_RESULTS: Final[ServiceKey[FullResults]] = ServiceKey("full_results", ScopeKind.PROCESS)
CHECKPOINTS: Final[ServiceKey[CheckpointStore]] = ServiceKey("checkpoints", ScopeKind.PROCESS)
#: Registered by what reviews a call's file changes (`acp_agent.lsp`); optional.
CHANGE_REVIEW: Final[ServiceKey[ChangeReview]] = ServiceKey("change_review", ScopeKind.SESSION)
REWINDER: Final[ServiceKey[Rewinder]] = ServiceKey("rewinder", ScopeKind.SESSION)
SANDBOX: Final[ServiceKey[SessionSandbox]] = ServiceKey("sandbox", ScopeKind.SESSION)
ROOTS_INDEX: Final[ServiceKey[RootsIndex]] = ServiceKey("roots_index", ScopeKind.SESSION)
SESSION_CONTROLS: Final[ServiceKey[SessionControls]] = ServiceKey(
    "session_controls", ScopeKind.SESSION
)
TOOLSET: Final[ServiceKey[ToolSet]] = ServiceKey("toolset", ScopeKind.SESSION)
GUIDE: Final[ServiceKey[GuideRegistry]] = ServiceKey("guide", ScopeKind.SESSION)
CONTEXT: Final[ServiceKey[ContextEngine]] = ServiceKey("context", ScopeKind.BRANCH)
TOOL_EXECUTOR: Final[ServiceKey[ToolExecutor]] = ServiceKey("tool_executor", ScopeKind.BRANCH)
MODEL_LOOP: Final[ServiceKey[ModelLoop]] = ServiceKey("model_loop", ScopeKind.BRANCH)


def _no_tools() -> Sequence[Tool]:
    return ()


def _notices_of(scope: Scope) -> NoticeSink:
    """Where the session's notices go: its front end's sink (none without one)."""
    side = scope.find(FRONT_END)
    return NO_NOTICES if side is None else side.notices


@attrs.frozen
class CapabilitySettings(Value):
    """What the capabilities are built from (process-wide).

    **Parameters:**

    * `models`: resolves session models to providers.
    * `tools`: makes a session's tools (called once per session).
    * `loop`: the loop's limits.
    * `config_dir`: where the person's own rules live (None: none).
    * `environment`: the process environment state sources describe (None: detected).
    * `clock`: wall time for recorded rules, and the date state sources report.
    * `results_dir`: where the full text of a result cut to its budget was kept before
      the store kept it (a session's folder goes into the store as the session opens).
    * `result_limits`: the caps of each copy of a tool result.
    * `branch_limit`: how many branches the model may have working at once.
    * `job_limit`: how many background jobs may run at once in a session.
    * `checkpoints_dir`: where what files held before a tool changed them is kept,
      per session, for a rewind (None: not kept).
    * `sandbox`: the person's command sandbox policy (None: the defaults, with no
      folder of the agent's hidden).
    * `sandbox_probe`: whether the sandbox runs here (`probe_sandbox`).
    * `default_mode`: a new session's permission mode.
    """

    models: ModelSource
    tools: Callable[[], Sequence[Tool]] = _no_tools
    loop: LoopSettings = attrs.field(factory=LoopSettings)
    config_dir: Path | None = None
    environment: Environment | None = None
    clock: Callable[[], float] = time.time
    results_dir: Path | None = None
    result_limits: ResultLimits = attrs.field(factory=ResultLimits)
    branch_limit: int = DEFAULT_BRANCH_LIMIT
    job_limit: int = DEFAULT_JOB_LIMIT
    checkpoints_dir: Path | None = None
    sandbox: SandboxPolicy | None = None
    sandbox_probe: Callable[[], SandboxSupport] = probe_sandbox
    default_mode: PermissionMode = DEFAULT_MODE


def register_capabilities(registry: ServiceRegistry, settings: CapabilitySettings) -> None:
    """Register the session and branch services of the capabilities in `registry`."""

    async def full_results(scope: Scope) -> FullResults:
        return FullResults(scope.find(STORE), settings.results_dir)

    async def result_budget(scope: Scope) -> ResultBudget:
        return ResultBudget(scope.get(FULL_RESULTS), settings.result_limits)

    async def session_controls(scope: Scope) -> SessionControls:
        session = scope.get(SESSION)
        side = scope.find(FRONT_END) or FrontEnd()
        controls = SessionControls(
            session.id,
            session.cwd,
            client=side.client,
            prompter=side.prompter,
            # The client's instructions join the session's guide: every line reads them.
            on_instructions=functools.partial(apply_instructions, scope.get(GUIDE)),
            owner=session.record.owner,
        )
        controls.model_id = settings.models.default_model()
        controls.mode = settings.default_mode
        return controls

    async def guide(scope: Scope) -> GuideRegistry:
        registry = default_guide_registry()
        registry.register(BRANCHES_GUIDE_ENTRY)
        registry.register(JOBS_GUIDE_ENTRY)
        return registry

    async def branches(scope: Scope) -> BranchManager:
        async def start_turn(branch: Branch, turn_id: TurnId) -> Turn:
            return await branch.scope.get(MODEL_LOOP).start_turn(turn_id, [])

        side = scope.find(FRONT_END)
        manager = BranchManager(
            scope.get(SESSION),
            start_turn=start_turn,
            limit=settings.branch_limit,
            clock=settings.clock,
            notices=_notices_of(scope),
        )
        if side is not None and side.branches is not None:
            manager.show_as_sessions(side.branches(manager))
        return manager

    async def checkpoints(scope: Scope) -> CheckpointStore:
        return CheckpointStore(settings.checkpoints_dir, scope.find(STORE))

    async def sandbox(scope: Scope) -> SessionSandbox:
        policy = (
            settings.sandbox if settings.sandbox is not None else sandbox_policy(agent_paths=None)
        )
        service = SessionSandbox(policy, settings.sandbox_probe, notices=_notices_of(scope))
        scope.add_cleanup(service.aclose)
        return service

    async def roots_index(scope: Scope) -> RootsIndex:
        store, session_id = scope.get(CHECKPOINTS), str(scope.get(SESSION).id)
        return RootsIndex(lambda data: store.save(session_id, data, durable=False))

    async def rewinder(scope: Scope) -> Rewinder:
        controls = scope.get(SESSION_CONTROLS)
        return Rewinder(
            scope.get(SESSION),
            scope.get(STORE),
            scope.get(CHECKPOINTS),
            branches=scope.get(BRANCHES),
            jobs=scope.get(JOBS),
            roots=lambda: controls.roots,
        )

    async def jobs(scope: Scope) -> JobManager:
        saved = SavedOutputs(scope.find(STORE), scope.get(SESSION).id)
        return JobManager(limit=settings.job_limit, clock=settings.clock, saved=saved)

    async def toolset(scope: Scope) -> ToolSet:
        return ToolSet(
            [
                *settings.tools(),
                *branch_tools(scope.get(BRANCHES)),
                *job_tools(scope.get(JOBS)),
                *result_tools(scope.get(FULL_RESULTS), str(scope.get(SESSION).id)),
            ]
        )

    def local_now() -> datetime.datetime:
        return datetime.datetime.fromtimestamp(settings.clock()).astimezone()

    async def context(scope: Scope) -> ContextEngine:
        branch = scope.get(BRANCH)
        controls = scope.get(SESSION_CONTROLS)
        if branch.parent_id is None:
            # The session's model and mode as last recorded (a loaded session keeps them).
            controls.restore(await branch.read())
        window = settings.models.context_window(controls.model_id)
        workspace = Path(scope.get(SESSION).cwd)

        def commands() -> str | None:
            # Read at each turn start: a template added to the workspace shows up.
            templates = load_templates(workspace, settings.config_dir)
            return ", ".join(f"/{spec.name}" for spec in available_commands(templates))

        return build_context_engine(
            branch,
            guide=scope.get(GUIDE),
            config_dir=settings.config_dir,
            environment=settings.environment,
            clock=local_now,
            extra_sources=[ValueSource("session/commands", commands)],
            settings=ContextSettings(context_window_tokens=window),
            task=(await _created(branch)).task if branch.parent_id is not None else None,
            # Read at each turn start: a load or resume may give the session other roots.
            additional_roots=lambda: controls.additional_directories,
            store=scope.get(STORE),
            # Main's tells the person of a rule file it cannot read (its branches read
            # the same files).
            notices=_notices_of(scope) if branch.parent_id is None else NO_NOTICES,
        )

    async def tool_executor(scope: Scope) -> ToolExecutor:
        branch, controls = scope.get(BRANCH), scope.get(SESSION_CONTROLS)
        prompter: GatedPrompter | None = None
        client: Callable[[], ClientBridge] | None = None
        if branch.parent_id is not None:  # a child asks during main's turns, naming itself
            manager = scope.get(BRANCHES)
            prompter = GatedPrompter(manager, branch.id, lambda: controls.prompter)
            # Read at each call: a child shown as a session of its own has its own editor.
            client = lambda: manager.client_of(branch.id, controls.client)  # noqa: E731
        executor = ToolExecutor(
            branch,
            controls,
            scope.get(STORE),
            clock=settings.clock,
            budget=scope.get(RESULT_BUDGET),
            prompter=prompter,
            client=client,
            jobs=scope.get(JOBS),
            checkpoints=scope.get(CHECKPOINTS),
            review=scope.find(CHANGE_REVIEW),
            sandbox=scope.get(SANDBOX),
            roots_index=scope.get(ROOTS_INDEX),
        )
        await scope.get(DISPATCHER).subscribe_rebuilt(executor)

        async def recover_jobs() -> None:
            # Once the branch is ready: jobs a dead agent left running are ended.
            await scope.get(JOBS).recover(branch)

        scope.start_soon(recover_jobs, name=f"job recovery {branch.id}")
        return executor

    async def model_loop(scope: Scope) -> ModelLoop:
        branch, manager = scope.get(BRANCH), scope.get(BRANCHES)
        child = branch.parent_id is not None
        loop = ModelLoop(
            branch,
            executor=scope.get(TOOL_EXECUTOR),
            toolset=scope.get(TOOLSET),
            models=settings.models,
            controls=scope.get(SESSION_CONTROLS),
            context=scope.get(CONTEXT),
            settings=settings.loop,
            hidden_tools=BRANCH_TOOL_NAMES if child else frozenset(),
        )
        await scope.get(DISPATCHER).subscribe_rebuilt(loop)
        if child:
            created = await _created(branch)
            title = branch.record.label or branch.id
            await manager.attach_child(branch, title=title, task=created.task or "")
        else:
            manager.attach_main(branch)
            scope.get(JOBS).attach_main(branch)
        return loop

    registry.register(FULL_RESULTS, full_results)
    registry.register(RESULT_BUDGET, result_budget)
    registry.register(CHECKPOINTS, checkpoints)
    registry.register(GUIDE, guide)  # before the controls, which put instructions in it
    registry.register(SESSION_CONTROLS, session_controls)
    registry.register(SANDBOX, sandbox)
    registry.register(ROOTS_INDEX, roots_index)
    registry.register(BRANCHES, branches)
    registry.register(JOBS, jobs)
    registry.register(REWINDER, rewinder)
    registry.register(TOOLSET, toolset)
    registry.register(CONTEXT, context)
    registry.register(TOOL_EXECUTOR, tool_executor)
    registry.register(MODEL_LOOP, model_loop)


async def _created(branch: Branch) -> BranchCreated:
    """A child's first event: how it began (its label and task)."""
    first = await branch.timeline.event_at(Seq(branch.cut_seq + 1))
    if first is None or not isinstance(first.payload, BranchCreated):
        return BranchCreated(branch.id, branch.parent_id or branch.id, branch.cut_seq)
    return first.payload
