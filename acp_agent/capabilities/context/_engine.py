"""The context engine: a branch's history turned into the next model request.

It keeps apart how to read the input (the guide, the system prompt) and
what the input currently is (sourced, ordered messages), and keeps that
true across compaction. Per branch::

    engine = build_context_engine(branch, guide=registry, config_dir=config_dir)
    await engine.start_turn(turn_id)  # before the input is adopted: state first
    prepared = await engine.prepare(turn_id=turn_id, model=model, provider=provider, tools=specs)
    # record ModelRequestStarted(..., guide_version=prepared.guide_version), then stream
    # prepared.request; on UsageReported: engine.note_usage(usage.input_tokens, ...)
    # on ContextWindowExceeded: await engine.compact(..., trigger=CompactionTrigger.OVERFLOW)

What `prepare` does, in order:

1. On the first request of a turn (unless `start_turn` already did for that
   turn), reads every state source and scans the rule files, and records
   what changed as one batch (`StateSet`, `StateCleared`, `RuleSet`,
   `RuleReplaced`, `RuleRevoked`).
2. If the registered guide entries make a guide other than the one last
   adopted on the branch, records `GuideAdopted` (the timeline then tells
   which guide any request had).
3. Folds the new events into its `Projection` and builds the request:
   the adopted guide, the projected messages, `cacheable_prefix` = the
   leading messages already sent in the previous request, and its `origin`:
   the line of work (main, or a branch: its place among the session's
   branches, read from the store once, and its title) and how many requests
   the line recorded before.
4. If the calibrated estimate reaches `compact_at_fraction` of the context
   window, compacts first (`CompactionTrigger.AUTO`) and builds again.

Everything the engine knows comes from the timeline, so a reloaded branch
builds byte-identical requests, using its recorded compactions.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import anyio
import attrs

from acp_agent.capabilities.context._compaction import (
    COMPACTION_GUIDE_ENTRY,
    CompactionError,
    CompactionTrigger,
    run_compaction,
)
from acp_agent.capabilities.context._guide import CORE_GUIDE_ENTRIES, GuideEntry, GuideRegistry
from acp_agent.capabilities.context._notifications import NOTIFICATIONS_GUIDE_ENTRY
from acp_agent.capabilities.context._projection import (
    BRANCH_MESSAGES_GUIDE_ENTRY,
    Projection,
    user_input_parts,
)
from acp_agent.capabilities.context._rules import (
    RULES_GUIDE_ENTRY,
    RuleLedger,
    Unreadable,
    command_rule_id,
    scan_rule_files,
)
from acp_agent.capabilities.context._state_sources import (
    STATE_GUIDE_ENTRY,
    BranchIdentitySource,
    Environment,
    StateSource,
    default_state_sources,
    read_all,
)
from acp_agent.capabilities.context._token_budget import (
    ContextUsage,
    TokenAccount,
    estimate_message_tokens,
    estimate_request_tokens,
)
from acp_agent.content import ContentPart
from acp_agent.core import (
    Branch,
    CompactionRecorded,
    EventDraft,
    GuideAdopted,
    ModelRequestStarted,
    Payload,
    RuleExpired,
    RuleReplaced,
    RuleRevoked,
    RuleSet,
    Seq,
    Store,
    TurnId,
    gc_paused,
    new_id,
)
from acp_agent.models import (
    Message,
    ModelProvider,
    ModelRequest,
    ProviderError,
    ReasoningEffort,
    RequestOrigin,
    ToolSpec,
)
from acp_agent.toolkit import NO_NOTICES, Notice, NoticeSeverity, NoticeSink
from acp_agent.values import Value

__all__ = (
    "CONTEXT_GUIDE_ENTRIES",
    "CONTEXT_PRODUCER",
    "DEFAULT_GUIDE_ENTRIES",
    "ContextEngine",
    "ContextSettings",
    "PreparedRequest",
    "build_context_engine",
    "default_guide_registry",
)

logger = logging.getLogger(__name__)

#: The producer named on the facts the engine records (state, rules, guide).
CONTEXT_PRODUCER: Final = "capabilities.context"

#: The entries for the input the context engine produces.
CONTEXT_GUIDE_ENTRIES: Final = (
    STATE_GUIDE_ENTRY,
    RULES_GUIDE_ENTRY,
    NOTIFICATIONS_GUIDE_ENTRY,
    COMPACTION_GUIDE_ENTRY,
)
#: Core and context entries: the guide of a session before tools or MCP register theirs.
DEFAULT_GUIDE_ENTRIES: Final[tuple[GuideEntry, ...]] = (
    *CORE_GUIDE_ENTRIES,
    BRANCH_MESSAGES_GUIDE_ENTRY,
    *CONTEXT_GUIDE_ENTRIES,
)


def default_guide_registry() -> GuideRegistry:
    """A registry holding the core and context entries; tools and MCP add theirs."""
    return GuideRegistry(DEFAULT_GUIDE_ENTRIES)


def _a_fraction(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0 < value <= 1:
        raise ValueError(f"{attribute.name} is a fraction in (0, 1], not {value}")


@attrs.frozen
class ContextSettings(Value):
    """How big the context is and when to compact it.

    **Parameters:**

    * `context_window_tokens`: the model's context window.
    * `compact_at_fraction`: compact before a request estimated at this fraction of
      the window or more.
    * `keep_recent_fraction`: an automatic compaction keeps the newest history up to
      this fraction of the window (on demand keeps none).
    * `summary_max_output_tokens`: the cap on the summary reply (at most a quarter of
      the window).
    """

    context_window_tokens: int = attrs.field(default=128_000, validator=attrs.validators.gt(0))
    compact_at_fraction: float = attrs.field(default=0.8, validator=_a_fraction)
    keep_recent_fraction: float = attrs.field(default=0.25, validator=_a_fraction)
    summary_max_output_tokens: int = 4096


@attrs.frozen
class PreparedRequest(Value):
    """The next request and what to record about it."""

    request: ModelRequest
    #: The adopted guide the request's system prompt is; put on `ModelRequestStarted`.
    guide_version: str
    #: The estimate of its input tokens, calibrated by earlier reports.
    estimated_tokens: int
    #: The last seq the request renders.
    last_seq: Seq
    #: The estimate before calibration (what the account learns the ratio from).
    raw_tokens: int = 0


class ContextEngine:
    """Prepares a branch's model requests; owns its projection, refresh and compaction.

    **Parameters:**

    * `branch`: the branch whose history is read and where facts are recorded.
    * `guide`: the registry whose entries make the guide.
    * `state_sources`: read at the start of each turn.
    * `workspace`: where `AGENTS.md` files are scanned for (the cwd).
    * `additional_roots`: the workspace's other roots, scanned too (read at each turn
      start; none by default).
    * `config_dir`: where the person's rules are (`AGENTS.md`, `rules/*.md`); None: none.
    * `settings`: context window and compaction thresholds.
    * `store`: where a branch finds its place among the session's branches, for
      its requests' `origin` (None: a branch says it is the first).
    * `new_id`: makes compaction ids (inject for deterministic tests).
    """

    def __init__(
        self,
        branch: Branch,
        *,
        guide: GuideRegistry,
        state_sources: Sequence[StateSource] = (),
        workspace: Path | None = None,
        additional_roots: Callable[[], Sequence[Path]] = tuple,
        config_dir: Path | None = None,
        settings: ContextSettings | None = None,
        store: Store | None = None,
        new_id: Callable[[str], str] = new_id,
        notices: NoticeSink = NO_NOTICES,
    ) -> None:
        self.branch = branch
        self._notices = notices
        #: Rule files the person was told could not be read (told again once read).
        self._told_unreadable: set[Path] = set()
        self.guide = guide
        self.state_sources = list(state_sources)
        self.workspace = workspace
        self.additional_roots = additional_roots
        self.config_dir = config_dir
        self.settings = settings if settings is not None else ContextSettings()
        self.tokens = TokenAccount(self.settings.context_window_tokens)
        self.projection = Projection()
        self._store = store
        #: Model requests the branch recorded (its own, not those it inherited).
        self._requests = 0
        #: A branch's place among the session's branches, once read.
        self._place: int | None = None
        self._new_id = new_id
        self._refreshed_turn: TurnId | None = None
        self._lock = anyio.Lock()

    # --- reading the timeline ---------------------------------------------------------

    async def sync(self) -> Projection:
        """Fold every event published since the last call; returns the projection."""
        events = await self.branch.read(gt=Seq(self.projection.last_seq))
        own = self.branch.id
        self._requests += sum(
            1 for e in events if e.branch_id == own and isinstance(e.payload, ModelRequestStarted)
        )
        with gc_paused():  # a loaded session's whole history, the first time
            self.projection.feed(events)
        if self.projection.stale:
            # A rewind takes out history already folded: fold it all again without it.
            projection = Projection(self.projection.hidden)
            projection.feed(await self.branch.read())
            self.projection = projection
        return self.projection

    async def warm(self) -> None:
        """Fold what was published since the last fold now (a loaded session's whole
        history), so the next request does not wait for it; a request waits for this."""
        async with self._lock:
            await self.sync()

    # --- the start of a turn ----------------------------------------------------------

    async def start_turn(self, turn_id: TurnId | None = None) -> list[Payload]:
        """Record what changed in state and rule files since the last record, as one batch.

        `prepare` calls this on a turn's first request. A caller that knows the turn
        before its input is adopted may call it first, with the turn's id, so the
        fresh state precedes the person's message; `prepare` then does not refresh
        that turn again. Returns the facts recorded (none when nothing changed).
        """
        async with self._lock:
            return await self._start_turn(turn_id)

    async def _start_turn(self, turn_id: TurnId | None) -> list[Payload]:
        self._refreshed_turn = turn_id
        values = await read_all(self.state_sources)
        found = []
        if self.workspace is not None:
            workspace, config_dir = self.workspace, self.config_dir
            roots = tuple(self.additional_roots())
            unreadable: Unreadable = []
            found = await anyio.to_thread.run_sync(
                lambda: scan_rule_files(workspace, config_dir, roots, unreadable=unreadable)
            )
            self._tell_unreadable(unreadable)
        projection = await self.sync()
        facts = [*projection.state.changes(values), *projection.rules.changes(found)]
        await self._record(facts)
        return facts

    def _tell_unreadable(self, unreadable: Unreadable) -> None:
        """Tell the person of each rule file that could not be read, once until it is."""
        for path, why in unreadable:
            if path not in self._told_unreadable:
                self._notices(
                    Notice(
                        NoticeSeverity.WARNING,
                        f"A rule file could not be read: {path}",
                        f"{why}. Its rules do not apply until it can be read.",
                    )
                )
        self._told_unreadable = {path for path, _ in unreadable}

    # --- commands' rules ----------------------------------------------------------------

    async def set_command_rule(self, name: str, text: str, *, scope: str = "*") -> Payload:
        """A command sets (or replaces) its rule `command/<name>` in `scope`."""
        rule_id = command_rule_id(name)
        known = (await self.sync()).rules.records.get(rule_id)
        fact: Payload
        if known is not None and known.holds:
            fact = RuleReplaced(rule_id, scope, text)
        else:
            fact = RuleSet(rule_id, scope, text)
        await self._record([fact])
        return fact

    async def revoke_command_rule(self, name: str, reason: str = "") -> Payload | None:
        """Withdraw the command's rule; None if it does not hold."""
        return await self._end_rule(command_rule_id(name), reason, expired=False)

    async def expire_command_rule(self, name: str) -> Payload | None:
        """The command's rule's validity ended; None if it does not hold."""
        return await self._end_rule(command_rule_id(name), "", expired=True)

    async def _end_rule(self, rule_id: str, reason: str, *, expired: bool) -> Payload | None:
        rules: RuleLedger = (await self.sync()).rules
        known = rules.records.get(rule_id)
        if known is None or not known.holds:
            return None
        fact: Payload = (
            RuleExpired(rule_id, known.scope)
            if expired
            else RuleRevoked(rule_id, known.scope, reason)
        )
        await self._record([fact])
        return fact

    # --- requests -----------------------------------------------------------------------

    async def prepare(
        self,
        *,
        turn_id: TurnId,
        model: str,
        provider: ModelProvider,
        tools: Sequence[ToolSpec] = (),
        max_output_tokens: int | None = None,
        reasoning_effort: ReasoningEffort | None = None,
    ) -> PreparedRequest:
        """The next request of `turn_id`; see the module docstring for what it records."""
        async with self._lock:
            if self._refreshed_turn != turn_id:
                await self._start_turn(turn_id)
            prepared = await self._build(model, tools, max_output_tokens, reasoning_effort)
            window = self.tokens.window_tokens
            threshold = self.settings.compact_at_fraction * window
            history = prepared.estimated_tokens - self._overhead_tokens(prepared.request)
            # An automatic compaction keeps the newest `keep_recent_fraction` of the window:
            # with no more history than that it would free nothing.
            worth_it = history > self.settings.keep_recent_fraction * window
            if prepared.estimated_tokens >= threshold and worth_it and self.projection.boundaries():
                try:
                    await self._compact(model, provider, tools, CompactionTrigger.AUTO)
                except (CompactionError, ProviderError) as exc:
                    logger.warning("automatic compaction failed, sending as is: %s", exc)
                else:
                    prepared = await self._build(model, tools, max_output_tokens, reasoning_effort)
            self.tokens.note_estimate(prepared.raw_tokens)
            return prepared

    async def compact(
        self,
        *,
        model: str,
        provider: ModelProvider,
        tools: Sequence[ToolSpec] = (),
        trigger: CompactionTrigger = CompactionTrigger.ON_DEMAND,
        keep_everything: bool = False,
    ) -> CompactionRecorded:
        """Compact now (`/compact`, or after `ContextWindowExceeded`); see `compaction`.

        An overflow compaction keeps the newest history that fits a fraction of the
        window; with `keep_everything` it summarises all of it (a second overflow in
        the turn: what was kept did not fit either). Cancel by cancelling the calling
        task: `CompactionCancelled` is recorded.
        """
        async with self._lock:
            return await self._compact(model, provider, tools, trigger, keep_everything)

    async def _compact(
        self,
        model: str,
        provider: ModelProvider,
        tools: Sequence[ToolSpec],
        trigger: CompactionTrigger,
        keep_everything: bool = False,
    ) -> CompactionRecorded:
        await self._adopt_guide()
        projection = await self.sync()
        guide = projection.guide
        assert guide is not None  # adopted just now
        keep_fraction = (
            0.0 if trigger is CompactionTrigger.ON_DEMAND else self.settings.keep_recent_fraction
        )
        if keep_everything:
            keep_fraction = 0.0
        keep_tokens = int(keep_fraction * self.tokens.window_tokens / self.tokens.ratio)
        recorded = await run_compaction(
            self.branch,
            projection,
            provider=provider,
            model=model,
            guide=guide.text,
            tools=tools,
            trigger=trigger,
            keep_tokens=keep_tokens,
            tokens=self.tokens,
            new_id=self._new_id,
            max_output_tokens=min(
                self.settings.summary_max_output_tokens, self.tokens.window_tokens // 4
            ),
        )
        await self.sync()
        return recorded

    async def _build(
        self,
        model: str,
        tools: Sequence[ToolSpec],
        max_output_tokens: int | None,
        reasoning_effort: ReasoningEffort | None,
    ) -> PreparedRequest:
        await self._adopt_guide()
        projection = await self.sync()
        guide = projection.guide
        assert guide is not None  # adopted just now
        messages = projection.messages()
        prefix = 0
        for projected in messages:
            if projected.last_seq >= projection.last_request_seq:
                break
            prefix += 1
        request = ModelRequest(
            model=model,
            guide=guide.text,
            messages=[projected.message for projected in messages],
            tools=tools,
            max_output_tokens=max_output_tokens,
            reasoning_effort=reasoning_effort,
            cacheable_prefix=prefix,
            origin=await self._origin(),
        )
        # `estimate_request_tokens(request)`, with each message's estimate kept from when
        # it was folded: a long session's requests carry thousands again each time.
        bare = ModelRequest(model=model, guide=guide.text, messages=[], tools=tools)
        raw = estimate_request_tokens(bare) + sum(projected.tokens for projected in messages)
        estimate = self.tokens.calibrated(raw)
        last_seq = Seq(projection.last_seq)
        return PreparedRequest(request, guide.guide_version, estimate, last_seq, raw)

    async def _origin(self) -> RequestOrigin:
        """Where the next request comes from: this line of work, its requests so far."""
        record = self.branch.record
        if record.parent_id is None:
            return RequestOrigin(earlier_requests=self._requests)
        if self._place is None:
            place = 0
            if self._store is not None:
                records = await self._store.list_branches(record.session_id)
                children = [r.branch_id for r in records if r.parent_id is not None]
                place = children.index(record.branch_id)
            self._place = place
        return RequestOrigin(self._place, record.label, self._requests)

    async def _adopt_guide(self) -> None:
        """Record `GuideAdopted` if the registered entries make a new guide."""
        current = self.guide.guide()
        adopted = (await self.sync()).guide
        if adopted is None or adopted.guide_version != current.version:
            await self._record(
                [GuideAdopted(current.version, list(current.entry_ids), current.text)]
            )

    async def _record(self, facts: Sequence[Payload]) -> None:
        if facts:
            await self.branch.append([EventDraft(fact, CONTEXT_PRODUCER) for fact in facts])

    # --- tokens -------------------------------------------------------------------------

    def note_usage(self, input_tokens: int, output_tokens: int) -> None:
        """The provider reported usage for the last prepared request."""
        self.tokens.note_usage(input_tokens, output_tokens)

    def note_overflow(self) -> int:
        """The provider refused the last prepared request as too long: learn a smaller
        window (`TokenAccount.note_overflow`); returns the window now."""
        return self.tokens.note_overflow()

    def _overhead_tokens(self, request: ModelRequest) -> int:
        """What `request` costs before any message: the guide and the tools, calibrated."""
        bare = ModelRequest(model="", guide=request.guide, messages=[], tools=request.tools)
        return self.tokens.calibrated(estimate_request_tokens(bare))

    def window(self) -> int:
        """The context window requests must fit (configured, or learned smaller)."""
        return self.tokens.window_tokens

    def input_limit(self, tools: Sequence[ToolSpec] = ()) -> int:
        """The most tokens the person's message may cost: the window, less the guide and
        the tools (history can be compacted away; the message and those cannot)."""
        bare = ModelRequest(model="", guide=self.guide.guide().text, messages=[], tools=tools)
        return max(0, self.tokens.window_tokens - self._overhead_tokens(bare))

    def input_tokens(self, content: Sequence[ContentPart]) -> int:
        """What the person's content parts cost as a message, calibrated."""
        message = Message("user", user_input_parts(content))
        return self.tokens.calibrated(estimate_message_tokens(message))

    def usage(self) -> ContextUsage:
        """How full the context is, for `usage_update`."""
        return self.tokens.usage()


