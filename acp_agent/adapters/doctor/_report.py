"""What `acp-agent doctor` found: one `Check` per thing looked at, and the verdict.

Each check has a stable `name` (`model`, `store`, `mcp:<server>`, `lsp:<language>`,
...), a `Status`, a one-line `summary`, for a problem a one-line `fix`, and
`details`: JSON values worth seeing (text, which may span lines, such as a stderr
tail; numbers; lists of short items, such as tool names). The `--json` shape,
version 1::

    {"version": 1, "ok": true,
     "checks": [{"name": "model", "status": "ok", "summary": "...",
                 "fix": "...", "details": {"url": "..."}}]}

`fix` and `details` are left out when there is none. `ok` is the exit status's
verdict: a prompt would work (the checks that `gate_prompt` have no problem:
the config file, the model and its provider, the store). Warnings never fail, and
neither do problems of the parts a prompt can do without (an MCP server, a
language server). A new field or check may appear without a version change; a
changed or removed one bumps `version`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

import attrs

from acp_agent.values import Value

__all__ = ("FORMAT_VERSION", "Check", "DetailValue", "Report", "Status")

#: The version of the `--json` shape; bumped on an incompatible change.
FORMAT_VERSION: Final = 1

#: What a detail holds: text (a line, or lines such as a stderr tail), a number, or a
#: list of short items (names, paths).
DetailValue: TypeAlias = str | int | float | bool | Sequence[str] | None


class Status(enum.Enum):
    """How one check went."""

    #: Works as it should.
    OK = "ok"
    #: Works, but something is missing or odd; worth a look, never a failure.
    WARNING = "warning"
    #: Does not work; `fix` says what to do.
    PROBLEM = "problem"


@attrs.frozen
class Check(Value):
    """One thing doctor looked at, and what it found."""

    name: str
    status: Status
    summary: str
    fix: str | None = None
    details: Mapping[str, DetailValue] = attrs.field(factory=dict)
    #: Whether a problem here means a prompt would not work (it fails the run).
    gates_prompt: bool = False

    def to_json(self) -> dict[str, Any]:
        """The check in the `--json` shape."""
        shown: dict[str, Any] = {
            "name": self.name,
            "status": self.status.value,
            "summary": self.summary,
        }
        if self.fix is not None:
            shown["fix"] = self.fix
        if self.details:
            shown["details"] = {
                key: list(value)
                if isinstance(value, Sequence) and not isinstance(value, str)
                else value
                for key, value in self.details.items()
            }
        return shown


@attrs.frozen
class Report(Value):
    """Every check, in the order they are shown."""

    checks: tuple[Check, ...]

    @property
    def prompt_would_work(self) -> bool:
        """No check a prompt depends on has a problem."""
        return not any(c.gates_prompt and c.status is Status.PROBLEM for c in self.checks)

    @property
    def exit_status(self) -> int:
        """0 when a prompt would work, else 1."""
        return 0 if self.prompt_would_work else 1

    def count(self, status: Status) -> int:
        return sum(1 for check in self.checks if check.status is status)

    def to_json(self) -> dict[str, Any]:
        """The report in the `--json` shape (module docstring)."""
        return {
            "version": FORMAT_VERSION,
            "ok": self.prompt_would_work,
            "checks": [check.to_json() for check in self.checks],
        }
