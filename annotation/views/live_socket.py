"""The live session socket, ``ws/sessions/<demo>/``: authorise, join the group, catch up, then relay; and the origin
check that guards it (``SessionOriginValidator``, wrapped around the WebSocket routes in ``config/asgi.py``).

Protocol (README, "Live session"): the client's first message is ``{"type": "join", "after_seq": N}`` (plus
``"token"`` when it has no session cookie, i.e. the recorder's side panel). The server answers ``welcome``, every
turn with seq > N in order, ``synced``, and then live ``turn``, ``presence`` and ``ended`` events. Refusals close
the socket with 4401 (not authenticated) or 4403 (no such session, or not yours) and no detail.

A joined socket keeps its place only while its person does: on ``access.changed`` (the person's group, sent when a
membership, role, account, password, token or sign-in changes) and before every message it acts on, it checks again
(``live.check_still_joined``) and closes with 4401 (the credential ended) or 4403 (no access any more), the close
reason saying why.
"""

import asyncio
import time
from urllib.parse import urlsplit

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from ..actions import ActionError, MalformedJSON, live
from ..actions.events import session_group, user_group
from ..lib import jsonsafe

UNAUTHENTICATED, FORBIDDEN = 4401, 4403


class SessionConsumer(AsyncJsonWebsocketConsumer):
    """One participant's connection to a demonstration's live session."""

    demo = None
    user = None
    join_timer = None
    refused = False
    in_groups = False
    checked_at = 0.0  # time.monotonic() of the last access check that passed

    async def dispatch(self, message):
        """As Channels' own, minus closing stale database connections before every message: that costs a hop to
        the database thread per event, behind other sessions' writes. Here the database is used only inside
        ``database_sync_to_async``, which closes stale connections itself."""
        handler = getattr(self, get_handler_name(message), None)
        if self.refused and message["type"].startswith(("session.", "access.")):
            return  # closed for lost access: nothing more reaches the socket
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']}")
        await handler(message)

    async def connect(self):
        self.demo_name = self.scope["url_route"]["kwargs"]["demo"]
        self.last_seq = -1
        self.connections = {}  # (role, user) → the channels of their connections this socket knows of
        # Accept first: an application close code only reaches the client on an accepted socket.
        await self.accept()
        self.join_timer = asyncio.create_task(self.close_unless_joined(settings.LIVE_JOIN_TIMEOUT_SECONDS))

    async def close_unless_joined(self, seconds: float):
        await asyncio.sleep(seconds)
        if self.demo is None:
            self.refused = True
            await self.close(code=UNAUTHENTICATED)

    async def refuse(self, code: int):
        """Close with an application code and no detail; whatever the client sends after it is ignored."""
        self.refused = True
        self.join_timer.cancel()
        await self.close(code=code)

    async def disconnect(self, code):
        if self.join_timer is not None:
            self.join_timer.cancel()
        await self.leave()

    async def leave(self):
        """Out of the person's group, and out of the session's (telling the others) when joined; once."""
        if self.user is not None:
            await self.channel_layer.group_discard(user_group(self.user.pk), self.channel_name)
        if self.in_groups:
            self.in_groups = False
            await self.channel_layer.group_discard(session_group(self.demo.name), self.channel_name)
            await self.announce(present=False)

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        # Binary frames are not part of the protocol: answered like a message of unknown type.
        try:
            content = jsonsafe.loads(text_data) if text_data is not None else None
        except jsonsafe.JSONProblem as problem:
            # Deep nesting, lone surrogates, 1e400: an error message for a joined client (the socket stays
            # usable); before the join it is no join, so the socket is refused as for any other message.
            if self.demo is None or self.refused:
                return await self.receive_json(None)
            return await self.send_json(error_message(MalformedJSON.of(problem), {}))
        await self.receive_json(content)

    async def receive_json(self, content, **kwargs):
        kind = content.get("type") if isinstance(content, dict) else None
        if self.refused:
            return None
        if self.demo is None:
            return await (self.join(content) if kind == "join" else self.refuse(UNAUTHENTICATED))
        handler = {"chat": self.chat, "end": self.end, "ping": self.ping, "revoke_invite": self.revoke_invite}.get(kind)
        if handler is None:
            return await self.send_json({"type": "error", "code": "unknown_type", "detail": f"unknown type {kind!r}"})
        try:
            await handler(content)
        except live.AccessEnded as ended:
            await self.lose(ended)
        except ActionError as error:
            await self.send_json(error_message(error, content))

    # --- Joining ------------------------------------------------------------------------------------------

    async def join(self, content: dict):
        try:
            after_seq = live.check_after_seq(content.get("after_seq"))
            clock = live.check_clock_reading(content.get("clock"))
        except ActionError as error:
            return await self.send_json(error_message(error, content))  # the client may send a better join
        token = content.get("token")
        user = await self.authenticate(token)
        if user is None:
            return await self.refuse(UNAUTHENTICATED)
        # The person's group before the access check: a change committed after the check is heard.
        self.user = user
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        try:
            demo, role = await database_sync_to_async(live.check_session_access)(user, self.demo_name)
        except ActionError:
            return await self.refuse(FORBIDDEN)
        self.demo, self.role = demo, role
        self.checked_at = time.monotonic()
        self.credential = {"token": token} if token is not None else {"session_key": self.session_key()}
        self.screen = live.sees_screen(demo, role)
        self.join_timer.cancel()
        await database_sync_to_async(live.do_note_clock)(demo, role, clock)
        # Group first, database second: a turn committed in between arrives twice and is dropped by seq.
        await self.channel_layer.group_add(session_group(demo.name), self.channel_name)
        self.in_groups = True
        await self.send_json(await database_sync_to_async(self.welcome)())
        await self.catch_up(after_seq)
        await self.send_json({"type": "synced", "last_seq": self.last_seq})
        await self.announce(present=True)

    async def authenticate(self, token):
        """The token's user when a token is sent (the side panel), else the session's user (the web pages)."""
        if token is not None:
            return await database_sync_to_async(live.token_user)(token)
        user = self.scope.get("user")
        return user if user is not None and user.is_authenticated else None

    def session_key(self) -> str | None:
        session = self.scope.get("session")
        return session.session_key if session is not None else None

    # --- Access, again ------------------------------------------------------------------------------------

    def still_joined(self) -> None:
        """Raise ``live.AccessEnded`` when this socket's person lost their place (in the database thread)."""
        self.user, self.demo = live.check_still_joined(self.user.pk, self.demo_name, self.role, **self.credential)

    def as_joined(self, action):
        """``action`` run after ``still_joined``, in one trip to the database thread: no write without access."""

        def run(*args):
            self.still_joined()
            self.checked_at = time.monotonic()
            return action(*args)

        return database_sync_to_async(run)

    async def access_changed(self, event: dict):
        """The person's access changed somewhere: check again, keep the socket when it still may be here."""
        if self.demo is None:
            return  # not joined (yet): the join checks
        try:
            await database_sync_to_async(self.still_joined)()
        except live.AccessEnded as ended:
            await self.lose(ended)

    async def still_here(self, fresh: bool = False) -> bool:
        """Before relaying to this socket: whether its person still has their place, checked again when the last
        check is older than ``LIVE_ACCESS_RECHECK_SECONDS`` (or ``fresh``). A change that sent no event (a session
        that expired, a bulk update) or an event lost on the way ends the relay within that time; a client that
        never writes is no exception. Closes the socket (``lose``) and returns False when the place is gone."""
        if not fresh and time.monotonic() - self.checked_at < settings.LIVE_ACCESS_RECHECK_SECONDS:
            return True
        try:
            await database_sync_to_async(self.still_joined)()
        except live.AccessEnded as ended:
            await self.lose(ended)
            return False
        self.checked_at = time.monotonic()
        return True

    async def lose(self, ended: live.AccessEnded):
        """Close for lost access, with the reason; nothing reaches the socket after it (``dispatch``)."""
        self.refused = True
        await self.leave()
        await self.close(code=UNAUTHENTICATED if ended.signed_out else FORBIDDEN, reason=ended.detail)

    def welcome(self) -> dict:
        demo = self.demo
        message = {
            "type": "welcome",
            "demo": demo.name,
            "role": self.role,
            "user": self.user.get_username(),
            "status": demo.status,
            "mode": demo.mode,
            "task": demo.task_description,
            "instructor_sees_screen": demo.instructor_sees_screen,
            "sees_screen": self.screen,
        }
        if self.role != live.INSTRUCTOR:
            message.update(live.invitation_fields(live.do_issue_invitation(self.user, demo)))
        return message

    async def catch_up(self, after_seq: int):
        """Send every stored turn after ``after_seq`` that this socket has not had yet, in seq order."""
        self.last_seq = max(self.last_seq, after_seq)
        for event in await database_sync_to_async(live.session_turns)(self.demo, self.last_seq):
            await self.send_turn(event)

    async def send_turn(self, event: dict):
        await self.send_json({"type": "turn", "seq": event["seq"], "turn": live.visible_turn(event, self.screen)})
        self.last_seq = event["seq"]

    async def announce(self, present: bool):
        await database_sync_to_async(live.do_announce_presence)(
            self.demo.name, self.role, self.user.get_username(), present, self.channel_name
        )

    # --- Client messages ------------------------------------------------------------------------------

    async def chat(self, content: dict):
        client_id, utterance = content.get("client_id"), content.get("utterance")
        ack = await self.as_joined(lambda: live.do_send_chat(self.demo, self.role, client_id, utterance))()
        await self.send_json({"type": "ack", **ack})

    async def end(self, content: dict):
        await self.as_joined(lambda: live.do_end_session(self.user, self.demo))()

    async def revoke_invite(self, content: dict):
        """Revoke the invitation link; the session's navigator and observers get the new one (``invite``)."""
        await self.as_joined(lambda: live.do_revoke_invitation(self.user, self.demo))()

    async def ping(self, content: dict):
        """Keep-alive; the navigator's side panel adds its recording-clock reading (``clock``)."""
        clock = live.check_clock_reading(content.get("clock"))
        await self.as_joined(lambda: live.do_note_clock(self.demo, self.role, clock))()
        await self.send_json({"type": "pong"})

    # --- Group events ---------------------------------------------------------------------------------

    async def session_turns(self, event: dict):
        """Relay new turns exactly once and in order; a gap (another batch's broadcast not here yet, or lost)
        is filled from the database."""
        if not await self.still_here():
            return
        for turn in event["turns"]:
            if turn["seq"] == self.last_seq + 1:
                await self.send_turn(turn)
            elif turn["seq"] > self.last_seq + 1:
                await self.catch_up(self.last_seq)

    async def session_invite(self, event: dict):
        """The invitation changed (revoked and replaced, or used): never told to the instructor, and told only after
        the person's access is checked again (a new link is the point of revoking a leaked one)."""
        if self.role != live.INSTRUCTOR and await self.still_here(fresh=True):
            await self.send_json({"type": "invite", **{k: v for k, v in event.items() if k != "type"}})

    async def session_ended(self, event: dict):
        await self.send_json({"type": "ended", "status": event["status"]})

    async def session_presence(self, event: dict):
        """Tell the client when a person arrives (first connection) or is gone (last connection closed): with two
        tabs open, closing one changes nothing."""
        if event["channel"] == self.channel_name or self.is_me(event):
            return  # one's own arrival, or one's own other tab, is no news
        if not await self.still_here():
            return
        if self.presence_changed(event):
            await self.send_json(
                {"type": "presence", "role": event["role"], "user": event["user"], "present": event["present"]}
            )
        if event["present"] and not event.get("answer"):
            # Tell the newcomer that this participant is already here (directly: nothing to store or broadcast).
            reply = {**event, "role": self.role, "user": self.user.get_username(), "answer": True}
            await self.channel_layer.send(event["channel"], {**reply, "channel": self.channel_name})

    def is_me(self, event: dict) -> bool:
        return (event["role"], event["user"]) == (self.role, self.user.get_username())

    def presence_changed(self, event: dict) -> bool:
        """Count the connections of ``event``'s person; True when they arrive or leave as a person. A newcomer
        hears of every connection already there (each answers its join), so the count covers them all."""
        channels = self.connections.setdefault((event["role"], event["user"]), set())
        if event["present"]:
            arrived = not channels
            channels.add(event["channel"])
            return arrived
        channels.discard(event["channel"])
        return not channels


