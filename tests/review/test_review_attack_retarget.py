"""Hostile use of "Change target" (op ``retarget``, ``…/turns/<id>/elements``): undo used to put a typed text back in
clear on a turn retargeted onto a password field, and a deep page made the picker's listing quadratic."""

import hashlib
import io
import json

import pytest

from annotation.actions.recordings.blobs import check_and_store
from annotation.lib import page_elements
from annotation.models import DemoStatus, Edit, Role, Turn
from annotation.models.review import TurnCuration
from tests.support.actors import make_user
from tests.support.corpus import ingest_corpus
from tests.support.review_data import post_edit

BOX = {"x": 10, "y": 10, "width": 100, "height": 20}


def stored(data: bytes, media_type: str):
    return check_and_store(hashlib.sha256(data).hexdigest(), media_type, io.BytesIO(data))


def with_page(turn, html: str, uids) -> None:
    """Give the turn (a test fixture's raw capture) this page, every uid of ``uids`` with a box."""
    page = stored(html.encode(), "text/html")
    boxes = stored(json.dumps(dict.fromkeys(uids, BOX)).encode(), "application/json")
    Turn.objects.filter(pk=turn.pk).update(page=page, bboxes=boxes)


@pytest.fixture
def typing(db, media_storage, client):
    """A reviewer signed in on a recorded demo whose textInput turn typed a text in a field beside a password one."""
    demo = ingest_corpus(project="alpha", demos=1, turns=24, elements=20, seed=7, status=DemoStatus.RECORDED)[0]
    turn = next(t for t in Turn.objects.filter(demonstration=demo, intent="textInput") if t.element_uid)
    assert turn.arguments["text"]
    field = turn.element_uid
    with_page(
        turn,
        f'<body><input data-webtasks-id="{field}"><input data-webtasks-id="pw" type="password"></body>',
        [field, "pw"],
    )
    client.force_login(make_user("ana", demo.project, Role.REVIEWER))
    return demo, turn


def last_edit(demo, kind) -> Edit:
    return Edit.objects.filter(demonstration=demo, kind=kind).latest("revision")


def text_now(turn):
    return TurnCuration.objects.get(turn=turn).text


def test_undoing_the_emptied_text_of_a_turn_now_on_a_password_field_is_refused(client, typing):
    demo, turn = typing
    assert post_edit(client, demo, op="edit_text", turn=turn.pk, text="").status_code == 200
    emptied = last_edit(demo, "edit_text")
    assert post_edit(client, demo, op="retarget", turn=turn.pk, element="pw").status_code == 200

    undo = post_edit(client, demo, op="undo", edit=emptied.pk)
    assert undo.status_code == 409, undo.content
    assert "password" in undo.json()["detail"]
    assert text_now(turn) == ""
    assert TurnCuration.objects.get(turn=turn).element["attributes"]["type"] == "password"

    # Once the target is a plain field again the text may come back.
    assert post_edit(client, demo, op="undo", edit=last_edit(demo, "retarget").pk).status_code == 200
    assert post_edit(client, demo, op="undo", edit=emptied.pk).status_code == 200
    assert text_now(turn) is None


def test_undoing_a_retarget_back_onto_a_password_field_with_text_typed_since_is_refused(client, typing):
    demo, turn = typing
    assert post_edit(client, demo, op="edit_text", turn=turn.pk, text="").status_code == 200
    assert post_edit(client, demo, op="retarget", turn=turn.pk, element="pw").status_code == 200
    assert post_edit(client, demo, op="retarget", turn=turn.pk, element=turn.element_uid).status_code == 200
    back = last_edit(demo, "retarget")
    assert post_edit(client, demo, op="edit_text", turn=turn.pk, text="hunter2").status_code == 200

    undo = post_edit(client, demo, op="undo", edit=back.pk)
    assert undo.status_code == 409, undo.content
    assert "password" in undo.json()["detail"]
    assert TurnCuration.objects.get(turn=turn).element is None
    assert text_now(turn) == "hunter2"


def test_a_deep_page_is_listed_reading_a_bounded_part_of_each_element(client, typing, monkeypatch):
    """250 nested elements with a uid around 150,000 empty ones (1.2 MB): each element's text used to be collected
    from its whole subtree (about 40 s here, 37.5 million pieces read); the listing now reads at most a bounded part
    of each. Counted in text pieces read, not seconds."""
    demo, turn = typing
    read, pieces = [0], page_elements.text_pieces

    def counted(node):
        for piece in pieces(node):
            read[0] += 1
            yield piece

    monkeypatch.setattr(page_elements, "text_pieces", counted)
    depth, leaves = 250, 150_000
    uids = [f"d{n}" for n in range(depth)]
    html = (
        "<body>"
        + "".join(f'<div data-webtasks-id="{uid}">' for uid in uids)
        + f'<input data-webtasks-id="{turn.element_uid}">'
        + "<i> </i>" * leaves
        + "</div>" * depth
        + "</body>"
    )
    with_page(turn, html, [*uids, turn.element_uid])
    answer = client.get(f"/review/{demo.name}/turns/{turn.pk}/elements")
    assert answer.status_code == 200
    assert {element["uid"] for element in answer.json()["elements"]} >= set(uids[:200])
    assert 0 < read[0] <= (depth + 1) * 1_000, read[0]  # a bounded part of each element, not its whole subtree

    assert post_edit(client, demo, op="retarget", turn=turn.pk, element="d0").status_code == 200
    assert TurnCuration.objects.get(turn=turn).element["xpath"] == "/html/body/div"