def build_context_engine(
    branch: Branch,
    *,
    guide: GuideRegistry,
    config_dir: Path | None,
    environment: Environment | None = None,
    clock: Callable[[], datetime.datetime] | None = None,
    extra_sources: Sequence[StateSource] = (),
    settings: ContextSettings | None = None,
    task: str | None = None,
    additional_roots: Callable[[], Sequence[Path]] = tuple,
    store: Store | None = None,
    notices: NoticeSink = NO_NOTICES,
) -> ContextEngine:
    """The engine for `branch` with the built-in state sources and rule files.

    The workspace is the session's cwd and `additional_roots` (read at each turn
    start: a load may change them); `branch/identity` names the branch (`main`,
    or its label, where it started and its `task`); `extra_sources` add values
    other components know (`session/commands`, `session/skills`); `notices` hears
    of a rule file that could not be read.
    """
    cwd = branch.cwd
    record = branch.record
    identity = BranchIdentitySource(
        record.label,
        record.branch_id,
        parent=record.parent_id,
        cut_seq=int(record.cut_seq),
        task=task,
    )
    sources = default_state_sources(
        cwd,
        environment=environment if environment is not None else Environment.detect(),
        clock=clock,
        identity=identity,
        additional_directories=additional_roots,
    )
    return ContextEngine(
        branch,
        guide=guide,
        state_sources=[*sources, *extra_sources],
        workspace=Path(cwd),
        additional_roots=additional_roots,
        config_dir=config_dir,
        settings=settings,
        store=store,
        notices=notices,
    )
