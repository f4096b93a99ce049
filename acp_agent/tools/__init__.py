"""tools."""

__all__: tuple[str, ...] = ()
