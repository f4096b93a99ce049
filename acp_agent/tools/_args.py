"""Reading a tool's arguments: each getter names the argument and what was wrong with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acp_agent.toolkit import ToolInputError

__all__ = ("optional_bool", "optional_int", "optional_str", "require_str")


def require_str(arguments: Mapping[str, Any], name: str, *, allow_empty: bool = False) -> str:
    """The string argument `name`: missing, not a string or (unless allowed) empty is an error."""
    value = arguments.get(name)
    if not isinstance(value, str):
        raise ToolInputError(f"`{name}` is required and must be a string")
    if not allow_empty and not value:
        raise ToolInputError(f"`{name}` must not be empty")
    return value


def optional_str(arguments: Mapping[str, Any], name: str) -> str | None:
    """The string argument `name`, or None when absent (or null)."""
    value = arguments.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolInputError(f"`{name}` must be a string")
    return value


def optional_int(
    arguments: Mapping[str, Any],
    name: str,
    *,
    default: int | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int | None:
    """The integer argument `name` (a float with no fraction counts), or `default` when absent."""
    value = arguments.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolInputError(f"`{name}` must be an integer")
    if minimum is not None and value < minimum:
        raise ToolInputError(f"`{name}` must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise ToolInputError(f"`{name}` must be at most {maximum}")
    return value


def optional_bool(arguments: Mapping[str, Any], name: str, *, default: bool = False) -> bool:
    """The boolean argument `name`, or `default` when absent."""
    value = arguments.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ToolInputError(f"`{name}` must be true or false")
    return value
