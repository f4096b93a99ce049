"""The fixture every test of `acp-agent lsp` starts its language servers with."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest_asyncio

from tests_lsp.editor import Editor, start_editor


@pytest_asyncio.fixture
async def start(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Starts `acp-agent lsp` for a workspace folder with `app.py` on disk (see
    `start_editor`); each is shut down as an editor does at the end."""
    started: list[Editor] = []
    yield partial(start_editor, started, tmp_path)
    for editor in started:
        await editor.close()
