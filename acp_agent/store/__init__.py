"""store."""

__all__: tuple[str, ...] = ()
