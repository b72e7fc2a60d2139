"""Real-time events of a demonstration's live session, sent to its Channels group after the transaction commits;
and the one event of a person's group: their access changed (``on_commit_recheck``).

Only ``do_*`` functions (and the access-change receivers of ``manage.grants``) send, so every event describes data
that is stored. The consumer (``annotation/views/live_socket.py``) filters each event per connection before it reaches
a socket (the no-vision rule).
"""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from ..models import Turn, TurnType

logger = logging.getLogger(__name__)


def session_group(demo_name: str) -> str:
    """The Channels group of a demonstration's live session."""
    return f"session-{demo_name}"


def turn_event(turn: Turn) -> dict:
    """The compact form of a stored turn that travels to the session: no page HTML, boxes or arguments."""
    event = {"seq": turn.seq, "type": turn.type, "timestamp": turn.timestamp, "client_id": turn.client_id}
    if turn.type == TurnType.CHAT:
        event.update(speaker=turn.speaker, utterance=turn.utterance)
    else:
        event.update(intent=turn.intent, url=turn.url, screenshot=turn.screenshot_id)
    return event


def user_group(user_id: int) -> str:
    """The Channels group of one person's live-session sockets (every session, every credential)."""
    return f"user-{user_id}"


def send_now(demo_name: str, message: dict) -> None:
    """Send to the session group."""
    send_to_group(session_group(demo_name), message)


def send_to_group(group: str, message: dict) -> None:
    """A broken channel layer must not fail the request that stored the data (the session catches up on reconnect;
    writes re-check access on their own)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # noqa: BLE001 (the data is committed)
        logger.exception("could not send %s to %s", message.get("type"), group)


def on_commit_send(demo_name: str, message: dict) -> None:
    """Send ``message`` to the session group once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: send_now(demo_name, message))


def on_commit_turns(demo_name: str, turns: list[Turn]) -> None:
    """One group message per stored batch of turns, after commit."""
    if turns:
        on_commit_send(demo_name, {"type": "session.turns", "turns": [turn_event(t) for t in turns]})


def on_commit_recheck(user_id: int) -> None:
    """After commit, tell every live-session socket of this person to check their access again (and close the ones
    that lost it): a membership removed or changed, an account deactivated, a password changed, a token deleted, a
    sign-out. Writes are checked again on their own (``live.check_still_joined``), so a lost event lets none through."""
    transaction.on_commit(lambda: send_to_group(user_group(user_id), {"type": "access.changed"}))
