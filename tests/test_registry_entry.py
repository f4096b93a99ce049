"""The ACP registry entry (registry/) passes the registry's checks and matches this package.

The schema is the registry's, vendored verbatim; the other rules are the ones
the registry's CONTRIBUTING.md states and its CI applies (registry/README.md
says where each comes from). Whether the installed agent passes the registry's
`initialize` auth check is tested on the built wheel, in test_distribution.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
import xml.etree.ElementTree as ET
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import acp_agent

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "registry"
SCHEMA = REGISTRY / "agent.schema.json"
PROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
ENTRY_DIR = REGISTRY / PROJECT["name"]

#: What the registry's CI accepts for a fill or stroke: the icon follows the theme.
MONOCHROME = {"currentcolor", "none", "inherit"}
SVG_NS = "{http://www.w3.org/2000/svg}"


def entry() -> dict[str, Any]:
    data = json.loads((ENTRY_DIR / "agent.json").read_text())
    assert isinstance(data, dict)
    return data


def package_name(spec: str) -> str:
    """The PyPI name in a uvx package spec (`name[extra]==1.0`), as the registry reads it."""
    return re.split(r"[<>=!@\[;\s]", spec, maxsplit=1)[0]


def test_vendored_schema_is_the_recorded_upstream_copy() -> None:
    digest = hashlib.sha256(SCHEMA.read_bytes()).hexdigest()
    assert f"`{digest}`" in (REGISTRY / "README.md").read_text(), (
        "registry/agent.schema.json differs from the copy registry/README.md records; "
        "replace it with an upstream copy and record its origin and sha256"
    )


def test_entry_is_valid_against_the_registry_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    problems = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(entry())]
    assert problems == []


def test_entry_folder_is_as_the_registry_lays_it_out() -> None:
    assert entry()["id"] == ENTRY_DIR.name
    assert re.fullmatch(r"[a-z][a-z0-9-]*", ENTRY_DIR.name)
    assert sorted(p.name for p in ENTRY_DIR.iterdir()) == ["agent.json", "icon.svg"]


def test_entry_version_is_the_package_version_and_the_pinned_one() -> None:
    data = entry()
    assert re.fullmatch(r"\d+\.\d+\.\d+", data["version"]), data["version"]
    assert data["version"] == acp_agent.__version__
    assert PROJECT["dynamic"] == ["version"]
    try:
        metadata_version = installed_version(PROJECT["name"])
    except PackageNotFoundError:
        pytest.fail(f"{PROJECT['name']} is not installed; run pip install -e '.[dev]'")
    assert metadata_version == data["version"], (
        "the installed metadata is stale; reinstall with pip install -e '.[dev]'"
    )
    spec = data["distribution"]["uvx"]["package"]
    assert "latest" not in spec.lower()
    assert spec == f"{package_name(spec)}=={data['version']}"


def test_uvx_runs_this_distributions_agent_script() -> None:
    """`uvx <package>` runs the script named like the package: it must be acp-agent's."""
    data = entry()
    assert set(data["distribution"]) == {"uvx"}
    uvx = data["distribution"]["uvx"]
    assert package_name(uvx["package"]) == PROJECT["name"]
    scripts = PROJECT["scripts"]
    assert scripts.get(PROJECT["name"]) == scripts["acp-agent"]
    # No arguments: with none the script serves ACP on stdio.
    assert uvx.get("args", []) == []
    assert uvx.get("env", {}) == {}


def test_entry_says_what_pyproject_says() -> None:
    data = entry()
    assert data["description"] == PROJECT["description"]
    assert data["license"] == PROJECT["license"]
    assert data["authors"] == [author["name"] for author in PROJECT["authors"]]


def test_icon_is_a_16px_square_monochrome_svg() -> None:
    text = (ENTRY_DIR / "icon.svg").read_text()
    # The registry embeds icons in MDX, where comments break it.
    assert "<!--" not in text
    root = ET.fromstring(text)
    assert root.tag == f"{SVG_NS}svg"
    assert (root.get("width"), root.get("height")) == ("16", "16")
    assert root.get("viewBox", "").split() == ["0", "0", "16", "16"]

    colours: list[str] = []
    for element in root.iter():
        tag = element.tag.removeprefix(SVG_NS)
        assert tag not in {"image", "style", "foreignObject", "script"}, f"<{tag}> in the icon"
        for name, value in element.attrib.items():
            assert "data:" not in value, f"embedded data in {tag}@{name}"
            assert not name.endswith("href") or value.startswith("#"), f"{tag}@{name}={value}"
        for attribute in ("fill", "stroke", "color", "stop-color"):
            if attribute in element.attrib:
                colours.append(element.attrib[attribute])
        for declaration in element.get("style", "").split(";"):
            name, _, value = declaration.partition(":")
            if name.strip().lower() in {"fill", "stroke", "color", "stop-color"}:
                colours.append(value)
    assert colours, "the icon sets no fill or stroke"
    assert {colour.strip().lower() for colour in colours} <= MONOCHROME, colours
    assert "currentcolor" in {colour.strip().lower() for colour in colours}
