"""acp."""

__all__: tuple[str, ...] = ()
