"""A session's turns: the updates of a prompt, what follows its response, and the content
kinds a prompt may carry (the baseline text and resource link, and what is advertised)."""

from __future__ import annotations

from typing import Any, Final

from acp_agent.adapters.check._context import Run
from acp_agent.adapters.check._probe import NoAnswer, Probe
from acp_agent.adapters.check._replies import STOP_REASONS, Reply, dig, short
from acp_agent.adapters.check._rules import Verdict
from acp_agent.adapters.check._steps import (
    AUTH_REQUIRED,
    Inconclusive,
    prompt,
    quiet_after,
    text,
)
from protocol import methods

__all__ = ("RULE_IDS", "turn_rules")

RULE_IDS: Final = frozenset(
    {
        "prompt-updates-session-id",
        "nothing-after-prompt-response",
        "prompt-content",
        "prompt-capabilities",
    }
)
_TURN: Final = ("mine-chunk", "mine-turn")
_FOREIGN: Final = ("other-chunk", "other-turn")
#: The smallest PNG (one transparent pixel) and WAV (no samples), for the content kinds.
_PNG: Final = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kg"
    "AAAABJRU5ErkJggg=="
)
_WAV: Final = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="


async def turn_rules(run: Run, probe: Probe, session_id: str, capabilities: Any) -> None:
    """Prompt `session_id`, then with the content kinds; the rules about turns."""
    with probe.watch(session_id) as window:
        try:
            await prompt(run, probe, session_id, [text(run.prompt)], marks=window)
        except Inconclusive as exc:
            run.undecided(RULE_IDS, str(exc))
            return
        except NoAnswer as exc:
            run.undecided(RULE_IDS, f"the prompt: {exc.why}")
            return
        during = window.count(*_TURN, *_FOREIGN, after=False)
        foreign = window.count(*_FOREIGN, after=False)
        run.find(
            "prompt-updates-session-id",
            Verdict.FAIL if foreign else Verdict.PASS if during else Verdict.INCONCLUSIVE,
            f"{foreign} update(s) of another session during the prompt, the first: "
            f"{window.first(*_FOREIGN, after=False)}"
            if foreign
            else f"{during} update(s), all of {session_id}"
            if during
            else "the prompt sent no message or tool-call updates",
        )
        await quiet_after(run, probe, window, "nothing-after-prompt-response", _TURN)
    note = run.scratch / "note.txt"
    note.write_text("A note for the checker's prompt.\n")
    link = {"type": "resource_link", "uri": note.as_uri(), "name": note.name}
    await _content(run, probe, session_id, "prompt-content", [link], "text and a resource_link")
    kinds = _advertised_kinds(capabilities, note.as_uri())
    if not kinds:
        run.find(
            "prompt-capabilities",
            Verdict.NOT_APPLICABLE,
            "promptCapabilities advertise no image, audio or embeddedContext",
        )
        return
    names = ", ".join(kinds)
    await _content(run, probe, session_id, "prompt-capabilities", list(kinds.values()), names)


def _advertised_kinds(capabilities: Any, uri: str) -> dict[str, dict[str, Any]]:
    """A content block of each kind the agent's promptCapabilities advertise."""
    blocks: dict[str, dict[str, Any]] = {
        "image": {"type": "image", "mimeType": "image/png", "data": _PNG},
        "audio": {"type": "audio", "mimeType": "audio/wav", "data": _WAV},
        "embeddedContext": {
            "type": "resource",
            "resource": {"uri": uri, "mimeType": "text/plain", "text": "A note."},
        },
    }
    return {
        name: block
        for name, block in blocks.items()
        if dig(capabilities, "promptCapabilities", name) is True
    }


async def _content(
    run: Run, probe: Probe, session_id: str, rule_id: str, blocks: list[Any], what: str
) -> None:
    """A prompt of text and `blocks` is answered with a stop reason (called once a plain
    text prompt was: an error now is about the content, not a missing model)."""
    words = text(f"{run.prompt} (Some content is attached; no need to read it.)")
    try:
        reply = await probe.request(
            methods.SESSION_PROMPT, {"sessionId": session_id, "prompt": [words, *blocks]}
        )
    except NoAnswer as exc:
        # Slow is not wrong (a model may take long); dying on it is.
        verdict = Verdict.FAIL if exc.gone and not exc.before else Verdict.INCONCLUSIVE
        run.find(rule_id, verdict, f"a prompt of {what}: {exc.why}")
        return
    if reply.error_code == AUTH_REQUIRED:
        run.find(rule_id, Verdict.INCONCLUSIVE, f"a prompt of {what}: {reply.problem()}")
        return
    run.find(
        rule_id,
        Verdict.PASS if reply.ok and _stops(reply) else Verdict.FAIL,
        f"a prompt of {what} -> {_stop(reply)}",
    )


def _stops(reply: Reply) -> bool:
    """Whether the reply carries one of the stop reasons the schema defines."""
    stop = reply.get("stopReason")
    return isinstance(stop, str) and stop in STOP_REASONS


def _stop(reply: Reply) -> str:
    stop = reply.get("stopReason")
    return f"stopReason {short(stop, 40)}" if reply.ok else reply.describe()
