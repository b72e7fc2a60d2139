"""Defence in depth behind the recorder's masking (docs/recorder-privacy.md): a turn on an element whose serialized
attributes say ``type=password`` never stores a clear value, and the values of URL parameters whose names mark secrets
are masked in every turn, whichever upload path brings them; what the turns API, the database and a retry see is the
mask. The server's rule is the recorder's: one list of names, one set of cases, the same expressions."""

import json
import logging
import re
from pathlib import Path

import pytest

from annotation.lib import redact
from annotation.models import Turn
from tests.support.payloads import browser_turn
from tests.support.recorder import frame, post_bundle, post_turns, recordings_url, start_demo

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

    response = post_bundle(client, demo.name, frame(turns, []))

    assert response.status_code == 201, response.content
    assert stored_values(client, demo.name) == {"typed-1": MASK, "pasted-1": MASK}
    assert_secret_nowhere(client, demo.name)


# --------------------------------------------------------------------------------------------------------------
# Secret URL parameters (annotation/lib/redact.py, the server's copy of the recorder's rule)

ROOT = Path(__file__).resolve().parents[2]
EXTENSION_REDACT = ROOT / "recorder_extension" / "lib" / "redact.js"
SHARED_CASES = ROOT / "recorder_extension" / "tests" / "fixtures" / "secret_parameters.json"
TOKEN, CODE, SESSION = "Tok-Heron-5521", "Code-Ibis-0906", "Sess-Crane-7340"
RAW_URL = f"https://shop.example/account/reset?token={TOKEN}&code={CODE}&lang=en#access_token={TOKEN}"
MASKED_URL = f"https://shop.example/account/reset?token={MASK}&code={MASK}&lang=en#access_token={MASK}"


def js_constant(name: str) -> str:
    found = re.search(rf"const {name} = (.+?);\n", EXTENSION_REDACT.read_text(), re.S)
    assert found, f"{name} not found in {EXTENSION_REDACT}"
    return found[1]


def test_the_secret_parameter_names_are_one_list_in_the_recorder_the_server_and_the_docs():
    recorder = re.findall(r'"([a-z]+)"', js_constant("SECRET_PARAMETER_PARTS"))
    docs = (ROOT / "docs" / "recorder-privacy.md").read_text()
    listed = re.search(r"^Secret parameter names: (.+)$", docs, re.M)
    assert listed, "docs/recorder-privacy.md lists the names on a line of its own"
    assert recorder == list(redact.SECRET_PARAMETER_PARTS) == re.findall(r"`([a-z]+)`", listed[1])


def test_the_server_matches_parameters_with_the_recorders_own_expressions():
    for name, compiled in (("PARAMETER", redact.PARAMETER), ("USERINFO", redact.USERINFO)):
        source = re.fullmatch(r"/(.+)/g", js_constant(name))[1].replace("\\/", "/")
        assert source == compiled.pattern, name


@pytest.mark.parametrize(("text", "expected"), json.loads(SHARED_CASES.read_text())["cases"])
def test_secret_parameters_are_masked_as_the_recorder_masks_them(text, expected):
    assert redact.mask_parameters(text) == expected
    assert redact.mask_parameters(expected) == expected, "masking again changes nothing"


def with_secret_urls(client_id: str, intent: str = "click") -> dict:
    """A turn as a recorder without the redaction sends it: the secrets in every URL-valued place of the turn."""
    turn = browser_turn(client_id, intent)
    args = turn["arguments"]
    args["metadata"] |= {"url": RAW_URL, "frameUrl": f"https://frame.example/embed;jsessionid={SESSION}?sig={CODE}"}
    if intent == "load":
        args["properties"]["url"] = RAW_URL
    else:
        element = args["element"]
        element["attributes"] |= {"href": RAW_URL, "data-next": f"/next?session_id={SESSION}"}
        element["outerHTML"] = f'<a href="/r?token={TOKEN}&amp;code={CODE}">reset</a>'
        element["textContent"] = f"Your link: https://bob:{CODE}@shop.example/r?token={TOKEN}"
    return turn


