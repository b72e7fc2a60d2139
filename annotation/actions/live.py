"""The live instructor–navigator session of a demonstration: access, chat, catch-up, invitations, ending.

Chat messages are chat turns stored by ``ingest.do_ingest_turns`` (the recorder's path too), which broadcasts
every stored batch to the session after commit. The consumer (``annotation/views/live_socket.py``) and the session
pages are thin callers of these functions.
"""

import math
from datetime import timedelta
from importlib import import_module

from django.conf import settings
from django.contrib import auth
from django.core.cache import cache
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from rest_framework.authtoken.models import Token

from ..models import Blob, DemoMode, Demonstration, Invitation, Role, TurnType, code_digest
from .errors import Conflict, Forbidden, Gone, NotFound, ValidationFailed
from .events import on_commit_send, turn_event
from .recordings import do_finish_recording, do_ingest_turns

NAVIGATOR, INSTRUCTOR, OBSERVER = "navigator", "instructor", "observer"
SPEAKING_ROLES = (NAVIGATOR, INSTRUCTOR)
MAX_UTTERANCE = 10_000
MAX_CLIENT_ID = 64

# --- Access ---------------------------------------------------------------------------------------------


def session_role(demo: Demonstration, user) -> str | None:
    """``navigator``, ``instructor``, ``observer`` (a project admin) or None (no place in this session)."""
    if not user.is_authenticated:
        return None
    if user.pk == demo.navigator_id:
        return NAVIGATOR
    if user.pk == demo.instructor_id:
        return INSTRUCTOR
    return OBSERVER if demo.project.has_role(user, (Role.ADMIN,)) else None


def check_session_access(user, name: str) -> tuple[Demonstration, str]:
    """The demonstration and ``user``'s role in its session. "No such demonstration" and "not yours" are the
    same NotFound, so a refusal tells nothing about other people's demonstrations."""
    demo = Demonstration.objects.visible_to(user).select_related("project").filter(name=name).first()
    role = session_role(demo, user) if demo is not None else None
    if role is None:
        raise NotFound(f"no live session {name!r} of yours")
    return demo, role


def token_user(key):
    """The active user of a DRF token (the recorder's credential), or None."""
    if not isinstance(key, str) or not key:
        return None
    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token is not None and token.user.is_active else None


# --- Access, again: a joined socket keeps its place only while its person keeps theirs ----------------------------
#
# A socket is authorised at ``join``; afterwards the person's access can end (removed from the project, no longer
# admin, account deactivated, password changed, token revoked or rotated, signed out). Each such change sends the
# person's sockets ``access.changed`` (``events.on_commit_recheck``, from ``manage.grants``), on which they call
# ``check_still_joined``; every message a socket sends (chat, end, revoke_invite, ping) calls it too, so a lost event
# lets no write through.

SIGNED_OUT = "your sign-in ended (password changed or signed out): sign in again to join"
DEACTIVATED = "your account was deactivated"
TOKEN_GONE = "your API token was revoked or replaced: make a new one on the token page"
NO_ACCESS = "you no longer have access to this session"
ROLE_CHANGED = "your place in this session changed: join again"


class AccessEnded(Exception):
    """A joined socket's person may no longer be in the session; ``signed_out``: their credential ended (4401),
    else their access to this session (4403). The message says which (the socket's close reason)."""

    def __init__(self, detail: str, signed_out: bool):
        super().__init__(detail)
        self.detail, self.signed_out = detail, signed_out


def session_user(session_key: str | None):
    """The active user a session (by key, read afresh from the session store) still signs in, or None: the session
    was flushed (sign-out), cycled or expired, or its password hash is stale (the password changed), as Django's
    ``auth.get_user`` decides but without its side effects (it flushes a stale session)."""
    if not session_key:
        return None
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user_id, stored_hash = session.get(auth.SESSION_KEY), session.get(auth.HASH_SESSION_KEY)
    user = auth.get_user_model().objects.filter(pk=user_id).first() if user_id is not None else None
    if user is None or not stored_hash or not user.is_active:
        return None
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return user if any(constant_time_compare(stored_hash, current) for current in hashes) else None


def check_still_joined(user_id: int, name: str, role: str, token: str | None = None, session_key: str | None = None):
    """``(user, demo)`` when the person who joined as ``role`` with this credential (their API token, else their
    session) still has that place in the session ``name``; else ``AccessEnded`` saying why. A role change that
    leaves the place as it was (an admin made researcher who is the navigator) changes nothing."""
    user = auth.get_user_model().objects.filter(pk=user_id).first()
    if user is None or not user.is_active:
        raise AccessEnded(DEACTIVATED, signed_out=True)
    if token is not None and not Token.objects.filter(key=token, user_id=user_id).exists():
        raise AccessEnded(TOKEN_GONE, signed_out=True)
    if token is None and session_user(session_key) != user:
        raise AccessEnded(SIGNED_OUT, signed_out=True)
    try:
        demo, now = check_session_access(user, name)
    except NotFound:
        raise AccessEnded(NO_ACCESS, signed_out=False) from None
    if now != role:
        raise AccessEnded(ROLE_CHANGED, signed_out=False)
    return user, demo


