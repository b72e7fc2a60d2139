"""Raw turns are written once by ingest and never changed; curation is stored as edits elsewhere."""

import pytest

from annotation.models import ImmutableCaptureError, Turn
from tests.support.payloads import browser_turn, chat_turn
from tests.support.recorder import post_turns, start_demo


@pytest.fixture
def turn(owner, api_for):
    client = api_for(owner)
    demo = start_demo(client)
    post_turns(client, demo.name, [chat_turn("c-0"), browser_turn("b-1", "textInput")])
    return Turn.objects.get(client_id="b-1")


def test_saving_a_stored_turn_again_raises(turn):
    turn.arguments["text"] = "edited"

    with pytest.raises(ImmutableCaptureError, match="immutable"):
        turn.save()

    assert Turn.objects.get(pk=turn.pk).arguments["text"] == "weather in Montreal"


def test_saving_a_stored_turn_with_update_fields_raises_too(turn):
    turn.timestamp = 99.0

    with pytest.raises(ImmutableCaptureError):
        turn.save(update_fields=["timestamp"])

    assert Turn.objects.get(pk=turn.pk).timestamp == 1.5


def test_a_new_turn_can_still_be_saved_once(turn):
    fresh = Turn(demonstration=turn.demonstration, client_id="b-2", seq=2, type="chat", timestamp=3.0)

    fresh.save()

    assert Turn.objects.filter(demonstration=turn.demonstration).count() == 3
