"""lsp."""

__all__: tuple[str, ...] = ()
