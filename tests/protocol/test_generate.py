"""The generated modules are current, and the generator refuses schemas it cannot read."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from protocol import generate


def test_committed_generated_modules_match_a_fresh_generation() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "protocol.generate", "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_generation_is_deterministic() -> None:
    assert generate.generate() == generate.generate()


def test_a_schema_with_a_dangling_reference_is_refused() -> None:
    stable, unstable = generate.load()
    broken = copy.deepcopy(unstable)
    broken["$defs"]["PromptRequest"]["properties"]["sessionId"] = {"$ref": "#/$defs/Nowhere"}
    with pytest.raises(ValueError, match="unresolved"):
        generate.validate(stable, broken)


def test_an_unstable_schema_missing_stable_definitions_is_refused() -> None:
    stable, unstable = generate.load()
    broken = copy.deepcopy(unstable)
    del broken["$defs"]["SessionModeId"]
    for definition in broken["$defs"].values():
        definition.pop("properties", None)
        definition.pop("anyOf", None)
        definition.pop("oneOf", None)
        definition.pop("allOf", None)
    with pytest.raises(ValueError, match="superset"):
        generate.validate(stable, broken)
