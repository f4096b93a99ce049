"""v1 updates in v2's shapes: the one translation of events, two wires.

The v2 adapter shows events with the v1 adapter's translator (`UpdateTranslator`:
one place decides what an event looks like to a client) and rewrites each wire
update into v2's form here, where the two drafts differ:

- `tool_call` and `tool_call_update` become the one upsert `tool_call_update`;
- a diff (`path`, `oldText`, `newText`) becomes v2's `changes` with a git patch;
- chunks keep their `messageId` (v2 requires one; v1's translator always sets it);
- a call's local terminal (v1's `_meta.terminal_*` extension, which the v2 adapter's
  sessions always stream) becomes v2's agent-owned display terminal:
  `terminal_update`s and `terminal_output_chunk`s beside the call's upserts;
- `current_mode_update` and the legacy `plan` are dropped (v2 has no modes; plans are
  `plan_update`s), as is anything v2 has no form for (logged);
- the rest (`usage_update`, `session_info_update`, `notice`, `compaction_update`,
  `plan_update`) is the same shape in both.

The result is plain JSON, structured into `protocol.v2.types` by the stream, which
drops (and logs) what does not fit the v2 schema.
"""

from __future__ import annotations

import base64
import difflib
import logging
from typing import Any, Final

__all__ = ("state_idle", "state_update", "v2_update", "v2_updates")

logger = logging.getLogger(__name__)

#: Updates whose v1 and v2 shapes are one.
_SAME: Final = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "usage_update",
        "session_info_update",
        "notice",
        "compaction_update",
        "plan_update",
    }
)
#: v1 updates v2 has nothing for.
_DROPPED: Final = frozenset({"current_mode_update", "plan", "available_commands_update"})
#: v2's stop reasons (`IdleStateUpdate`); another one is sent as `end_turn`.
_STOP_REASONS: Final = frozenset(
    {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
)


def v2_updates(update: dict[str, Any]) -> list[dict[str, Any]]:
    """The v2 bodies of one v1 `session/update` body (wire JSON): none, one, or, for a
    call's local terminal (v1's `_meta.terminal_*` extension), v2's own terminal updates
    with the call's (see `_terminal`)."""
    body = v2_update(update)
    if body is None:
        return []
    if body.get("sessionUpdate") != "tool_call_update":
        return [body]
    return _terminal(body)


def v2_update(update: dict[str, Any]) -> dict[str, Any] | None:
    """The v2 form of one v1 `session/update` body (wire JSON), or None if v2 has none."""
    kind = update.get("sessionUpdate")
    if kind in _SAME:
        if kind.endswith("_chunk") and not update.get("messageId"):
            logger.debug("a %s without a message id is not sent over v2", kind)
            return None
        return dict(update)
    if kind in ("tool_call", "tool_call_update"):
        return _tool_call(update)
    if kind not in _DROPPED:
        logger.debug("v2 has no form for a %s update; not sent", kind)
    return None


def state_update(state: str, **fields: Any) -> dict[str, Any]:
    """A `state_update` body (`running`, `requires_action`)."""
    return {"sessionUpdate": "state_update", "state": state, **fields}


def state_idle(stop_reason: str) -> dict[str, Any]:
    """The `idle` state with why the work stopped."""
    reason = stop_reason if stop_reason in _STOP_REASONS else "end_turn"
    return state_update("idle", stopReason=reason)


def _tool_call(update: dict[str, Any]) -> dict[str, Any]:
    body = {key: value for key, value in update.items() if key != "sessionUpdate"}
    content = body.get("content")
    if isinstance(content, list):
        body["content"] = [_tool_content(item) for item in content]
    return {"sessionUpdate": "tool_call_update", **body}


def _terminal(call: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool call's v1 terminal extension as v2's agent-owned display terminal: the
    terminal announced (`terminal_update` with its cwd) before the call shows it, its
    output as `terminal_output_chunk`s (base64), its exit as a last `terminal_update`."""
    meta = dict(call.get("_meta") or {})
    info = meta.pop("terminal_info", None)
    output = meta.pop("terminal_output", None)
    exit_status = meta.pop("terminal_exit", None)
    if info is None and output is None and exit_status is None:
        return [call]
    call = {**call, "_meta": meta or None}
    if call["_meta"] is None:
        del call["_meta"]
    bodies: list[dict[str, Any]] = []
    if isinstance(info, dict):
        bodies.append(
            {
                "sessionUpdate": "terminal_update",
                "terminalId": info["terminal_id"],
                "cwd": info.get("cwd"),
                "capabilities": {"cancel": {}},
            }
        )
    if isinstance(output, dict):
        data = base64.b64encode(str(output.get("data", "")).encode()).decode()
        chunk = {"sessionUpdate": "terminal_output_chunk", "terminalId": output["terminal_id"]}
        bodies.append({**chunk, "data": data})
        if set(call) <= {"sessionUpdate", "toolCallId"}:
            return bodies  # the output was all that update said
    bodies.append(call)
    if isinstance(exit_status, dict):
        status = {"exitCode": exit_status.get("exit_code"), "signal": exit_status.get("signal")}
        bodies.append(
            {
                "sessionUpdate": "terminal_update",
                "terminalId": exit_status["terminal_id"],
                "exitStatus": status,
                "capabilities": None,
            }
        )
    return bodies


def _tool_content(item: Any) -> Any:
    """A diff in v2's form (changes and a git patch); other content as it is."""
    if not isinstance(item, dict) or item.get("type") != "diff":
        return item
    path = str(item.get("path", ""))
    old, new = item.get("oldText"), item.get("newText")
    operation = "add" if old is None else "modify"
    patch = "".join(
        difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            str(new or "").splitlines(keepends=True),
            fromfile="/dev/null" if old is None else f"a{path}",
            tofile=f"b{path}",
        )
    )
    diff: dict[str, Any] = {"type": "diff", "changes": [{"operation": operation, "path": path}]}
    if patch:
        diff["patch"] = {"format": "git_patch", "text": patch}
    if item.get("_meta") is not None:
        diff["_meta"] = item["_meta"]
    return diff