def test_a_chosen_target_is_masked_as_ingest_masks_a_recorded_one(client, typing):
    """A page kept as a release had it (secret-named field values, token parameters): the element chosen from it is
    stored with the masking ingest applies to every recorded element (annotation/lib/redact.py), its HTML too."""
    demo, turn = typing
    field = turn.element_uid
    page = (
        f'<body><input data-webtasks-id="{field}"><input data-webtasks-id="k1" name="api_key" value="sk-live-123">'
        '<a data-webtasks-id="l1" href="https://x.test/cb?access_token=abc123">Go</a></body>'
    )
    with_page(turn, page, [field, "k1", "l1"])
    for uid in ("k1", "l1"):
        assert post_edit(client, demo, op="retarget", turn=turn.pk, element=uid).status_code == 200
        element = TurnCuration.objects.get(turn=turn).element
        assert element["attributes"]["data-webtasks-id"] == uid
        assert "sk-live-123" not in json.dumps(element), element
        assert "abc123" not in json.dumps(element), element
    assert (
        TurnCuration.objects.get(turn=turn).element["attributes"]["href"] == "https://x.test/cb?access_token=********"
    )

    huge = post_edit(client, demo, op="retarget", turn=10**20, element="k1")
    assert (huge.status_code, huge.json()["errors"][0]["field"]) == (404, "turn")


@pytest.mark.parametrize(("intent", "argument"), [("paste", "pasted"), ("copy", "selected")])
def test_a_pasted_or_copied_text_is_not_moved_onto_a_password_field(client, typing, intent, argument):
    """Ingest masks a ``pasted`` or ``selected`` text on a password field as it masks a typed one: a retarget
    cannot put one there in clear (they are not editable, so it stays refused)."""
    demo, _ = typing
    turn = next(t for t in Turn.objects.filter(demonstration=demo, intent=intent) if t.element_uid)
    assert turn.arguments[argument]
    field = turn.element_uid
    with_page(
        turn,
        f'<body><p data-webtasks-id="{field}">x</p><input data-webtasks-id="pw" type="password"></body>',
        [field, "pw"],
    )
    refused = post_edit(client, demo, op="retarget", turn=turn.pk, element="pw")
    assert refused.status_code == 400, refused.content
    assert refused.json()["errors"][0]["field"] == "element"
    assert not TurnCuration.objects.filter(turn=turn).exclude(element=None).exists()


def test_a_typed_text_is_not_moved_onto_a_field_the_recorder_keeps_private(client, typing):
    """The recorder masks what is typed into a card number or one-time code field and anything marked
    ``data-private`` as into a password one (recorder_extension/lib/privacy.js): review keeps such a field's text
    masked too, whether the field was recorded or chosen."""
    demo, turn = typing
    field = turn.element_uid
    page = (
        f'<body><input data-webtasks-id="{field}"><input data-webtasks-id="cc" autocomplete="billing cc-number">'
        '<input data-webtasks-id="pv" data-private=""></body>'
    )
    with_page(turn, page, [field, "cc", "pv"])
    for uid in ("cc", "pv"):
        refused = post_edit(client, demo, op="retarget", turn=turn.pk, element=uid)
        assert (refused.status_code, refused.json()["errors"][0]["field"]) == (400, "element"), refused.content
    assert post_edit(client, demo, op="edit_text", turn=turn.pk, text="").status_code == 200
    assert post_edit(client, demo, op="retarget", turn=turn.pk, element="cc").status_code == 200
    typed = post_edit(client, demo, op="edit_text", turn=turn.pk, text="4111 1111 1111 1111")
    assert (typed.status_code, typed.json()["errors"][0]["field"]) == (400, "text"), typed.content
    assert text_now(turn) == ""


@pytest.mark.browser
def test_a_reviewer_removed_while_the_picker_is_open_is_refused(browser, live_server, reviewer, demo):
    """In Chromium: the picker lists the elements; the reviewer's membership is then removed; Enter on an element is
    refused with a message (no edit), and opening the picker again says why it cannot list them."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    from annotation.models import Membership
    from tests.support.browser import use_session
    from tests.support.review_ui import item, keys, open_page, wait_shot_loaded

    use_session(browser, live_server.url, reviewer)
    open_page(browser, live_server, demo)
    try:
        turn = next(
            t for t in Turn.objects.filter(demonstration=demo, intent="click").exclude(page=None) if t.element_uid
        )
        item(browser, turn).click()
        wait_shot_loaded(browser)
        keys(browser, "t")
        options = "#target-list button.target-option:not(.current)"
        WebDriverWait(browser, 20).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, options)) > 1)
        Membership.objects.filter(user=reviewer).delete()
        browser.find_elements(By.CSS_SELECTOR, options)[-1].send_keys(Keys.ENTER)
        message = WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "message").text)
        assert "no recorded demonstration" in message.lower()
        assert not Edit.objects.filter(demonstration=demo).exists()
        browser.switch_to.active_element.send_keys(Keys.ESCAPE)
        keys(browser, "t")
        count = lambda d: d.find_element(By.ID, "target-count").text  # noqa: E731
        WebDriverWait(browser, 20).until(lambda d: count(d).startswith("Could not list the elements"))
    finally:
        browser.get("about:blank")
