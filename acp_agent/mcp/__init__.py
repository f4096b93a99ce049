"""mcp."""

__all__: tuple[str, ...] = ()
