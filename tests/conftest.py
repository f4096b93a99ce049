"""Test-wide settings.

Hypothesis runs derandomized under CI (the `CI` variable is set there), so a
landing never depends on luck; locally it explores new examples each run.
`HYPOTHESIS_PROFILE=thorough` multiplies the examples for a deeper search.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", max_examples=40, derandomize=True, print_blob=True)
settings.register_profile("dev", max_examples=40, print_blob=True)
settings.register_profile("thorough", max_examples=1000, print_blob=True)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)
