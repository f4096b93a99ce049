"""acp-agent: a coding agent served over the Agent Client Protocol on stdio."""

__version__ = "0.1.0"

__all__ = ("__version__",)
