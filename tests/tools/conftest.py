"""Tool tests: real files under a temporary workspace, real processes, anyio backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.anyio_backends import pytest_generate_tests

__all__ = ("outside", "pytest_generate_tests", "workspace")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The session's cwd: an empty directory, absolute and resolved."""
    root = (tmp_path / "workspace").resolve()
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace, not part of it."""
    path = (tmp_path / "outside").resolve()
    path.mkdir()
    return path