def sees_screen(demo: Demonstration, role: str) -> bool:
    """The no-vision rule (WebLINX TEST-VIS): an instructor of a demonstration with ``instructor_sees_screen``
    false gets no screenshot, URL or page content; the navigator and observers always do."""
    return role != INSTRUCTOR or demo.instructor_sees_screen


def visible_turn(event: dict, screen: bool) -> dict:
    """A turn event as one connection may see it: without screen content when ``screen`` is false (the seq and
    time stay, so the client's resume point still advances)."""
    if screen or event["type"] == TurnType.CHAT:
        return event
    return {"seq": event["seq"], "type": event["type"], "timestamp": event["timestamp"]}


def check_session_screenshot(user, name: str, sha256: str) -> Blob:
    """A screenshot of this demonstration's turns that ``user`` may see in the session (404 otherwise)."""
    demo, role = check_session_access(user, name)
    if not sees_screen(demo, role) or not demo.turns.filter(screenshot_id=sha256).exists():
        raise NotFound(f"no screenshot {sha256} in this session")
    return Blob.objects.get(sha256=sha256)


# --- Timeline -------------------------------------------------------------------------------------------


def check_after_seq(value) -> int:
    """The last seq a client saw; -1 (or absent) means "from the start"."""
    if value is None:
        return -1
    if not isinstance(value, int) or isinstance(value, bool) or value < -1:
        raise ValidationFailed("after_seq must be an integer >= -1", [{"field": "after_seq", "message": "invalid"}])
    return value


TURN_EVENT_FIELDS = (
    "demonstration",
    "seq",
    "type",
    "timestamp",
    "client_id",
    "speaker",
    "utterance",
    "intent",
    "url",
    "screenshot",
)


def session_turns(demo: Demonstration, after_seq: int) -> list[dict]:
    """The turn events stored after ``after_seq``, in seq order (what a reconnecting client missed)."""
    turns = demo.turns.filter(seq__gt=after_seq).order_by("seq")
    return [turn_event(turn) for turn in turns.only(*TURN_EVENT_FIELDS)]


# --- The recording clock ----------------------------------------------------------------------------------
#
# Browser turns are timestamped by the recorder (the navigator's machine), chat messages by this server. The
# navigator's side panel reports its recording-clock reading (``clock`` in ``join`` and ``ping``); the difference
# to the server's own elapsed time is the demonstration's clock offset, kept in the cache, and every chat message
# is timestamped ``server elapsed + offset``: on the recorder's clock, whatever the skew between the machines.

CLOCK_OFFSET_TTL_SECONDS = 7 * 24 * 3600


def clock_offset_key(demo: Demonstration) -> str:
    return f"live-clock-offset:{demo.name}"


def server_elapsed(demo: Demonstration) -> float:
    """Seconds since ``recording_start`` by the server's clock."""
    return (timezone.now() - demo.recording_start).total_seconds()


def check_clock_reading(value) -> float | None:
    """A client's recording-clock reading in seconds (absent: None)."""
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise ValidationFailed(
            "clock must be seconds on the recording clock (a number >= 0)", [{"field": "clock", "message": "invalid"}]
        )
    return float(value)


def do_note_clock(demo: Demonstration, role: str, reading: float | None) -> None:
    """Take the navigator's latest recording-clock reading as the demonstration's clock offset. Readings of other
    roles are ignored: only the navigator's recorder runs the recording clock."""
    if reading is None or role != NAVIGATOR:
        return
    cache.set(clock_offset_key(demo), reading - server_elapsed(demo), CLOCK_OFFSET_TTL_SECONDS)


def clock_offset(demo: Demonstration) -> float:
    """Recorder clock minus server clock, in seconds; 0 without a reading from the navigator's recorder."""
    return cache.get(clock_offset_key(demo), 0.0)


def recording_clock(demo: Demonstration) -> float:
    """Now on the recording clock: the server's elapsed time plus the navigator's clock offset."""
    return max(0.0, round(server_elapsed(demo) + clock_offset(demo), 3))


def chat_timestamp(demo: Demonstration) -> float:
    """The time of a new chat message: now on the recording clock, never before an earlier chat message (a new
    or changed offset must not reorder the conversation)."""
    last = demo.turns.filter(type=TurnType.CHAT).aggregate(last=Max("timestamp"))["last"]
    return max(recording_clock(demo), last or 0.0)


