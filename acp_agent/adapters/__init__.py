"""adapters."""

__all__: tuple[str, ...] = ()
