"""One language server process, driven with pygls's language client.

`ServerConnection.start()` spawns the server in a process group of its own,
initializes it for one workspace root and keeps the diagnostics it publishes, by
document. `sync(path, text)` opens or changes a document with its full text and
returns the version sent; `problems_after(path, version, deadline)` waits (until
`deadline` at the latest) for the diagnostics of that version. `aclose()` asks
the server to shut down and exit, then ends its process group.

pygls and lsprotocol are imported here only: this module loads when a session
first needs a server, never on the ACP serving path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import typing
from functools import partial
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

import attrs
import cattrs
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter

import acp_agent
from acp_agent.lsp._problems import Problem
from acp_agent.lsp._servers import ServerSpec, ServerUnavailable
from acp_agent.process_groups import Registration, process_groups
from acp_agent.records import Record

__all__ = ("Place", "ServerConnection", "Symbol")

logger = logging.getLogger(__name__)

#: How long `initialize` and `shutdown` may take before the server is given up on.
_REQUEST_TIMEOUT_S: Final = 10.0
#: How long an exiting server gets before its process group is killed.
_EXIT_GRACE_S: Final = 1.0

_SEVERITY: Final = {
    lsp.DiagnosticSeverity.Error: "error",
    lsp.DiagnosticSeverity.Warning: "warning",
    lsp.DiagnosticSeverity.Information: "information",
    lsp.DiagnosticSeverity.Hint: "hint",
}


class ServerConnection:
    """A started language server for one root; see the module docstring."""

    def __init__(self, spec: ServerSpec, root: Path) -> None:
        self.spec = spec
        self.root = root
        self._client = LanguageClient(
            "acp-agent", acp_agent.__version__, converter_factory=_converter
        )
        self._versions: dict[str, int] = {}
        #: By path: the version the server said (None: it says none), the problems, and
        #: the count of publications when it came (a server without versions is waited
        #: for by that).
        self._published: dict[str, tuple[int | None, list[Problem], int]] = {}
        self._sent_at: dict[str, int] = {}
        #: The text last sent for each open document.
        self._texts: dict[str, str] = {}
        self._publications = 0
        self._changed = asyncio.Event()
        self._stderr: asyncio.Task[None] | None = None
        self._registration: Registration | None = None
        self.last_error: str | None = None

        def published(params: lsp.PublishDiagnosticsParams) -> None:
            path = _path_of(params.uri)
            # Hints are not problems: they grey out unused or unreachable code.
            problems = [
                self._problem(path, d)
                for d in params.diagnostics
                if d.severity != lsp.DiagnosticSeverity.Hint
            ]
            self._publications += 1
            self._published[path] = (params.version, problems, self._publications)
            self._changed.set()
            self._changed = asyncio.Event()

        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [spec.settings.get(item.section or "") for item in params.items]

        def accepted(params: Any) -> None:
            return None  # registrations and progress tokens: nothing to keep

        def said(params: Any) -> None:
            logger.debug("%s says: %s", spec.name, getattr(params, "message", params))

        client = self._client
        client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(published)
        client.feature(lsp.WORKSPACE_CONFIGURATION)(configuration)
        client.feature(lsp.CLIENT_REGISTER_CAPABILITY)(accepted)
        client.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)(accepted)
        for method in (
            lsp.WINDOW_LOG_MESSAGE,
            lsp.WINDOW_SHOW_MESSAGE,
            lsp.PROGRESS,
            "telemetry/event",
        ):
            client.feature(method)(said)

    @property
    def alive(self) -> bool:
        process = self._client._server
        return process is not None and process.returncode is None and not self._client.stopped

    async def start(self) -> None:
        """Spawn and initialize the server; `ServerUnavailable` if it cannot be."""
        try:
            # A group of its own, registered before the server runs (the agent's reaper
            # ends it if the agent dies); the door opens with the first line on its stdin.
            gate = process_groups().gate(self.spec.command, protocol_stdin=True, cwd=self.root)
            await self._client.start_io(*gate.argv, cwd=str(self.root), start_new_session=True)
        except OSError as exc:
            raise ServerUnavailable(f"{self.spec.name} could not be started: {exc}") from exc
        process = self._client._server
        if process is not None:
            self._registration = gate.admit(process.pid)
            if gate.first_line and process.stdin is not None:
                process.stdin.write(gate.first_line)
        if process is not None and process.stderr is not None:
            self._stderr = asyncio.create_task(self._log_stderr(process.stderr))
        params = lsp.InitializeParams(
            process_id=os.getpid(),
            root_uri=self.root.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)],
            capabilities=lsp.ClientCapabilities(
                workspace=lsp.WorkspaceClientCapabilities(
                    configuration=True, workspace_folders=True
                ),
                text_document=lsp.TextDocumentClientCapabilities(
                    publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(
                        version_support=True
                    ),
                    synchronization=lsp.TextDocumentSyncClientCapabilities(did_save=True),
                    hover=lsp.HoverClientCapabilities(
                        content_format=[lsp.MarkupKind.PlainText, lsp.MarkupKind.Markdown]
                    ),
                    document_symbol=lsp.DocumentSymbolClientCapabilities(
                        hierarchical_document_symbol_support=True
                    ),
                ),
            ),
            initialization_options=self.spec.options or None,
        )
        try:
            async with asyncio.timeout(_REQUEST_TIMEOUT_S):
                await self._client.initialize_async(params)
        except (TimeoutError, Exception) as exc:
            self.last_error = f"initialize failed: {exc!r}"
            await self.aclose()
            raise ServerUnavailable(f"{self.spec.name}: {self.last_error}") from exc
        self._client.initialized(lsp.InitializedParams())
        logger.info("language server %s started for %s", self.spec.name, self.root)

    def sync(self, path: Path, text: str) -> int:
        """Tell the server `path` now holds `text` (opening it first); the version sent."""
        key = str(path)
        uri = path.as_uri()
        version = self._versions.get(key, 0) + 1
        self._versions[key] = version
        self._texts[key] = text
        self._sent_at[key] = self._publications
        if version == 1:
            document = lsp.TextDocumentItem(
                uri=uri, language_id=self.spec.language_id, version=version, text=text
            )
            self._client.text_document_did_open(lsp.DidOpenTextDocumentParams(document))
        else:
            self._client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
        self._client.text_document_did_save(
            lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri=uri), text=text)
        )
        return version

    def forget(self, path: Path) -> None:
        """Close `path` (it is gone); its problems are dropped."""
        key = str(path)
        if self._versions.pop(key, None) is None:
            return
        self._published.pop(key, None)
        self._sent_at.pop(key, None)
        self._texts.pop(key, None)
        self._client.text_document_did_close(
            lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri=path.as_uri()))
        )

    def is_open(self, path: Path) -> bool:
        return str(path) in self._versions

    def text_sent(self, path: Path) -> str | None:
        """The text the server was last told `path` holds (None: not open)."""
        return self._texts.get(str(path))

    def problems(self, path: Path) -> list[Problem]:
        """The last problems published for `path` (none yet: empty)."""
        return list(self._published.get(str(path), (None, []))[1])

    async def problems_after(self, path: Path, version: int, deadline: float) -> list[Problem]:
        """The problems of `path` at `version`, waiting for them until `deadline` (loop
        time); `TimeoutError` if they did not come."""
        key = str(path)
        loop = asyncio.get_running_loop()
        while True:
            published = self._published.get(key)
            if published is not None:
                said, problems, at = published
                current = said >= version if said is not None else at > self._sent_at[key]
                if current:
                    return list(problems)
            if not self.alive:
                raise ServerUnavailable(f"{self.spec.name} exited")
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, 0.25)):
                    await changed.wait()

    async def aclose(self) -> None:
        """Shut the server down (shutdown, exit), then end its process group."""
        client = self._client
        process = client._server
        if process is not None and process.returncode is None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(_EXIT_GRACE_S):
                    await client.shutdown_async(None)
                client.exit(None)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_EXIT_GRACE_S):
                    await process.wait()
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_EXIT_GRACE_S):
                        await process.wait()
        if self._registration is not None:
            self._registration.release()
        with contextlib.suppress(Exception):
            await client.stop()  # type: ignore[no-untyped-call]  # pygls is untyped here
        if self._stderr is not None:
            self._stderr.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._stderr

    # --- navigation (servers that navigate: `ServerSpec.navigates`) ----------------------

    async def definition(self, path: Path, line: int, character: int) -> list[Place]:
        """Where the symbol at 0-based (`line`, `character`) of `path` is defined."""
        params = lsp.DefinitionParams(_document(path), lsp.Position(line, character))
        return _places(await self._ask(self._client.text_document_definition_async(params)))

    async def references(self, path: Path, line: int, character: int) -> list[Place]:
        """Every use of the symbol there, its declaration included."""
        params = lsp.ReferenceParams(
            context=lsp.ReferenceContext(include_declaration=True),
            text_document=_document(path),
            position=lsp.Position(line, character),
        )
        return _places(await self._ask(self._client.text_document_references_async(params)))

    async def hover(self, path: Path, line: int, character: int) -> str | None:
        """What the server says of the symbol there (its type, its docstring)."""
        params = lsp.HoverParams(_document(path), lsp.Position(line, character))
        found = await self._ask(self._client.text_document_hover_async(params))
        if found is None:
            return None
        contents = found.contents
        if isinstance(contents, lsp.MarkupContent):
            return contents.value
        if isinstance(contents, str):
            return contents
        items = contents if isinstance(contents, list | tuple) else [contents]
        return "\n\n".join(item if isinstance(item, str) else item.value for item in items)

    async def document_symbols(self, path: Path) -> list[Symbol]:
        """The symbols `path` defines, nested ones after their container."""
        params = lsp.DocumentSymbolParams(_document(path))
        found = await self._ask(self._client.text_document_document_symbol_async(params))
        symbols: list[Symbol] = []

        def walk(items: Any, container: str | None) -> None:
            for item in items or []:
                if isinstance(item, lsp.DocumentSymbol):
                    start = item.selection_range.start
                    symbols.append(
                        Symbol(
                            item.name,
                            _kind(item.kind),
                            str(path),
                            start.line + 1,
                            start.character + 1,
                            container,
                        )
                    )
                    walk(item.children, item.name)
                elif isinstance(item, lsp.SymbolInformation):
                    symbols.append(_symbol_information(item))

        walk(found, None)
        return symbols

    async def workspace_symbols(self, query: str) -> list[Symbol]:
        """Symbols of the whole workspace whose names match `query`."""
        params = lsp.WorkspaceSymbolParams(query=query)
        found = await self._ask(self._client.workspace_symbol_async(params))
        symbols = []
        for item in found or []:
            if isinstance(item, lsp.SymbolInformation):
                symbols.append(_symbol_information(item))
            elif isinstance(item.location, lsp.Location):
                symbols.append(_symbol(item.name, item.kind, item.location, item.container_name))
        return symbols

    async def _ask(self, request: Any) -> Any:
        if not self.alive:
            raise ServerUnavailable(f"{self.spec.name} is not running")
        async with asyncio.timeout(_REQUEST_TIMEOUT_S):
            return await request

    def _problem(self, path: str, diagnostic: lsp.Diagnostic) -> Problem:
        start, end = diagnostic.range.start, diagnostic.range.end
        code = diagnostic.code
        return Problem(
            server=self.spec.name,
            path=path,
            line=start.line + 1,
            column=start.character + 1,
            severity=_SEVERITY.get(diagnostic.severity or lsp.DiagnosticSeverity.Error, "error"),
            message=diagnostic.message,
            code=None if code is None else str(code),
            end_line=end.line + 1,
            end_column=end.character + 1,
        )

    async def _log_stderr(self, stream: Any) -> None:
        # Drained, or a chatty server would block on a full pipe; logged, never on stdout.
        while line := await stream.readline():
            logger.debug("%s: %s", self.spec.name, line.decode("utf-8", "replace").rstrip())


@attrs.frozen
class Place(Record):
    """A place in a file, 1-based."""

    path: str
    line: int
    column: int


@attrs.frozen
class Symbol(Record):
    """A named thing a server knows, where it is defined, 1-based."""

    name: str
    kind: str
    path: str
    line: int
    column: int
    container: str | None = None


def _document(path: Path) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=path.as_uri())


def _places(found: Any) -> list[Place]:
    # lsprotocol structures arrays as tuples.
    items = found if isinstance(found, list | tuple) else [] if found is None else [found]
    places = []
    for item in items:
        if isinstance(item, lsp.Location):
            uri, start = item.uri, item.range.start
        elif isinstance(item, lsp.LocationLink):
            uri, start = item.target_uri, item.target_selection_range.start
        else:
            continue
        places.append(Place(_path_of(uri), start.line + 1, start.character + 1))
    return places


def _kind(kind: lsp.SymbolKind) -> str:
    return kind.name.lower() if isinstance(kind, lsp.SymbolKind) else str(kind)


def _symbol_information(item: lsp.SymbolInformation) -> Symbol:
    return _symbol(item.name, item.kind, item.location, item.container_name)


def _symbol(
    name: str, kind: lsp.SymbolKind, location: lsp.Location, container: str | None
) -> Symbol:
    start = location.range.start
    return Symbol(
        name, _kind(kind), _path_of(location.uri), start.line + 1, start.character + 1, container
    )


def _converter() -> cattrs.Converter:
    """pygls's converter, able to read every server's `initialize` result.

    lsprotocol 2025.0.0 has no hook for the notebook filter union that servers with
    notebook support (ruff) put in their capabilities; this adds one: a string, or
    the first filter class whose required fields are all present.
    """
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]
    for cls in (lsp.NotebookDocumentFilterWithNotebook, lsp.NotebookDocumentFilterWithCells):
        union = typing.get_type_hints(cls)["notebook"]
        converter.register_structure_hook(union, partial(_structure_filter, converter, union))
    return converter


def _structure_filter(converter: cattrs.Converter, union: Any, value: Any, _: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    for member in typing.get_args(union):
        if attrs.has(member):
            required = [
                f.alias or f.name for f in attrs.fields(member) if f.default is attrs.NOTHING
            ]
            if all(_camel(name) in value for name in required):
                return converter.structure(value, member)
    raise ValueError(f"not a notebook document filter: {value!r}")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _path_of(uri: str) -> str:
    return unquote(urlparse(uri).path)