# --- Chat -----------------------------------------------------------------------------------------------


def check_chat_message(role: str, client_id, utterance) -> None:
    if role not in SPEAKING_ROLES:
        raise Forbidden("observers follow the session; only its instructor and navigator send messages")
    errors = []
    if not isinstance(client_id, str) or not 0 < len(client_id) <= MAX_CLIENT_ID:
        errors.append({"field": "client_id", "message": f"required; a string of 1 to {MAX_CLIENT_ID} characters"})
    if not isinstance(utterance, str) or not utterance.strip() or len(utterance) > MAX_UTTERANCE:
        errors.append({"field": "utterance", "message": f"required; 1 to {MAX_UTTERANCE} characters of text"})
    if errors:
        raise ValidationFailed("invalid chat message", errors)


def stored_chat_seq(demo: Demonstration, role: str, client_id: str, utterance: str) -> int | None:
    """The seq of the message already stored under ``client_id`` (a resend), or None. The same id with other
    content is a conflict."""
    turn = demo.turns.filter(client_id=client_id).first()
    if turn is None:
        return None
    if turn.type != TurnType.CHAT or turn.speaker != role or turn.utterance != utterance:
        raise Conflict("client_id was used for another turn", [{"field": "client_id", "message": "already used"}])
    return turn.seq


def do_send_chat(demo: Demonstration, role: str, client_id, utterance) -> dict:
    """Store a chat message as a chat turn (timestamped now on the recording clock, ``chat_timestamp``) through
    the ingest path, which broadcasts it after commit. A resend returns the stored turn and changes nothing; a new
    message for a finished recording is refused (no late-turn grace: it was not said before the end).

    Returns the acknowledgement ``{client_id, seq, duplicate}``."""
    check_chat_message(role, client_id, utterance)
    turn = {
        "client_id": client_id,
        "type": TurnType.CHAT.value,
        "timestamp": chat_timestamp(demo),
        "speaker": role,
        "utterance": utterance,
    }
    try:
        result = do_ingest_turns(demo, [turn], late=False)
    except Conflict:
        # Stored before (a resend: its timestamp, taken now, differs) or the recording is finished.
        seq = stored_chat_seq(demo, role, client_id, utterance)
        if seq is None:
            raise
        return {"client_id": client_id, "seq": seq, "duplicate": True}
    return {"client_id": client_id, "seq": result.turns[0]["seq"], "duplicate": result.duplicates > 0}


def do_end_session(user, demo: Demonstration) -> Demonstration:
    """ "End demonstration": finish the recording (the session hears ``ended`` after commit). Observers may too.

    The end is stored on the navigator's clock (now plus the clock offset), so that ``recording_end -
    recording_start`` is the end on the recording clock: the recorder's turns captured before it are still
    accepted when they are uploaded later (``ingest.check_late_turns``)."""
    if not demo.can_write(user):
        raise Forbidden("only the session's instructor, navigator or a project admin can end it")
    return do_finish_recording(demo, timezone.now() + timedelta(seconds=clock_offset(demo)))


def do_announce_presence(demo_name: str, role: str, username: str, present: bool, channel: str) -> None:
    """Tell the session that someone joined or left. Nothing is stored; a joiner's announcement asks the others
    to answer it directly (``channel``) so it learns who is already there."""
    on_commit_send(
        demo_name,
        {"type": "session.presence", "role": role, "user": username, "present": present, "channel": channel},
    )


# --- Invitations ----------------------------------------------------------------------------------------
#
# An invitation is a stored row (``Invitation``): a random code, valid ``LIVE_INVITE_MAX_AGE_SECONDS``, used once
# (the first member to join becomes the instructor), revocable by the navigator or a project admin. A recording
# without an instructor has at most one active invitation, issued when it is first shown; revoking it issues the
# next one at once ("revoke and make a new link"), which the session hears after commit.

INVITING_ROLES = (NAVIGATOR, OBSERVER)


def takes_instructor(demo: Demonstration) -> bool:
    """A chat-mode recording still without an instructor (what an invitation is for); task mode has none."""
    return demo.is_recording and demo.instructor_id is None and demo.mode == DemoMode.CHAT


def do_issue_invitation(user, demo: Demonstration) -> Invitation | None:
    """The demonstration's active invitation, issued now (by ``user``) when there is none; None when it takes no
    instructor or ``user`` may not invite (only its navigator and project admins do)."""
    if not takes_instructor(demo) or session_role(demo, user) not in INVITING_ROLES:
        return None
    with transaction.atomic():
        # Locked: two pages showing the link at the same moment issue one invitation, not two.
        Demonstration.objects.select_for_update().filter(pk=demo.pk).exists()
        current = demo.invitations.active().first()
        if current is not None:
            return current
        expires = timezone.now() + timedelta(seconds=settings.LIVE_INVITE_MAX_AGE_SECONDS)
        invitation = Invitation.new(demo, user, expires)
        invitation.save()
    return invitation


