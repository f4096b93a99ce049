"""The converter for ACP v2 types: v1's, whose hooks read whichever version's tables loaded.

The hooks (`protocol._hooks`) are driven by the generated tables of the parts imported so
far, which v2's parts add to as v1's do (`protocol._wire.LOADED_TABLES`). So one converter
serves both versions, and a process speaking both builds each class's functions once.
"""

from __future__ import annotations

from protocol.converter import get_converter, shared_converter, structure_error_message

__all__ = ("get_converter", "shared_converter", "structure_error_message")
