"""The model loop: one per branch, running its turns.

`ModelLoop` (a branch service) turns a prompt into model requests and tool
batches until the turn ends, recording every step on the branch's timeline;
`LoopSettings` are its limits (`DEFAULT_MAX_TURN_REQUESTS`), and a prompt
the context window cannot hold is `PromptTooLarge`.
"""

from __future__ import annotations

from acp_agent.capabilities.loop._loop import (
    DEFAULT_MAX_TURN_REQUESTS,
    LoopSettings,
    ModelLoop,
    PromptTooLarge,
)

__all__ = (
    "DEFAULT_MAX_TURN_REQUESTS",
    "LoopSettings",
    "ModelLoop",
    "PromptTooLarge",
)
