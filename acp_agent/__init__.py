"""acp-agent: a coding agent served over the Agent Client Protocol on stdio."""

__version__ = "0.1.0"

#: The name it is distributed under on PyPI ("acp-agent" there is another project).
DISTRIBUTION = "acp-coding-agent"

__all__ = ("DISTRIBUTION", "__version__")
