"""The last line of defence: no secret reaches the screen or the JSON.

Every string of a check (summary, fix, details) has the given secrets (API keys,
tokens, MCP headers) replaced by `[redacted]`, anything shaped like a key or a
bearer token too, and the userinfo of URLs shown as `***`.
"""

from __future__ import annotations

from collections.abc import Sequence

from acp_agent.adapters.doctor._report import Check, DetailValue, Report
from acp_agent.models import redact_secrets
from acp_agent.url_credentials import redact_url_credentials

__all__ = ("redact_check", "redact_report", "redact_text")


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """`text` without `secrets`, key-shaped strings or URL credentials."""
    return redact_secrets(redact_url_credentials(text), secrets)


def redact_check(check: Check, secrets: Sequence[str]) -> Check:
    """`check` with every string redacted."""

    def value(detail: DetailValue) -> DetailValue:
        if isinstance(detail, str):
            return redact_text(detail, secrets)
        if isinstance(detail, Sequence):
            return [redact_text(item, secrets) for item in detail]
        return detail

    return Check(
        redact_text(check.name, secrets),
        check.status,
        redact_text(check.summary, secrets),
        None if check.fix is None else redact_text(check.fix, secrets),
        {key: value(detail) for key, detail in check.details.items()},
        check.gates_prompt,
    )


def redact_report(report: Report, secrets: Sequence[str]) -> Report:
    """`report` with every check redacted."""
    return Report(tuple(redact_check(check, secrets) for check in report.checks))
