"""models."""

__all__: tuple[str, ...] = ()
