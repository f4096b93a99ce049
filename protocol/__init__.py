"""The ACP wire layer: generated types, converter, method table and JSON-RPC over ndjson."""