def error_message(error: ActionError, content: dict) -> dict:
    message = {"type": "error", "code": error.code, "detail": error.detail, "errors": error.errors}
    if isinstance(content.get("client_id"), str):
        message["client_id"] = content["client_id"]
    return message


# --- Who may open the socket ------------------------------------------------------------------------------

DEFAULT_PORTS = {"http": 80, "https": 443}


class SessionOriginValidator:
    """Accept a WebSocket only from a page of this very site or from the recorder extension; deny every other.

    Browsers send ``Origin`` on WebSocket handshakes but never apply the same-origin policy to them, so this is what
    keeps another site's page from using a signed-in person's session cookie. Allowed (``allowed_origin``):

    - the same origin as the request: the Origin's host *and port* equal the ``Host`` header's (default ports
      filled in), and that host is in ``ALLOWED_HOSTS``. Channels' ``AllowedHostsOriginValidator`` compares host
      names only, so any other service on the same host (``http://127.0.0.1:9999``) passed;
    - an origin listed in ``CSRF_TRUSTED_ORIGINS`` (scheme, host and port, e.g. behind a proxy that rewrites Host);
    - the recorder extension, ``chrome-extension://<id>`` for each id in ``LIVE_EXTENSION_IDS``.
    """

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            raise ValueError("SessionOriginValidator guards WebSocket connections only")
        headers = {name.lower(): value.decode("latin1") for name, value in scope.get("headers", [])}
        if allowed_origin(headers.get(b"origin"), headers.get(b"host"), scope.get("scheme", "ws")):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)


