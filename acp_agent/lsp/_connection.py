"""One language server process, driven with pygls's language client.

`ServerConnection.start()` spawns the server in a process group of its own,
initializes it for one workspace root and keeps the diagnostics it gives, by
document. `sync(path, text)` opens or changes a document with its full text and
returns the version sent; `problems_after(path, version, deadline)` waits (until
`deadline` at the latest) for the diagnostics of that version. `aclose()` asks
the server to shut down and exit, then ends its process group. Its stderr is
drained in the owner's task group (`start_soon`), until `aclose()` ends it.

Diagnostics come one of two ways. A server that offers `textDocument/diagnostic`
(pull diagnostics: in its capabilities, like ruff, or registered later through
`client/registerCapability`, the only way basedpyright offers it) is asked for a
document's problems, and its answer is about the text last sent. Any other server
publishes them (`textDocument/publishDiagnostics`), and the publication for the
version sent is waited for. A server still starting is waited for the same way:
until it registers, its publications count; once it registers, it is asked.

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
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlparse

import anyio
import attrs
import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter

import acp_agent
from acp_agent.lsp._problems import Problem
from acp_agent.lsp._servers import ServerSpec, ServerUnavailable
from acp_agent.process_groups import Registration, process_groups
from acp_agent.values import Value

if TYPE_CHECKING:
    from acp_agent.lsp._service import StartSoon

__all__ = ("Place", "ServerConnection", "Symbol")

logger = logging.getLogger(__name__)

#: How long `initialize` and `shutdown` may take before the server is given up on.
_REQUEST_TIMEOUT_S: Final = 10.0
#: How long an exiting server gets before its process group is killed.
_EXIT_GRACE_S: Final = 1.0
#: After a pull the server refused (busy, or the document changed), the pause before
#: asking again.
_PULL_RETRY_S: Final = 0.1

_SEVERITY: Final = {
    lsp.DiagnosticSeverity.Error: "error",
    lsp.DiagnosticSeverity.Warning: "warning",
    lsp.DiagnosticSeverity.Information: "information",
    lsp.DiagnosticSeverity.Hint: "hint",
}


class ServerConnection:
    """A started language server for one root; see the module docstring."""

    def __init__(self, spec: ServerSpec, root: Path, *, start_soon: StartSoon) -> None:
        self.spec = spec
        self.root = root
        self._start_soon = start_soon
        self._client = LanguageClient(
            "acp-agent", acp_agent.__version__, converter_factory=_converter
        )
        self._versions: dict[str, int] = {}
        #: By path: the version the problems are of (None: the server said none), the
        #: problems, and the count of publications when they came (a server that says
        #: no version is waited for by that).
        self._published: dict[str, tuple[int | None, list[Problem], int]] = {}
        #: Its pull diagnostics (`textDocument/diagnostic`): each registration's id ("" for
        #: the one in its capabilities) and identifier. Empty: it publishes instead.
        self._pulls: dict[str, str | None] = {}
        self._sent_at: dict[str, int] = {}
        #: The text last sent for each open document.
        self._texts: dict[str, str] = {}
        self._publications = 0
        self._changed = asyncio.Event()
        #: The scope stderr is drained in, and set once the drain has ended.
        self._stderr: anyio.CancelScope | None = None
        self._stderr_drained = asyncio.Event()
        self._registration: Registration | None = None
        self.last_error: str | None = None

        def published(params: lsp.PublishDiagnosticsParams) -> None:
            path = _path_of(params.uri)
            self._publications += 1
            problems = self._problems(path, params.diagnostics)
            self._published[path] = (params.version, problems, self._publications)
            self._wake()

        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [_section(spec.settings, item.section or "") for item in params.items]

        def registered(params: lsp.RegistrationParams) -> None:
            for registration in params.registrations:
                if registration.method == lsp.TEXT_DOCUMENT_DIAGNOSTIC:
                    self._pulls[registration.id] = _identifier(registration.register_options)
            self._wake()  # a wait for a publication asks instead from now on

        def unregistered(params: lsp.UnregistrationParams) -> None:
            for gone in params.unregisterations:
                self._pulls.pop(gone.id, None)

        def accepted(params: Any) -> None:
            return None  # progress tokens, refresh requests: nothing to keep

        def said(params: Any) -> None:
            logger.debug("%s says: %s", spec.name, getattr(params, "message", params))

        client = self._client
        client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(published)
        client.feature(lsp.WORKSPACE_CONFIGURATION)(configuration)
        client.feature(lsp.CLIENT_REGISTER_CAPABILITY)(registered)
        client.feature(lsp.CLIENT_UNREGISTER_CAPABILITY)(unregistered)
        client.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)(accepted)
        # Problems are asked for when an edit needs them, so a refresh changes nothing.
        client.feature(lsp.WORKSPACE_DIAGNOSTIC_REFRESH)(accepted)
        for method in (
            lsp.WINDOW_LOG_MESSAGE,
            lsp.WINDOW_SHOW_MESSAGE,
            lsp.PROGRESS,
            "telemetry/event",
            # basedpyright's own progress reports, sent whatever the client said.
            "pyright/beginProgress",
            "pyright/reportProgress",
            "pyright/endProgress",
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
            self._stderr = anyio.CancelScope()
            self._start_soon(
                partial(self._log_stderr, process.stderr, self._stderr),
                name=f"{self.spec.name} stderr",
            )
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
                    # Dynamic too: basedpyright offers pull diagnostics only by registering.
                    diagnostic=lsp.DiagnosticClientCapabilities(dynamic_registration=True),
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
                result = await self._client.initialize_async(params)
        except (TimeoutError, Exception) as exc:
            self.last_error = f"initialize failed: {exc!r}"
            await self.aclose()
            raise ServerUnavailable(f"{self.spec.name}: {self.last_error}") from exc
        provider = result.capabilities.diagnostic_provider
        if provider is not None:
            self._pulls[""] = provider.identifier
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

    def version(self, path: Path) -> int | None:
        """The version of `path` last sent (None: not open)."""
        return self._versions.get(str(path))

    def problems(self, path: Path) -> list[Problem]:
        """The last problems known for `path` (none yet: empty)."""
        return list(self._published.get(str(path), (None, []))[1])

    async def problems_after(self, path: Path, version: int, deadline: float) -> list[Problem]:
        """The problems of `path` at `version` (or a later one), asked for or waited for
        until `deadline` (loop time); `TimeoutError` if they did not come."""
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
            if self._pulls:
                await self._pull(path, remaining)
                continue
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, 0.25)):
                    await changed.wait()

    async def _pull(self, path: Path, remaining: float) -> None:
        """Ask for `path`'s problems (`TimeoutError` after `remaining` seconds) and keep
        them as those of the version last sent: the server reads messages in order."""
        key = str(path)
        version = self._versions.get(key)
        problems: list[Problem] = []
        try:
            async with asyncio.timeout(remaining):
                for identifier in sorted(set(self._pulls.values()), key=str):
                    params = lsp.DocumentDiagnosticParams(_document(path), identifier=identifier)
                    report = await self._client.text_document_diagnostic_async(params)
                    if isinstance(report, lsp.RelatedFullDocumentDiagnosticReport):
                        problems += self._problems(key, report.items)
                    else:  # "unchanged" (it answers a result id, and none is sent)
                        problems += self.problems(path)
        except JsonRpcMethodNotFound:
            self._pulls.clear()  # it offered what it does not answer: its publications count
            return
        except JsonRpcException as exc:
            # Refused (it is busy, or the document changed meanwhile): asked again.
            logger.debug("%s refused a pull of %s: %s", self.spec.name, path.name, exc)
            await asyncio.sleep(min(_PULL_RETRY_S, remaining))
            return
        known = self._published.get(key)
        if version is not None and (known is None or known[0] is None or known[0] <= version):
            self._published[key] = (version, problems, self._publications)
            self._wake()

    def _wake(self) -> None:
        """Wake every wait for problems: something they wait for may have come."""
        self._changed.set()
        self._changed = asyncio.Event()

    def _problems(self, path: str, diagnostics: typing.Sequence[lsp.Diagnostic]) -> list[Problem]:
        # Hints are not problems: they grey out unused or unreachable code.
        return [
            self._problem(path, d) for d in diagnostics if d.severity != lsp.DiagnosticSeverity.Hint
        ]

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
            # Bounded: a drain its owner never ran (closed first) has nothing to end.
            with anyio.move_on_after(_EXIT_GRACE_S):
                await self._stderr_drained.wait()

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

    async def _log_stderr(self, stream: Any, scope: anyio.CancelScope) -> None:
        # Drained, or a chatty server would block on a full pipe; logged, never on stdout.
        try:
            with scope:
                while line := await stream.readline():
                    text = line.decode("utf-8", "replace").rstrip()
                    logger.debug("%s: %s", self.spec.name, text)
        except Exception as exc:  # a pipe that broke ends the drain, never the session
            logger.debug("%s: stderr unreadable: %s", self.spec.name, exc)
        finally:
            self._stderr_drained.set()


@attrs.frozen
class Place(Value):
    """A place in a file, 1-based."""

    path: str
    line: int
    column: int


@attrs.frozen
class Symbol(Value):
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


def _section(settings: typing.Mapping[str, Any], section: str) -> Any:
    """What `workspace/configuration` answers for `section`: that key of `settings`, or the
    value at its dotted path (`basedpyright.analysis` in `{"basedpyright": {"analysis": …}}`)."""
    if section in settings:
        return settings[section]
    value: Any = settings
    for part in section.split("."):
        if not isinstance(value, typing.Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _identifier(options: Any) -> str | None:
    """The `identifier` of pull-diagnostics registration options, however they are read."""
    if isinstance(options, typing.Mapping):
        identifier = options.get("identifier")
    else:
        identifier = getattr(options, "identifier", None)
    return identifier if isinstance(identifier, str) else None


def _path_of(uri: str) -> str:
    return unquote(urlparse(uri).path)
