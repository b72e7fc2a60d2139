"""Defence in depth behind the recorder's masking (docs/recorder-privacy.md): a turn on an element whose serialized
attributes say ``type=password`` never stores a clear value, whichever upload path brings it; what the turns API,
the database and a retry see is the mask."""

import json

import pytest

from annotation.models import Turn

from .payloads import browser_turn
from .recorder import post_turns, recordings_url, start_demo
from .test_recordings_batch import frame, post_batch

SECRET = "Pw0rd-Zebra-7731"
MASK = "********"
# The argument each intent carries what the element was given or held in.
VALUE_OF = {"textInput": "text", "change": "value", "paste": "pasted", "copy": "selected"}


@pytest.fixture
def client(owner, api_for):
    return api_for(owner)


def on_password(client_id: str, intent: str, value: str, kind: str = "password") -> dict:
    turn = browser_turn(client_id, intent)
    turn["arguments"]["element"]["attributes"]["type"] = kind
    turn["arguments"][VALUE_OF[intent]] = value
    return turn


def stored_values(client, name: str) -> dict:
    """client_id → its value argument, as the turns API answers."""
    body = client.get(recordings_url(name, "turns")).json()
    turns = body["turns"] if isinstance(body, dict) else body
    return {t["client_id"]: t["arguments"].get(VALUE_OF.get(t["intent"], ""), None) for t in turns}


def assert_secret_nowhere(client, name: str) -> None:
    assert SECRET not in client.get(recordings_url(name, "turns")).content.decode()
    rows = Turn.objects.filter(demonstration__name=name).values_list("arguments", flat=True)
    assert SECRET not in json.dumps(list(rows))


@pytest.mark.django_db
def test_a_clear_value_on_a_password_field_is_stored_masked_over_the_turns_endpoint(client):
    demo = start_demo(client)
    turns = [on_password(f"{intent}-1", intent, SECRET) for intent in VALUE_OF]
    turns.append(on_password("upper-1", "textInput", SECRET, kind=" PASSWORD "))
    turns.append(on_password("empty-1", "textInput", ""))
    turns.append(on_password("masked-1", "textInput", MASK))
    plain = browser_turn("plain-1", "textInput")
    plain["arguments"]["element"]["attributes"]["type"] = "text"
    turns.append(plain)

    response = post_turns(client, demo.name, turns)

    assert response.status_code == 201, response.content
    values = stored_values(client, demo.name)
    assert {f"{intent}-1": values[f"{intent}-1"] for intent in VALUE_OF} == {f"{i}-1": MASK for i in VALUE_OF}
    assert (values["upper-1"], values["empty-1"], values["masked-1"]) == (MASK, "", MASK)
    assert values["plain-1"] == "weather in Montreal", "other fields keep their text"
    assert_secret_nowhere(client, demo.name)

    retried = post_turns(client, demo.name, turns)  # the answer was lost: the same clear turns again
    assert retried.status_code == 200, retried.content
    assert retried.json()["duplicates"] == len(turns)


@pytest.mark.django_db
def test_a_clear_value_on_a_password_field_is_stored_masked_over_the_batch_endpoint(client, media_storage):
    demo = start_demo(client)
    turns = [on_password("typed-1", "textInput", SECRET), on_password("pasted-1", "paste", SECRET)]

    response = post_batch(client, demo.name, frame(turns, []))

    assert response.status_code == 201, response.content
    assert stored_values(client, demo.name) == {"typed-1": MASK, "pasted-1": MASK}
    assert_secret_nowhere(client, demo.name)
