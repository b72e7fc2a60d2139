"""Labels in review: every browser action is named on the review page, by the recorder's label when it sent one
(ingested, validated and stored), else by one derived from the element as WebLINX stores it (older recorders)."""

import html
import re

import pytest

from annotation.lib.labels import action_label
from annotation.models import Turn
from tests.support.payloads import bbox, browser_turn, chat_turn, metadata
from tests.support.recorder import finish, post_turns, start_demo

COUNTRY = (
    '<select id="country" name="country"><option value="">--</option><option value="ca">Canada</option>'
    '<option value="fr">France</option></select>'
)
SEARCH_FORM = (
    f'<form id="search" action="/results">{COUNTRY}<input name="promo" placeholder="Promo code">'
    "<button>  Search\n flights </button></form>"
)


def element(tag: str, attributes: dict, text: str = "", outer: str = "") -> dict:
    """An acted element as the recorder stores it (WebLINX's shape)."""
    return {
        "attributes": {"data-webtasks-id": f"u-{tag}-{len(text)}", **attributes},
        "bbox": bbox(),
        "tagName": tag.upper(),
        "textContent": text,
        "innerHTML": "",
        "outerHTML": outer or f"<{tag}>",
        "xpath": f"/html/body/{tag}",
    }


def action(client_id, intent, timestamp, el, label=None, **arguments) -> dict:
    turn = browser_turn(client_id, intent, timestamp)
    turn["arguments"] = {"metadata": metadata(), "element": el, **arguments}
    if label is not None:
        turn["label"] = label
    return turn


def first_demo_turns() -> list:
    """A flight search: a new recorder's labels on some turns, an older recorder's element alone on others."""
    return [
        chat_turn("c0", "instructor", 0.5),
        action("t1", "click", 1.0, element("input", {"id": "from", "name": "from"}), label="From (city)"),
        action("t2", "textInput", 2.0, element("input", {"id": "from", "name": "from"}), "From (city)", text="Paris"),
        action("t3", "click", 3.0, element("input", {"name": "promo", "placeholder": "Promo code"})),
        action("t4", "change", 4.0, element("select", {"id": "country"}, "--CanadaFrance", COUNTRY), value="fr"),
        action("t5", "click", 5.0, element("input", {"type": "password", "name": "user_password"})),
        action("t6", "textInput", 6.0, element("input", {"type": "password", "id": "pw"}), text="********"),
        action("t7", "submit", 7.0, element("form", {"id": "search"}, "--CanadaFrance Search flights", SEARCH_FORM)),
        action("t8", "click", 8.0, element("a", {"href": "/deals"}, "\n   Weekly\n   deals  ")),
    ]


FIRST_LABELS = [
    "input “From (city)”",
    "input “From (city)”",
    "input “Promo code”",
    "select “country: France”",
    "input “user password”",
    "input “pw”",
    "form “Search flights”",
    "a “Weekly deals”",
]


def second_demo_turns() -> list:
    return [
        action("s1", "click", 1.0, element("textarea", {"aria-label": "Message to the host"}, "typed words")),
        action("s2", "change", 2.0, element("select", {"name": "guests"}, "12", COUNTRY), label="Guests: 2", value="2"),
        action("s3", "submit", 3.0, element("form", {"aria-label": "Book the room"}, "x", "<form><button>Go</button>")),
        action("s4", "click", 4.0, element("div", {"data-private": ""}, "")),
        action("s5", "click", 5.0, element("button", {"id": "ok"}, "   "), label=""),
    ]


SECOND_LABELS = [
    "textarea “Message to the host”",
    "select “Guests: 2”",
    "form “Book the room”",
    "div “(private)”",
    "button “ok”",
]


def recorded(client, client_id: str, turns: list):
    demo = start_demo(client, client_id=client_id)
    response = post_turns(client, demo.name, turns)
    assert response.status_code == 201, response.content
    assert finish(client, demo.name).status_code == 200
    return demo


def shown_labels(client, demo) -> list:
    """The element lines of the review page's timeline, as a reviewer reads them."""
    response = client.get(f"/review/{demo.name}/")
    assert response.status_code == 200
    return [html.unescape(text) for text in re.findall(r'<div class="element">(.*?)</div>', response.text)]