def hidden_token_field(client_id: str) -> dict:
    turn = browser_turn(client_id, "change")
    turn["arguments"]["element"]["attributes"] |= {"type": "hidden", "name": "csrf_token", "value": TOKEN}
    return turn


def assert_secrets_nowhere(client, name: str) -> None:
    answer = client.get(recordings_url(name, "turns")).content.decode()
    rows = list(Turn.objects.filter(demonstration__name=name).values_list("url", "arguments"))
    for secret in (TOKEN, CODE, SESSION):
        assert secret not in answer, f"{secret} in the turns API"
        assert secret not in json.dumps(rows), f"{secret} in the database"


@pytest.mark.django_db
def test_secret_url_parameters_a_recorder_sends_raw_are_stored_masked_over_the_turns_endpoint(client, caplog):
    demo = start_demo(client)
    turns = [with_secret_urls("load-1", "load"), with_secret_urls("click-1"), hidden_token_field("hidden-1")]
    turns.append(browser_turn("plain-1", "load"))

    with caplog.at_level(logging.WARNING, logger="annotation.actions.recordings.turns"):
        response = post_turns(client, demo.name, turns)

    assert response.status_code == 201, response.content
    stored = {t["client_id"]: t for t in client.get(recordings_url(demo.name, "turns")).json()}
    load, click = stored["load-1"]["arguments"], stored["click-1"]["arguments"]
    assert load["metadata"]["url"] == load["properties"]["url"] == MASKED_URL
    assert load["metadata"]["frameUrl"] == f"https://frame.example/embed;jsessionid={MASK}?sig={MASK}"
    assert Turn.objects.get(demonstration=demo, client_id="load-1").url == MASKED_URL, "the url column too"
    assert click["element"]["attributes"]["href"] == MASKED_URL
    assert click["element"]["attributes"]["data-next"] == f"/next?session_id={MASK}"
    assert click["element"]["outerHTML"] == f'<a href="/r?token={MASK}&amp;code={MASK}">reset</a>'
    assert click["element"]["textContent"] == f"Your link: https://bob:{MASK}@shop.example/r?token={MASK}"
    assert stored["hidden-1"]["arguments"]["element"]["attributes"]["value"] == MASK
    assert stored["plain-1"]["arguments"]["properties"]["url"] == "https://www.example.com/results?q=weather"
    assert_secrets_nowhere(client, demo.name)
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert "arguments.metadata.url" in logged
    assert demo.name in logged
    assert not any(secret in logged for secret in (TOKEN, CODE, SESSION)), "the log names fields, never values"

    retried = post_turns(client, demo.name, turns)  # the answer was lost: the same raw turns again
    assert retried.status_code == 200, retried.content
    assert retried.json()["duplicates"] == len(turns)


@pytest.mark.django_db
def test_secret_url_parameters_a_recorder_sends_raw_are_stored_masked_over_the_batch_endpoint(client, media_storage):
    demo = start_demo(client)
    turns = [with_secret_urls("load-1", "load"), with_secret_urls("hover-1", "hover")]

    response = post_bundle(client, demo.name, frame(turns, []))

    assert response.status_code == 201, response.content
    stored = {t["client_id"]: t for t in client.get(recordings_url(demo.name, "turns")).json()}
    assert stored["load-1"]["arguments"]["properties"]["url"] == MASKED_URL
    assert stored["hover-1"]["arguments"]["metadata"]["url"] == MASKED_URL
    assert_secrets_nowhere(client, demo.name)


@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        ("http://user:KEY@127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://KEY@example.org/v1?q=1", "https://example.org/v1?q=1"),
        ("http://u:KEY@[::1]:9/v1", "http://[::1]:9/v1"),
        ("http://u:KEY@[::1/v1", ""),  # not a URL: nothing of it comes back
        ("http://127.0.0.1/v1", "http://127.0.0.1/v1"),
        ("", ""),
    ],
)
def test_a_url_is_shown_back_without_its_userinfo(typed, shown):
    assert redact.without_userinfo(typed) == shown
