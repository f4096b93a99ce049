"""Who follows each session the server hosts: the connections attached to it, and whose turn runs.

A session on the server belongs to no connection: it opens with the
server's side (`SharedSessions.front_end`), not one editor's. Its tools
work on the server's own disk, unless an attached controller serves its
files (`_files`), and run commands in its own processes (a session
outlives every editor, so none of them can host its terminals), and its
permission questions go to the people following it
(`_questions.QuestionBroker`): every attached controller, and the
connection whose own prompt holds the session's turn (a client that never
attached is asked as over stdio). `SessionAudience` keeps both, and wakes
whoever waits for them to change.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from acp_agent.values import Value
from protocol.errors import ConnectionClosed

if TYPE_CHECKING:
    from acp_agent.adapters.server._files import SessionFiles
    from acp_agent.adapters.server._questions import QuestionBroker
    from acp_agent.agent import FrontEnd, PermissionQuestion
    from acp_agent.toolkit import Notice, NoticeSink
    from protocol.connection import AgentConnection

__all__ = ("Asker", "Role", "SessionAudience", "SharedSessions", "Viewer")

logger = logging.getLogger(__name__)

#: Shows a connection the settings another client adopted (the values it adopted).
SettingsSink = Callable[[Mapping[str, Any]], None]


class Role(enum.Enum):
    """What an attached client may do: a controller prompts, cancels, sets options and
    answers questions; an observer only watches."""

    CONTROLLER = "controller"
    OBSERVER = "observer"


#: Asks a client a permission question of a session in the client's own protocol: the
#: option it chose, or None (it declined). Errors are the request's (`_questions`).
Asker = Callable[[str, "PermissionQuestion"], Awaitable["str | None"]]


@attrs.frozen(eq=False)
class Viewer(Value):
    """One client connection, as the sessions it follows know it. `asker`: how it is
    asked a permission question when it does not speak ACP v1 (an ACP v2 client)."""

    client_id: str
    connection: AgentConnection
    asker: Asker | None = None

    def tell(self, method: str, params: dict[str, Any]) -> None:
        """Send notification `method` (an extension); nothing if the client is gone."""
        try:
            self.connection.notify(method, params)
        except (ConnectionClosed, OSError):
            logger.debug("%s is gone; %s not sent", self.client_id, method)


class SessionAudience:
    """The clients attached to one session (by role) and those whose turn holds it."""

    def __init__(self, session_id: str) -> None:
        from acp_agent.adapters.server._files import SessionFiles
        from acp_agent.adapters.server._questions import QuestionBroker

        self.session_id = session_id
        self.attached: dict[str, tuple[Viewer, Role]] = {}
        #: Clients whose own prompt holds the session's turn (how many of their slots).
        self._holding: dict[str, tuple[Viewer, int]] = {}
        #: Clients that follow the session at all (attached or not), by id.
        self.following: dict[str, Viewer] = {}
        #: Where each following client takes the session's notices.
        self._notices: dict[str, NoticeSink] = {}
        #: Where each following client shows settings another client adopted.
        self._settings: dict[str, SettingsSink] = {}
        #: Attached clients shown the session's branches as child sessions (`_children`).
        self._children_shown: set[str] = set()
        self._changed = anyio.Event()
        self.questions: QuestionBroker = QuestionBroker(self)
        #: The session's files: the server's disk, or an attached controller's.
        self.files: SessionFiles = SessionFiles(session_id)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def changed(self) -> None:
        """Wait until a client attaches, detaches, leaves, or starts or ends a turn."""
        await self._changed.wait()

    def role_of(self, client_id: str) -> Role | None:
        entry = self.attached.get(client_id)
        return None if entry is None else entry[1]

    def askers(self) -> dict[str, Viewer]:
        """Who is asked the session's permission questions: the attached controllers and
        the clients whose turn holds the session."""
        asked = {cid: viewer for cid, (viewer, _) in self._holding.items()}
        for cid, (viewer, role) in self.attached.items():
            if role is Role.CONTROLLER:
                asked[cid] = viewer
        return asked

    def attached_viewers(self) -> dict[str, Viewer]:
        """The attached clients, whatever their role."""
        return {cid: viewer for cid, (viewer, _) in self.attached.items()}

    def sees_children(self, client_id: str) -> bool:
        """Whether the client is shown the session's branches as child sessions (so a
        branch's question is asked of it on the branch's own session)."""
        return client_id in self._children_shown and client_id in self.attached

    def show_children(self, client_id: str, shown: bool) -> None:
        """The client is shown the branches as child sessions from now on (or no more)."""
        if shown:
            self._children_shown.add(client_id)
        else:
            self._children_shown.discard(client_id)

    def follow(
        self,
        viewer: Viewer,
        *,
        notices: NoticeSink | None = None,
        settings: SettingsSink | None = None,
    ) -> None:
        """The client follows the session; its notices (the session's, for the person)
        go to `notices`, settings other clients adopt to `settings`."""
        self.following[viewer.client_id] = viewer
        if notices is not None:
            self._notices[viewer.client_id] = notices
        if settings is not None:
            self._settings[viewer.client_id] = settings

    def post_settings(self, client_id: str, values: Mapping[str, Any]) -> None:
        """`client_id` adopted `values` (mode, model, ...): every other following client's
        sink hears of it (an attached view shows it; one that is not learns it at its
        next answer, as over stdio)."""
        for cid, show in list(self._settings.items()):
            if cid != client_id:
                show(values)

    def post_notice(self, notice: Notice) -> None:
        """A notice of the session's: to every client following it (each shows it during
        its own prompts, as the stdio agent does), logged when nobody follows."""
        sinks = list(self._notices.values())
        if not sinks:
            logger.info("notice for session %s, followed by nobody: %s", self.session_id, notice)
        for post in sinks:
            post(notice)

    def attach(self, viewer: Viewer, role: Role) -> None:
        self.following[viewer.client_id] = viewer
        self.attached[viewer.client_id] = (viewer, role)
        self._wake()

    def detach(self, client_id: str) -> Role | None:
        """Take the client's attachment off (it serves the files no more); its role, if it
        was attached."""
        entry = self.attached.pop(client_id, None)
        self.files.release(client_id)
        self._wake()
        return None if entry is None else entry[1]

    def leave(self, client_id: str) -> None:
        """The client follows the session no more (it closed it, or left)."""
        self.following.pop(client_id, None)
        self._notices.pop(client_id, None)
        self._settings.pop(client_id, None)
        self.attached.pop(client_id, None)
        self._children_shown.discard(client_id)
        self.files.release(client_id)
        self._wake()

    def hold(self, viewer: Viewer) -> None:
        """One of the client's prompts holds the session's turn now."""
        _, count = self._holding.get(viewer.client_id, (viewer, 0))
        self._holding[viewer.client_id] = (viewer, count + 1)
        self._wake()

    def release(self, client_id: str) -> None:
        viewer, count = self._holding.get(client_id, (None, 0))
        if viewer is None:
            return
        if count > 1:
            self._holding[client_id] = (viewer, count - 1)
        else:
            del self._holding[client_id]
        self._wake()

    def others(self, client_id: str) -> list[Viewer]:
        """The attached clients other than `client_id`."""
        return [viewer for cid, (viewer, _) in self.attached.items() if cid != client_id]


class SharedSessions:
    """Every session the server hosts, with its audience; the side each session opens with."""

    def __init__(self) -> None:
        self._audiences: dict[str, SessionAudience] = {}

    def audience(self, session_id: str) -> SessionAudience:
        audience = self._audiences.get(session_id)
        if audience is None:
            audience = self._audiences[session_id] = SessionAudience(session_id)
        return audience

    def known(self, session_id: str) -> SessionAudience | None:
        return self._audiences.get(session_id)

    def front_end(self, session_id: str) -> FrontEnd:
        """The server's side of a session: its own processes (no editor's terminals), its
        own disk or the files of the controller serving them (`_files`), the question
        broker of its audience (its branches' questions too: `_branch_side`), its
        notices to every client following it."""
        from acp_agent.adapters.server._branch_side import ServerBranchSide
        from acp_agent.agent import FrontEnd

        audience = self.audience(session_id)
        return FrontEnd(
            client=audience.files,
            prompter=audience.questions,
            branches=lambda manager: ServerBranchSide(manager, audience.questions, audience.files),
            notices=audience.post_notice,
        )

    def front_end_maker(self) -> Callable[[Any], FrontEnd]:
        return lambda session_id: self.front_end(str(session_id))
