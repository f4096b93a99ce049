"""Check every message one side wrote against the vendored ACP JSON Schema.

Used by `acp-agent check` (on any agent) and by the tests (on ours), for either
protocol version: `WireValidator(protocol_version=2)` reads the v2 draft. It imports
jsonschema, so nothing on the serving path imports this module.

The schema is the oracle, independent of our generated types: a response
to method M must validate against M's response definition, a request or
notification against its params definition (found through the schema's
`x-method` markers), errors against `Error`; the envelope must be exact
JSON-RPC 2.0. On top of JSON Schema (which allows unknown keys) every
object is checked for keys the schema does not define: extensions belong
in `_meta`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import jsonschema
import referencing
import referencing.jsonschema

__all__ = ("SCHEMA_DIR", "SCHEMA_DIRS", "UNDEFINED_KEY", "WireValidator")

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
#: Each protocol version's vendored schema folder.
SCHEMA_DIRS = {1: SCHEMA_DIR, 2: SCHEMA_DIR / "v2"}

#: The words of a problem that is a key the schema does not define (the rest are
#: violations of the schema itself): extensions belong in `_meta`.
UNDEFINED_KEY = "key not in the schema"

_ENVELOPE_KEYS = {
    "request": {"jsonrpc", "id", "method", "params"},
    "notification": {"jsonrpc", "method", "params"},
    "result": {"jsonrpc", "id", "result"},
    "error": {"jsonrpc", "id", "error"},
}


class WireValidator:
    """Validates one side's messages given the other side's requests (for response types)."""

    def __init__(self, *, unstable: bool = False, protocol_version: int = 1):
        folder = SCHEMA_DIRS.get(protocol_version)
        if folder is None:
            raise ValueError(f"no vendored schema for protocol version {protocol_version}")
        self.protocol_version = protocol_version
        name = "schema.unstable.json" if unstable else "schema.json"
        self.schema: dict[str, Any] = json.loads((folder / name).read_text())
        self.defs: dict[str, Any] = self.schema["$defs"]
        resource = referencing.Resource.from_contents(
            self.schema, default_specification=referencing.jsonschema.DRAFT202012
        )
        self._registry = referencing.Registry().with_resource("urn:acp", resource)
        # Built once per definition and per sub-schema: building one costs far more than
        # validating a message with it, and a chatty peer sends thousands of one kind.
        self._by_def: dict[str, jsonschema.Draft202012Validator] = {}
        self._by_sub: dict[int, jsonschema.Draft202012Validator] = {}

    @cached_property
    def _by_method(self) -> dict[str, dict[str, list[str]]]:
        """method → {"params": [def names], "result": [def names]}."""
        table: dict[str, dict[str, list[str]]] = {}
        for name, definition in self.defs.items():
            method = definition.get("x-method")
            if method is None:
                continue
            role = "result" if name.endswith("Response") else "params"
            table.setdefault(method, {"params": [], "result": []})[role].append(name)
        return table

    def problems(self, sent: Iterable[bytes], received: Iterable[bytes]) -> list[str]:
        """Every problem with the `received` lines; `sent` tells which method each id asked."""
        asked: dict[Any, str] = {}
        for line in sent:
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                continue  # tests send garbage on purpose
            if (
                isinstance(message, dict)
                and isinstance(message.get("method"), str)
                and isinstance(message.get("id"), int | str)
            ):
                asked[message["id"]] = message["method"]
        found: list[str] = []
        for number, line in enumerate(received, 1):
            found.extend(f"line {number}: {p}" for p in self.line_problems(line, asked))
        return found

    def line_problems(self, line: bytes, asked: dict[Any, str]) -> list[str]:
        """Problems with one line written by the agent."""
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            return [f"not UTF-8 JSON ({exc}): {line[:120]!r}"]
        if not isinstance(message, dict):
            return [f"not a JSON object: {line[:120]!r}"]
        return self.message_problems(message, asked)

    def message_problems(self, message: dict[str, Any], asked: dict[Any, str]) -> list[str]:
        """Problems with one message (decoded) written by the agent."""
        if message.get("jsonrpc") != "2.0":
            return ['"jsonrpc" is not "2.0"']
        if "method" in message:
            kind = "request" if "id" in message else "notification"
        elif ("result" in message) != ("error" in message):
            kind = "result" if "result" in message else "error"
        else:
            return ["neither a call nor a response with exactly one of result and error"]
        extra = set(message) - _ENVELOPE_KEYS[kind]
        if extra:
            return [f"envelope keys outside JSON-RPC: {sorted(extra)}"]
        if kind != "notification" and not isinstance(message["id"], int | float | str | None):
            return [f"an id that is neither a number, a string nor null: {message['id']!r}"[:200]]
        if "method" in message and not isinstance(message["method"], str):
            return [f"a method that is not a string: {message['method']!r}"[:200]]
        if kind == "error":
            return self._against(message["error"], ["Error"], "error")
        if kind == "result":
            method = asked.get(message["id"])
            if method is None:
                return [f"a response to id {message['id']!r}, which was never asked"]
            return self._payload(method, "result", message["result"])
        return self._payload(message["method"], "params", message.get("params"))

    def _payload(self, method: str, role: str, payload: Any) -> list[str]:
        if method.startswith("_"):
            return []  # extension methods carry whatever their owners define
        entry = self._by_method.get(method)
        if entry is None or not entry[role]:
            return [f"{method}: not a method of this schema"]
        if role == "params" and self.defs[entry[role][0]].get("x-side") == "agent":
            return [f"{method}: a method the agent serves, called by the agent"]
        return self._against(payload, entry[role], method)

    def _against(self, instance: Any, def_names: list[str], what: str) -> list[str]:
        problems: list[str] = []
        for def_name in def_names:
            validator = self._by_def.get(def_name)
            if validator is None:
                schema = {"$ref": f"urn:acp#/$defs/{def_name}"}
                validator = self._by_def[def_name] = self._validator(schema)
            errors = sorted(validator.iter_errors(instance), key=str)
            if not errors:
                undefined = list(self._undefined_keys(instance, self.defs[def_name], "$"))
                if not undefined:
                    return []
                problems.extend(f"{what}: {UNDEFINED_KEY}: {u}" for u in undefined)
            else:
                problems.extend(
                    f"{what} is no {def_name}: {e.message} at {e.json_path}" for e in errors[:3]
                )
        return problems

    def _validator(self, schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
        return jsonschema.Draft202012Validator(schema, registry=self._registry)

    def _resolve(self, node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node and len(node) <= 2:
            node = self.defs[node["$ref"].rsplit("/", 1)[-1]]
        return node

    def _applicable(self, node: Any, instance: Any) -> Iterator[dict[str, Any]]:
        """The schema objects that apply to `instance`: refs followed, valid branches only."""
        if not isinstance(node, dict):
            return
        if "$ref" in node:
            yield from self._applicable(self.defs[node["$ref"].rsplit("/", 1)[-1]], instance)
        yield node
        for sub in node.get("allOf", ()):
            yield from self._applicable(sub, instance)
        for keyword in ("anyOf", "oneOf"):
            for sub in node.get(keyword, ()):
                if self._sub_validator(sub).is_valid(instance):
                    yield from self._applicable(sub, instance)

    def _sub_validator(self, sub: dict[str, Any]) -> jsonschema.Draft202012Validator:
        # Sub-schemas are parts of `self.defs`, alive as long as we are: their ids are stable.
        validator = self._by_sub.get(id(sub))
        if validator is None:
            validator = self._by_sub[id(sub)] = self._validator(self._rooted(sub))
        return validator

    def _rooted(self, sub: Any) -> Any:
        # Sub-schemas use "#/$defs/..." refs: resolve them against our registry's root.
        return json.loads(json.dumps(sub).replace('"#/$defs/', '"urn:acp#/$defs/'))

    def _undefined_keys(self, instance: Any, node: Any, path: str) -> Iterator[str]:
        nodes = list(self._applicable(node, instance))
        if isinstance(instance, dict):
            with_properties = [n for n in nodes if "properties" in n]
            open_ended = any(n.get("additionalProperties") not in (None, False) for n in nodes)
            if with_properties and not open_ended:
                known = {key for n in with_properties for key in n["properties"]}
                for key in sorted(set(instance) - known):
                    yield f"{path}.{key}"
            for key, value in instance.items():
                for n in with_properties:
                    if key in n["properties"]:
                        yield from self._undefined_keys(
                            value, n["properties"][key], f"{path}.{key}"
                        )
        elif isinstance(instance, list):
            for n in nodes:
                if isinstance(n.get("items"), dict):
                    for i, item in enumerate(instance):
                        yield from self._undefined_keys(item, n["items"], f"{path}[{i}]")