def do_issue_invitations(user, demos: list) -> dict:
    """``{demo pk: invitation}`` for the recordings among ``demos`` that ``user`` navigates and that take an
    instructor, issuing the missing ones; two queries however many demos (the home page)."""
    wanted = {demo.pk: demo for demo in demos if takes_instructor(demo) and demo.navigator_id == user.pk}
    found = {
        invitation.demonstration_id: invitation
        for invitation in Invitation.objects.active().filter(demonstration__in=wanted)
    }
    expires = timezone.now() + timedelta(seconds=settings.LIVE_INVITE_MAX_AGE_SECONDS)
    fresh = [Invitation.new(demo, user, expires) for pk, demo in wanted.items() if pk not in found]
    Invitation.objects.bulk_create(fresh)
    return found | {invitation.demonstration_id: invitation for invitation in fresh}


def do_revoke_invitation(user, demo: Demonstration) -> Invitation | None:
    """Revoke the active invitation (its link stops working at once) and issue the next one; the session's
    navigator and observers get the new link after commit. Returns the new invitation (None: takes no instructor)."""
    if session_role(demo, user) not in INVITING_ROLES:
        raise Forbidden("only the navigator or a project admin can revoke the invitation")
    with transaction.atomic():
        demo = Demonstration.objects.select_for_update().select_related("project").get(pk=demo.pk)
        demo.invitations.active().update(revoked_at=timezone.now(), revoked_by=user)
        invitation = do_issue_invitation(user, demo)
        on_commit_send(demo.name, invitation_event(invitation))
    return invitation


def invitation_event(invitation: Invitation | None) -> dict:
    """What the session's navigator and observers hear when the invitation changes (never the instructor)."""
    return {"type": "session.invite", **invitation_fields(invitation)}


def invitation_fields(invitation: Invitation | None) -> dict:
    """``{"invite": code, "invite_expires_at": ISO time}`` or ``{"invite": None}``."""
    if invitation is None:
        return {"invite": None}
    return {"invite": invitation.code, "invite_expires_at": invitation.expires_at.isoformat()}


GONE = {
    "used": "This invitation has already been used: the demonstration has its instructor.",
    "revoked": "This invitation was revoked by the navigator; ask them for the new link.",
    "expired": "This invitation has expired; ask the navigator for a new link.",
}


def find_invitation(user, code: str) -> Invitation:
    """The invitation of ``code``, whatever its state, if ``user`` is a member of its demonstration's project.
    Unknown codes and non-members get the same 404: a code tells outsiders nothing."""
    invitation = (
        Invitation.objects.select_related("demonstration__project", "demonstration__navigator")
        .filter(code_sha256=code_digest(code or ""))
        .first()
    )
    if invitation is None or not Demonstration.objects.visible_to(user).filter(pk=invitation.demonstration_id).exists():
        raise NotFound("this invitation is not valid")
    return invitation


def check_invite(user, code: str) -> Invitation:
    """The invitation of ``code`` if it can still be used (``find_invitation``); a member gets a 410 saying why a
    known code no longer works (used, revoked, expired)."""
    invitation = find_invitation(user, code)
    if invitation.state != "active":
        raise Gone(GONE[invitation.state])
    return invitation


def do_join_as_instructor(user, code: str) -> Demonstration:
    """Use an invitation: ``user`` becomes the demonstration's instructor and the invitation is spent. Joining
    again as its instructor is harmless; the navigator cannot instruct their own recording."""
    invitation = find_invitation(user, code)
    with transaction.atomic():
        demo = Demonstration.objects.select_for_update().select_related("project").get(pk=invitation.demonstration_id)
        invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
        if demo.instructor_id == user.pk:
            return demo
        if demo.navigator_id == user.pk:
            raise Conflict("you are this demonstration's navigator; send the invitation to your instructor")
        if invitation.state != "active":
            raise Gone(GONE[invitation.state])
        if demo.instructor_id is not None:
            raise Conflict("this demonstration already has an instructor")
        if not demo.is_recording:
            raise Conflict(f"this demonstration is {demo.get_status_display().lower()}; it takes no instructor")
        demo.instructor = user
        demo.save(update_fields=["instructor", "updated_at"])
        invitation.used_at, invitation.used_by = timezone.now(), user
        invitation.save(update_fields=["used_at", "used_by"])
        on_commit_send(demo.name, invitation_event(None))
    return demo
