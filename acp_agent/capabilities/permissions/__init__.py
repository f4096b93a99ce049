"""Permission to run a tool call: modes, remembered rules, and asking the person.

`decide` admits, refuses or asks about a call (`Allow`... `Ask`, `Refuse`)
from the session's `PermissionMode` (`confined`: whether a command runs in
the command sandbox), the workspace's remembered rules
(`remember`, `list_rules`, `revoke_rule`, `rule_text`) and nothing else; a
front end answers the questions as a `PermissionPrompter`
(`PermissionQuestion` in, `PermissionAnswer` out). The rules themselves are
the docstring of `_admission`.
"""

from __future__ import annotations

from acp_agent.capabilities.permissions._admission import (
    Ask,
    PermissionAnswer,
    PermissionChoice,
    PermissionMode,
    PermissionPrompter,
    PermissionQuestion,
    Refuse,
    RefusingPrompter,
    confined,
    decide,
    list_rules,
    remember,
    revoke_rule,
    rule_text,
)

__all__ = (
    "Ask",
    "PermissionAnswer",
    "PermissionChoice",
    "PermissionMode",
    "PermissionPrompter",
    "PermissionQuestion",
    "Refuse",
    "RefusingPrompter",
    "confined",
    "decide",
    "list_rules",
    "remember",
    "revoke_rule",
    "rule_text",
)
