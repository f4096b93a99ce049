from tests.core.anyio_backends import anyio_backend, pytest_pycollect_makeitem

__all__ = ("anyio_backend", "pytest_pycollect_makeitem")
