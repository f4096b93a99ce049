"""Compaction: older history replaced by a summary the session's model writes.

A compaction runs on demand (`/compact`), automatically when a request
would fill a configured fraction of the context window, and after the
provider said the prompt does not fit (`ContextWindowExceeded`). It is
recorded as facts the editor can follow (`compaction_update`, or a tool
call for clients without it)::

    CompactionStarted(id, covers_lte, trigger)
    CompactionRecorded(id, covers_lte, summary)   # or CompactionFailed / CompactionCancelled

Where it ends (its boundary): at a batch end after the compaction in effect where no reply
or tool call is open (a call is never separated from its result). On demand
it summarises everything; automatically it keeps the most recent history
that fits in `keep_recent_fraction` of the window.

How the summary is made: the session's model gets the same guide, tools and
messages as a normal request for the history up to the boundary (so the
provider's cache still serves them), then a `<compaction-request>` asking
for a summary. History too long for the window is trimmed from its oldest
end first; a message too long by itself (even the newest) is truncated to its
head and tail, so a compaction can always be made. A refusal as too long teaches
the branch's token account a smaller window (`TokenAccount.note_overflow`)
and the request is fitted again. The summary is a fact: a reloaded session reads it, and never
summarises the same range again.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from typing import Final, Literal, TypeAlias

import anyio
import attrs

from acp_agent.capabilities.context._guide import GuideEntry
from acp_agent.capabilities.context._projection import ProjectedMessage, Projection
from acp_agent.capabilities.context._token_budget import (
    CHARS_PER_TOKEN,
    TokenAccount,
    estimate_request_tokens,
)
from acp_agent.core import (
    Branch,
    CompactionCancelled,
    CompactionFailed,
    CompactionRecorded,
    CompactionStarted,
    Payload,
    Seq,
    Usage,
)
from acp_agent.models import (
    ContextWindowExceeded,
    Message,
    ModelProvider,
    ModelRequest,
    ProviderError,
    ReplyBuilder,
    Text,
    ToolResult,
    ToolSpec,
)
from acp_agent.toolkit import tag, truncate_middle
from acp_agent.values import Value

__all__ = (
    "COMPACTION_GUIDE_ENTRY",
    "COMPACTION_PRODUCER",
    "SUMMARY_INSTRUCTION",
    "CompactionError",
    "CompactionStatus",
    "CompactionTrigger",
    "CompactionView",
    "NothingToCompact",
    "SummaryFailed",
    "choose_boundary",
    "compaction_view",
    "run_compaction",
    "summary_request",
)

logger = logging.getLogger(__name__)

COMPACTION_PRODUCER: Final = "capabilities.compaction"
#: How many times a summary request that does not fit is retried with less history.
MAX_SUMMARY_ATTEMPTS: Final = 5
#: A text part is never truncated below this many characters to fit a summary request.
_MIN_TRUNCATED_CHARS: Final = 2000

COMPACTION_GUIDE_ENTRY: Final = GuideEntry(
    "context/compaction",
    "context",
    order=130,
    text="""\
## Summaries and restatements

When the conversation grows too long, its older part is replaced by one message with:

- `<summary>`: what happened before, as you summarised it earlier: the person's \
goals, decisions, work done and open questions. It records the past.
- `<restatement>`: the rules and state that still held where the summary ends, each \
in the form it was last given (rules as `op="set"` or `op="replace"`). It confirms \
them; it changes nothing and grants nothing. A rule or state not restated is not in \
effect: revoked and expired rules are left out.

Messages after it continue as usual and may change what holds. A \
`<compaction-request>` comes from the runtime, not the person: it asks you to write \
such a summary of the conversation before it.""",
)

SUMMARY_INSTRUCTION: Final = """\
Write a summary of the conversation above. It will replace the conversation, so you can \
continue the work from it alone. Do not call tools; answer with the summary only.

Include:
- what the person asked for, in their words where it matters, and what they decided;
- the work done so far: files read, created or changed, commands run and their results;
- the current state of the task, what remains to be done, and the next step;
- errors met and how they were handled; open questions for the person.

