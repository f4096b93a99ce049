"""The generated modules are current, and the generator refuses schemas it cannot read.

Both versions: v1 into `protocol/`, v2 into `protocol/v2/`, each schema the copy its
README records.
"""

from __future__ import annotations

import copy
import hashlib
import re
import subprocess
import sys

import pytest

from protocol import generate

#: The committed generated modules, by path under protocol/ (as `generate()` names them).
GENERATED = {
    path.relative_to(generate.OUTPUT_DIR).as_posix(): path.read_text(encoding="utf-8")
    for folder in (generate.OUTPUT_DIR, generate.OUTPUT_DIR / "v2")
    for path in sorted(folder.glob("*.py"))
    if path.name in ("types.py", "methods.py") or path.name.startswith("_types_")
}


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


@pytest.mark.parametrize(
    "schema",
    ["schema.json", "schema.unstable.json", "v2/schema.json", "v2/schema.unstable.json"],
)
def test_every_vendored_schema_is_the_recorded_upstream_copy(schema: str) -> None:
    digest = hashlib.sha256((generate.SCHEMA_DIR / schema).read_bytes()).hexdigest()
    readme = (generate.SCHEMA_DIR / "README.md").read_text(encoding="utf-8")
    (row,) = [line for line in readme.splitlines() if line.startswith(f"| `{schema}` |")]
    assert row.endswith(f"| `{digest}` |"), (
        f"protocol/schema/{schema} differs from the copy its README records; replace it "
        "with an upstream copy and record its origin and sha256"
    )


def test_each_version_is_generated_into_its_own_package_which_v1_never_imports() -> None:
    v1 = {path: source for path, source in GENERATED.items() if not path.startswith("v2/")}
    v2 = {path: source for path, source in GENERATED.items() if path.startswith("v2/")}
    assert set(v2) == {f"v2/{name}" for name in v1}
    assert len(v2) == 6
    assert not any("protocol.v2" in source for source in v1.values())
    # v2's parts import only v2's parts; its table shares v1's vocabulary (`Side`...).
    for path, source in v2.items():
        imported = set(re.findall(r"^\s*from (protocol\S*) import", source, re.MULTILINE))
        allowed = {"protocol", "protocol._wire", "protocol.methods", "protocol.v2"}
        assert imported <= allowed | {i for i in imported if i.startswith("protocol.v2.")}, path
    assert "PROTOCOL_VERSION: Final = 2" in v2["v2/types.py"]