def test_the_review_page_names_every_action_of_two_demos_in_one_project(client, owner, teammate, reviewer, api_for):
    first = recorded(api_for(owner), "rec-labels-1", first_demo_turns())
    second = recorded(api_for(teammate), "rec-labels-2", second_demo_turns())
    client.force_login(reviewer)

    assert shown_labels(client, first) == FIRST_LABELS
    assert shown_labels(client, second) == SECOND_LABELS
    page = client.get(f"/review/{first.name}/").text
    assert "Paris" in page, "a text turn still shows its typed text, beside the field's label"
    assert "Canada" not in "".join(shown_labels(client, first)), "a select's label is its choice, not every option"


def test_the_recorders_label_is_stored_and_a_retry_with_it_is_no_conflict(owner, api_for):
    client = api_for(owner)
    demo = recorded(client, "rec-labels-3", first_demo_turns())
    stored = dict(Turn.objects.filter(demonstration=demo).values_list("client_id", "label"))
    assert stored["t1"] == stored["t2"] == "From (city)"
    assert stored["t3"] == stored["c0"] == ""
    again = post_turns(client, demo.name, first_demo_turns()[:3])
    assert again.status_code == 200, again.content
    assert again.json()["duplicates"] == 3


def test_a_bad_label_is_refused_naming_it_and_nothing_is_stored(owner, api_for):
    client = api_for(owner)
    demo = start_demo(client, client_id="rec-labels-4")
    for bad, message in ((["Go"], "expected string, got array"), ("y" * 201, "at most 200 characters")):
        turns = [*first_demo_turns()[:3], {**first_demo_turns()[3], "label": bad}]
        response = post_turns(client, demo.name, turns)
        assert response.status_code == 400
        assert [(e["field"], message in e["message"]) for e in response.json()["errors"]] == [("turns[3].label", True)]
        assert not Turn.objects.filter(demonstration=demo).exists()


@pytest.mark.parametrize(
    ("intent", "el", "arguments", "expected"),
    [
        ("click", element("input", {"aria-label": "  Where\n to? ", "placeholder": "City"}), {}, "Where to?"),
        ("click", element("input", {"title": "Arrival"}), {}, "Arrival"),
        ("click", element("input", {"name": "returnDate"}), {}, "return date"),
        ("click", element("input", {"id": "first_name", "value": "Ann"}), {}, "first name"),
        ("click", element("input", {"type": "submit", "value": "Send"}), {}, "Send"),
        ("click", element("img", {"alt": "Logo"}), {}, "Logo"),
        ("textInput", element("div", {"contenteditable": "true"}, "my draft"), {"text": "my draft"}, ""),
        ("click", element("a", {}, "word " * 30), {}, ("word " * 16)[:79] + "…"),
        ("change", element("select", {"name": "seats"}, "", "<select><option>1<option>2"), {"value": "2"}, "seats: 2"),
        ("change", element("select", {"name": "seats"}, "", "<select></select>"), {"value": "********"}, "seats"),
        ("change", element("select", {}, "ab", '<select><option value="a">A'), {"value": "a"}, "A"),
        ("submit", element("form", {"name": "news_signup"}, "", "<form><input name=q></form>"), {}, "news signup"),
        ("submit", element("form", {}, "", '<form><input type="submit" value="Subscribe"></form>'), {}, "Subscribe"),
        ("submit", element("form", {}, "", '<form><button type="button">No</button></form>'), {}, ""),
        ("submit", element("form", {}, "", "<form><<<"), {}, ""),
        ("scroll", None, {"scrollX": 0, "scrollY": 10}, ""),
    ],
)
def test_a_label_is_derived_from_the_stored_element(intent, el, arguments, expected):
    stored = {"metadata": metadata(), **arguments}
    if el is not None:
        stored["element"] = el
    assert action_label(intent, stored) == expected


def test_a_derived_label_tolerates_legacy_shapes():
    assert action_label("click", {"element": "body"}) == ""
    assert action_label("click", {"element": {"attributes": ["x"], "tagName": 3, "textContent": None}}) == ""
    assert action_label("change", {"element": {"tagName": "SELECT", "attributes": {"id": "c"}}, "value": 3}) == "c"
    assert action_label("click", None) == ""
    assert action_label("click", {}, recorded="  Saved\nlabel ") == "Saved label"
