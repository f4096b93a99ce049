"""Permission to run a tool call: modes, remembered rules, and asking the person.

`decide` admits, refuses or asks about a call (`Allow`... `Ask`, `Refuse`)
from the session's `PermissionMode` (`confined`: whether a command runs in
the command sandbox), the workspace's remembered rules
(`remember`, `list_rules`, `revoke_rule`, `rule_text`) and nothing else; a
front end answers the questions as a `PermissionPrompter`
(`PermissionQuestion` in, `PermissionAnswer` out). The rules themselves are
the docstring of `_admission`. The modes load with the package (a new
session's answer offers them); admission loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from acp_agent.capabilities.permissions._modes import PermissionMode
from acp_agent.lazy_face import lazy_face as _lazy_face

if TYPE_CHECKING:
    from acp_agent.capabilities.permissions._admission import (
        Ask,
        PermissionAnswer,
        PermissionChoice,
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

#: Admission's names, loaded with their module on first use.
_LAZY_NAMES: Final = {name: "_admission" for name in __all__ if name != "PermissionMode"}

__getattr__, __dir__ = _lazy_face(__name__, _LAZY_NAMES)
