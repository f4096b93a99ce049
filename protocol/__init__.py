"""The ACP wire layer: generated types, converter, method table and JSON-RPC over ndjson.

It knows nothing about agents; use it to build either end of ACP:

- `protocol.types`: attrs classes generated from the vendored schema;
- `protocol.methods`: the method table (`REQUESTS`, `NOTIFICATIONS`);
- `protocol.converter`: `get_converter()` for the wire form of those types;
- `protocol.connection`: `AgentConnection` and `ClientConnection` on stdio;
- `protocol.errors`: the error tree (wire codes, peer errors, misuse);
- `protocol.limits`: what a peer may send (how long a line, how deep its JSON);
- `protocol.text_chunks`: streamed text as `session/update` lines, fast;
- `protocol.v2`: ACP v2's own types, method table and converter (the draft), which
  nothing here imports.

Submodules are imported on demand, so using only the types loads neither the
engine nor asyncio's subprocess machinery.
"""

__all__ = (
    "connection",
    "converter",
    "errors",
    "limits",
    "methods",
    "text_chunks",
    "types",
    "v2",
)
