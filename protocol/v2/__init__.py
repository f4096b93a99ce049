"""ACP v2 beside v1: its generated types, its method table and its converter.

Generated from the v2 draft vendored in `protocol/schema/v2/` (see its README) by the
same generator as v1 (`python -m protocol.generate`):

- `protocol.v2.types`: attrs classes for every v2 definition, in parts loaded on use;
- `protocol.v2.methods`: the v2 method table (`REQUESTS`, `NOTIFICATIONS`);
- `protocol.v2.converter`: the converter for their wire form (v1's hooks, shared).

Nothing outside this package imports it, so a process speaking v1 never loads it.
Validating v2 lines is `protocol.validation.WireValidator(protocol_version=2)`.
"""

__all__ = ("converter", "methods", "types")
