"""capabilities."""

__all__: tuple[str, ...] = ()
