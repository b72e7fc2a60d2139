"""Real-time events of a demonstration's live session, sent to its Channels group after the transaction commits.

Only ``do_*`` functions call ``on_commit_send``, so every event describes data that is stored. The consumer
(``annotation/views/live_socket.py``) filters each event per connection before it reaches a socket (the no-vision rule).
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


def send_now(demo_name: str, message: dict) -> None:
    """Send to the session group; a broken channel layer must not fail the request that stored the data."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(session_group(demo_name), message)
    except Exception:  # noqa: BLE001 (the data is committed; the session catches up on reconnect)
        logger.exception("could not send %s to the session of %s", message.get("type"), demo_name)


def on_commit_send(demo_name: str, message: dict) -> None:
    """Send ``message`` to the session group once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: send_now(demo_name, message))


def on_commit_turns(demo_name: str, turns: list[Turn]) -> None:
    """One group message per stored batch of turns, after commit."""
    if turns:
        on_commit_send(demo_name, {"type": "session.turns", "turns": [turn_event(t) for t in turns]})
