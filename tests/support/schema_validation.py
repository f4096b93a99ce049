"""The schema checker the tests use: `protocol.validation`, shared with `acp-agent check`."""

from protocol.validation import SCHEMA_DIR, WireValidator

__all__ = ("SCHEMA_DIR", "WireValidator")