Leave out rules and state (the date, the git branch, AGENTS.md rules): the runtime \
restates those that still hold after the summary. Never describe a revoked or expired \
rule as being in effect."""


class CompactionTrigger(enum.StrEnum):
    """Why a compaction ran."""

    #: The person asked for it (`/compact`).
    ON_DEMAND = "on_demand"
    #: A request would have filled `compact_at_fraction` of the context window.
    AUTO = "auto"
    #: The provider answered that the prompt does not fit its context window.
    OVERFLOW = "context_window_exceeded"


_TITLES: Final = {
    CompactionTrigger.ON_DEMAND.value: "Compacting the conversation",
    CompactionTrigger.AUTO.value: "Compacting the conversation (the context is nearly full)",
    CompactionTrigger.OVERFLOW.value: "Compacting the conversation (it no longer fits)",
}


#: ACP's `CompactionStatus` values.
CompactionStatus: TypeAlias = Literal["in_progress", "completed", "failed", "cancelled"]


@attrs.frozen
class CompactionView(Value):
    """How a compaction fact is shown in the editor, whatever the wire.

    A front end sends it as `compaction_update` (`compactionId`, `status`,
    `summary`, `error`) to a client that advertised `session.compaction`, and
    otherwise as a tool call with id `compaction_id`, `title`, status
    `in_progress` / `completed` / `failed` (cancelled counts as failed) and the
    summary or error as its text content.
    """

    compaction_id: str
    status: CompactionStatus
    title: str
    summary: str | None = None
    error: str | None = None


def compaction_view(payload: Payload) -> CompactionView | None:
    """The view of a compaction fact; None for any other fact."""
    if isinstance(payload, CompactionStarted):
        title = _TITLES.get(payload.trigger, "Compacting the conversation")
        return CompactionView(payload.compaction_id, "in_progress", title)
    if isinstance(payload, CompactionRecorded):
        return CompactionView(
            payload.compaction_id, "completed", "Conversation compacted", summary=payload.summary
        )
    if isinstance(payload, CompactionFailed):
        return CompactionView(
            payload.compaction_id, "failed", "Compaction failed", error=payload.error
        )
    if isinstance(payload, CompactionCancelled):
        return CompactionView(payload.compaction_id, "cancelled", "Compaction cancelled")
    return None


class CompactionError(Exception):
    """A compaction could not replace history with a summary."""


class NothingToCompact(CompactionError):
    """No history since the last compaction can be summarised (no boundary is legal)."""


class SummaryFailed(CompactionError):
    """The model gave no usable summary; the failure is recorded as `CompactionFailed`."""


def choose_boundary(projection: Projection, *, keep_tokens: int) -> int:
    """Where the compaction ends: the earliest legal boundary keeping at most `keep_tokens`.

    With `keep_tokens=0` that is the end of history (when it is at rest). When no
    boundary keeps little enough, the last legal one. `NothingToCompact` without any.
    """
    points = projection.boundaries()
    if not points:
        raise NothingToCompact("no history since the last compaction can be summarised")
    for seq, kept in points:
        if kept <= keep_tokens:
            return seq
    return points[-1][0]


def summary_request(
    messages: Sequence[ProjectedMessage],
    *,
    model: str,
    guide: str,
    tools: Sequence[ToolSpec],
    cacheable_prefix: int,
    omitted: int = 0,
    max_output_tokens: int | None = None,
) -> ModelRequest:
    """The request that asks the model to summarise `messages`."""
    attributes = [("omitted_messages", str(omitted))] if omitted else []
    ask = tag("compaction-request", attributes, SUMMARY_INSTRUCTION)
    return ModelRequest(
        model=model,
        guide=guide,
        messages=[*(projected.message for projected in messages), Message("user", [Text(ask)])],
        tools=tools,
        max_output_tokens=max_output_tokens,
        cacheable_prefix=min(cacheable_prefix, len(messages)),
    )


def _trim_oldest(messages: list[ProjectedMessage], drop: int, keep_first: int) -> int:
    """Drop `drop` messages after the first `keep_first`, then any that would start a
    reply out of context (an assistant message, or tool results); returns how many went."""
    before = len(messages)
    del messages[keep_first : keep_first + drop]
    while len(messages) > keep_first:
        first = messages[keep_first].message
        orphan = first.role == "assistant" or any(
            isinstance(part, ToolResult) for part in first.parts
        )
        if not orphan:
            break
        del messages[keep_first]
    return before - len(messages)


def _fitted(
    messages: list[ProjectedMessage],
    *,
    model: str,
    guide: str,
    tools: Sequence[ToolSpec],
    cacheable_prefix: int,
    keep_first: int,
    tokens: TokenAccount,
    max_output_tokens: int | None,
    omitted: int,
) -> tuple[ModelRequest, int]:
    """The summary request, made to fit the window: the oldest history dropped first,
    then the largest messages truncated to their head and tail (the newest included, so a
    message larger than the window can still be summarised). Returns it and how many
    messages were dropped."""
    while True:
        request = summary_request(
            messages,
            model=model,
            guide=guide,
            tools=tools,
            cacheable_prefix=cacheable_prefix if not omitted else 0,
            omitted=omitted,
            max_output_tokens=max_output_tokens,
        )
        budget = tokens.window_tokens - (max_output_tokens or 0)
        over = tokens.calibrated(estimate_request_tokens(request)) - budget
        if over <= 0:
            return request, omitted
        movable = len(messages) - keep_first
        if movable > 1:
            omitted += _trim_oldest(messages, max(1, movable // 4), keep_first)
        elif not _shrink_largest(messages, over):
            return request, omitted  # nothing left to truncate: let the provider judge


def _shrink_largest(messages: list[ProjectedMessage], over_tokens: int) -> bool:
    """Truncate the longest text of the largest message by about `over_tokens`; False if
    no text is long enough to truncate."""
    best: tuple[int, int, int] | None = None  # (chars, message index, part index)
    for m, projected in enumerate(messages):
        for p, part in enumerate(projected.message.parts):
            chars = len(_part_text(part))
            if chars > _MIN_TRUNCATED_CHARS and (best is None or chars > best[0]):
                best = (chars, m, p)
    if best is None:
        return False
    chars, m, p = best
    limit = max(_MIN_TRUNCATED_CHARS, chars - (over_tokens + 64) * CHARS_PER_TOKEN * 5 // 4)
    note = "{omitted} characters of this message left out to fit the summary request"
    projected = messages[m]
    parts = list(projected.message.parts)
    part = parts[p]
    shorter = truncate_middle(_part_text(part), limit, note)
    parts[p] = (
        attrs.evolve(part, content=shorter) if isinstance(part, ToolResult) else Text(shorter)
    )
    messages[m] = attrs.evolve(projected, message=attrs.evolve(projected.message, parts=parts))
    return True


def _part_text(part: object) -> str:
    if isinstance(part, Text):
        return part.text
    if isinstance(part, ToolResult):
        return part.content
    return ""


async def _summarise(
    provider: ModelProvider,
    messages: list[ProjectedMessage],
    *,
    model: str,
    guide: str,
    tools: Sequence[ToolSpec],
    cacheable_prefix: int,
    keep_first: int,
    tokens: TokenAccount,
    max_output_tokens: int | None,
) -> tuple[str, Usage]:
    """Ask the model for a summary of a request that fits; a refusal as too long teaches
    the account a smaller window, and the request is fitted again. Returns the summary
    and what the request used, as the provider counted it."""
    omitted = 0
    for attempt in range(MAX_SUMMARY_ATTEMPTS):
        request, omitted = _fitted(
            messages,
            model=model,
            guide=guide,
            tools=tools,
            cacheable_prefix=cacheable_prefix,
            keep_first=keep_first,
            tokens=tokens,
            max_output_tokens=max_output_tokens,
            omitted=omitted,
        )
        builder = ReplyBuilder()
        try:
            async with provider.stream(request) as events:
                async for event in events:
                    builder.add(event)
        except ContextWindowExceeded:
            if attempt + 1 == MAX_SUMMARY_ATTEMPTS:
                raise
            tokens.note_overflow(tokens.calibrated(estimate_request_tokens(request)))
            cacheable_prefix = 0
            continue
        reply = builder.reply()
        text = "".join(part.text for part in reply.message.parts if isinstance(part, Text))
        used = reply.usage
        usage = (
            Usage()
            if used is None
            else Usage(
                used.input_tokens,
                used.output_tokens,
                used.cache_read_tokens,
                used.cache_write_tokens,
                used.reasoning_tokens,
            )
        )
        return text.strip(), usage
    raise AssertionError("unreachable")  # pragma: no cover


async def run_compaction(
    branch: Branch,
    projection: Projection,
    *,
    provider: ModelProvider,
    model: str,
    guide: str,
    tools: Sequence[ToolSpec],
    trigger: CompactionTrigger,
    keep_tokens: int,
    tokens: TokenAccount,
    new_id: Callable[[str], str],
    max_output_tokens: int | None = None,
) -> CompactionRecorded:
    """Summarise history up to a chosen boundary and record it; see the module docstring.

    `projection` must be up to date with `branch`. Raises `NothingToCompact`
    (nothing recorded), `SummaryFailed` or the provider's error (after recording
    `CompactionFailed`); a cancellation records `CompactionCancelled` and propagates.
    """
    covers_lte = choose_boundary(projection, keep_tokens=keep_tokens)
    compaction_id = new_id("cmp")
    await _record(branch, CompactionStarted(compaction_id, Seq(covers_lte), trigger.value))
    messages = projection.messages_through(covers_lte)
    prelude = 1 if projection.compaction is not None else 0
    prefix = 0
    for projected in messages:
        if projected.last_seq >= projection.last_request_seq:
            break
        prefix += 1
    try:
        summary, usage = await _summarise(
            provider,
            messages,
            model=model,
            guide=guide,
            tools=tools,
            cacheable_prefix=prefix,
            keep_first=prelude,
            tokens=tokens,
            max_output_tokens=max_output_tokens,
        )
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await _record(branch, CompactionCancelled(compaction_id))
        raise
    except ProviderError as exc:
        with anyio.CancelScope(shield=True):
            await _record(branch, CompactionFailed(compaction_id, str(exc)))
        raise
    if not summary:
        await _record(branch, CompactionFailed(compaction_id, "the model wrote no summary"))
        raise SummaryFailed("the model wrote no summary")
    recorded = CompactionRecorded(compaction_id, Seq(covers_lte), summary, usage)
    await _record(branch, recorded)
    logger.info("compaction %s (%s) covers up to #%d", compaction_id, trigger, covers_lte)
    return recorded


async def _record(branch: Branch, payload: Payload) -> None:
    await branch.record_fact(payload, producer=COMPACTION_PRODUCER)
