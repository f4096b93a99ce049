"""The ACP v2 adapter: the v1 adapter's sibling over the same session handles.

`choose_protocol` (`_choice`) picks v1 or v2 at a connection's `initialize`;
`AcpV2Agent` (`_agent`, imported on use: it loads `protocol.v2`) serves v2. Its
modules: one session's turns, each the session's own work (`_session`), its update
stream with cursors (`_stream`, `_cursor`), v1's update shapes rewritten as v2's
(`_wire`), background jobs as display terminals (`_jobs`), the permission questions
(`_prompter`), the slash commands and options (`_commands`, `_options`) and what a
v2 client offers the tools (`_terminals`). The app server's v2 connections build on
it (`adapters/server/_v2`).
"""

from acp_agent.adapters.acp2._choice import (
    PROTOCOL_ENV,
    ProtocolSetting,
    choose_protocol,
    chosen_version,
    protocol_setting,
)

__all__ = (
    "PROTOCOL_ENV",
    "ProtocolSetting",
    "choose_protocol",
    "chosen_version",
    "protocol_setting",
)
