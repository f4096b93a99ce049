"""A tool that works a runtime service: the branch tools and the job tools are built of it.

Such a tool touches nothing itself (what it starts or steers asks for its own
permissions), so it runs without asking; what a call does is `act(service,
arguments)`. `refuse` may turn a call away before it runs (a branch may not
steer branches), and the service's own refusals (`expected`) become error
results the model reads as "Not run: …".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import attrs

from acp_agent.content import TextContent
from acp_agent.toolkit._tool import (
    Effect,
    PermissionNeed,
    ToolContext,
    ToolDefinition,
    ToolKind,
    ToolPresentation,
    ToolResult,
)
from acp_agent.values import Value

__all__ = ("RuntimeTool", "object_schema", "text_result")

S = TypeVar("S")


def text_result(
    text: str, *, error: bool = False, raw: Any = None, shown: str | None = None
) -> ToolResult:
    """A result of one text for the model; the editor shows `shown` (default: the same)."""
    return ToolResult((TextContent(text if shown is None else shown),), text, error, raw)


def object_schema(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON Schema of an arguments object."""
    return {"type": "object", "properties": properties, "required": list(required)}


def _never(service: Any, context: ToolContext) -> str | None:
    return None


@attrs.frozen
class RuntimeTool(Value, Generic[S]):
    """A tool bound to a runtime `service` (see the module docstring)."""

    definition: ToolDefinition
    title: Callable[[Mapping[str, Any]], str]
    act: Callable[[S, Mapping[str, Any]], Awaitable[ToolResult]]
    service: S
    #: Why this call may not run here (None: it may).
    refuse: Callable[[S, ToolContext], str | None] = _never
    #: The service's refusals, shown as "Not run: …" (the model also reads an
    #: exception's `advice`, when it has one).
    expected: tuple[type[Exception], ...] = ()

    def present(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> ToolPresentation:
        return ToolPresentation(self.title(arguments), ToolKind.OTHER)

    def permission(self, arguments: Mapping[str, Any], roots: Sequence[Path]) -> PermissionNeed:
        return PermissionNeed(Effect.READ_ONLY, self.definition.name)

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        reason = self.refuse(self.service, context)
        if reason is not None:
            return text_result(f"Not run: {reason}.", error=True)
        try:
            return await self.act(self.service, arguments)
        except self.expected as exc:
            advice = getattr(exc, "advice", None)
            shown = f"Not run: {exc}."
            text = f"Not run: {exc}; {advice}." if advice else shown
            return text_result(text, error=True, shown=shown)