def allowed_origin(origin: str | None, host: str | None, scheme: str = "ws") -> bool:
    """Whether a handshake with these ``Origin`` and ``Host`` headers (on a ``ws``/``wss`` connection) may go on."""
    if not origin:
        return False
    origin = origin.strip().rstrip("/").lower()
    extensions = {f"chrome-extension://{extension_id}".lower() for extension_id in settings.LIVE_EXTENSION_IDS}
    trusted = {trusted.rstrip("/").lower() for trusted in settings.CSRF_TRUSTED_ORIGINS if "*" not in trusted}
    return origin in extensions or origin in trusted or same_origin(origin, host, scheme)


def same_origin(origin: str, host: str | None, scheme: str) -> bool:
    """The Origin names this server as the request reached it: same host and port as ``Host``, an allowed host, and
    over TLS when the socket is (``wss``)."""
    try:
        parts = urlsplit(origin)
        origin_port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a malformed port
        return False
    if (
        parts.scheme not in DEFAULT_PORTS
        or not parts.hostname
        or not host
        or (scheme == "wss" and parts.scheme != "https")
    ):
        return False
    host_name, host_port = split_domain_port(host.lower())
    allowed_hosts = settings.ALLOWED_HOSTS or (["localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
    if not host_name or not validate_host(host_name, allowed_hosts):
        return False
    return (parts.hostname, origin_port) == (
        host_name.strip("[]"),
        int(host_port) if host_port else DEFAULT_PORTS[parts.scheme],
    )
