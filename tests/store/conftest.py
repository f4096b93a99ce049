from tests.core.anyio_backends import pytest_generate_tests

__all__ = ("pytest_generate_tests",)
