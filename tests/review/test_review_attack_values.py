"""Attacks on the review page's text and value edits (``edit_text``; issue 40): text PostgreSQL cannot hold (in any
field of any edit, a second review's comment, the list's filters), a clear password on a field only the page says is
one, ``true`` as a turn or edit id."""

import io
import json

import pytest
from django.core.management import call_command

from annotation.actions.review.curation import MAX_EDIT_TEXT_CHARS
from annotation.models import Demonstration, DemoReview, Edit, Project, Role, Turn, TurnCuration
from tests.support.actors import make_user, token_client
from tests.support.mind2web_release import task, write_release


def post(client, demo, **body):
    revision = DemoReview.objects.filter(demonstration=demo).values_list("revision", flat=True).first() or 0
    body = json.dumps({"revision": revision, **body})
    return client.post(f"/review/{demo.name}/edit", body, content_type="application/json")


@pytest.fixture
def imported(alpha, tmp_path, media_storage):
    """The Mind2Web release imported into alpha: t-plain's SELECT (a change turn) and its reviewer."""
    make_user("admin-m", alpha, Role.ADMIN)
    release = write_release(tmp_path / "release")
    call_command("import_mind2web", str(release / "test_task.json"), "--project", "alpha", stdout=io.StringIO())
    demo = Demonstration.objects.get(project=alpha, source_id="t-plain")
    return demo, demo.turns.get(client_id="t-plain-2")


@pytest.mark.django_db
def test_a_nul_in_a_value_or_an_utterance_is_a_400_naming_the_text(client, alpha, imported):
    demo, select = imported
    client.force_login(make_user("ana", alpha, Role.REVIEWER))
    client.raise_request_exception = False
    for turn in (select, demo.turns.get(client_id="t-plain-1")):
        refused = post(client, demo, op="edit_text", turn=turn.pk, text="Sm\x00all")
        assert refused.status_code == 400, refused.content[:200]
        assert refused.json()["errors"] == [{"field": "text", "message": "a NUL character is not text"}]
    assert not TurnCuration.objects.filter(demonstration=demo).exists()
    assert not Edit.objects.filter(demonstration=demo).exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"op": "edit_metadata", "fields": {"refined_task": "Buy\x00socks"}}, "fields.refined_task"),
        ({"op": "edit_metadata", "fields": {"websites": ["shop\x00.example"]}}, "fields.websites[0]"),
        ({"op": "comment", "text": "see\x00this"}, "text"),
        ({"op": "transition", "action": "return", "comment": "redo\x00it"}, "comment"),
    ],
)
@pytest.mark.django_db
def test_a_nul_anywhere_in_an_edit_is_a_400_naming_its_field(client, alpha, imported, body, field):
    demo, _ = imported
    client.force_login(make_user("ana", alpha, Role.REVIEWER))
    client.raise_request_exception = False
    assert post(client, demo, op="transition", action="start_review").status_code == 200
    refused = post(client, demo, **body)
    assert refused.status_code == 400, refused.content[:200]
    assert refused.json()["errors"] == [{"field": field, "message": "a NUL character is not text"}]
    assert Demonstration.objects.get(pk=demo.pk).status == "in_review"
    assert Edit.objects.filter(demonstration=demo).count() == 1


@pytest.mark.django_db
def test_a_clear_password_is_refused_on_a_field_only_the_page_says_is_one(client, alpha, tmp_path, media_storage):
    """The Mind2Web import masks a value typed where the acted element's start tag says ``type=password`` (its
    attributes may not say so); the edit refuses clear text there too, as it does where the attributes say so."""
    make_user("admin-m", alpha, Role.ADMIN)
    record = task("t-typeless", "hunter2-Sesame!")  # typed into the page's input, its candidate giving no type
    for step in record["actions"]:
        step["raw_html"] = step["raw_html"].replace('type="search"', 'type="password"')
    (tmp_path / "train.json").write_text(json.dumps([record]), encoding="utf-8")
    call_command("import_mind2web", str(tmp_path / "train.json"), "--project", "alpha", stdout=io.StringIO())
    demo = Demonstration.objects.get(source_id="t-typeless")
    turn = demo.turns.get(client_id="t-typeless-1")
    assert turn.arguments["text"] == "********"
    assert "type" not in turn.arguments["element"]["attributes"]
    client.force_login(make_user("ana", alpha, Role.REVIEWER))
    refused = post(client, demo, op="edit_text", turn=turn.pk, text="correct-horse")
    assert refused.status_code == 400, refused.content
    assert refused.json()["errors"] == [{"field": "text", "message": "a password field: not editable"}]
    assert b"correct-horse" not in refused.content
    assert not TurnCuration.objects.filter(turn=turn).exists()
    assert post(client, demo, op="edit_text", turn=turn.pk, text="").status_code == 200


@pytest.mark.django_db
def test_true_is_no_turn_or_edit_id(client, alpha, imported):
    """JSON ``true`` is not the id 1: ``{"turn": true}`` edited turn 1 and ``{"edit": true}`` undid edit 1."""
    demo, select = imported
    Turn.objects.filter(pk=1).update(id=10**9)  # as on a fresh database: this demo's turn has id 1
    Turn.objects.filter(pk=select.pk).update(id=1)
    client.force_login(make_user("ana", alpha, Role.REVIEWER))
    refused = post(client, demo, op="edit_text", turn=True, text="Small")
    assert refused.status_code == 404, refused.content
    assert refused.json()["errors"] == [{"field": "turn", "message": "not found"}]
    assert not TurnCuration.objects.exists()
    made = post(client, demo, op="edit_text", turn=1, text="Small").json()["id"]
    Edit.objects.filter(pk=1).exclude(pk=made).update(id=10**9)
    Edit.objects.filter(pk=made).update(id=1)
    refused = post(client, demo, op="undo", edit=True)
    assert refused.status_code == 404, refused.content
    assert TurnCuration.objects.get(turn_id=1).text == "Small"


@pytest.mark.django_db
def test_a_nul_in_a_second_reviews_comment_or_a_list_filter_is_a_400(client, alpha, imported):
    demo, _ = imported
    Project.objects.filter(pk=alpha.pk).update(second_review_percent=100)
    ana, ben = make_user("ana", alpha, Role.REVIEWER), make_user("ben", alpha, Role.REVIEWER)
    client.force_login(ana)
    assert post(client, demo, op="transition", action="validate").status_code == 200
    second = token_client(ben)
    second.raise_request_exception = False
    url = f"/api/quality/second-reviews/{demo.name}/"
    refused = second.post(url, {"decision": "accept", "comment": "fine\x00"}, format="json")
    assert refused.status_code == 400, refused.content[:200]
    assert refused.json()["errors"] == [{"field": "comment", "message": "a NUL character"}]
    assert second.post(url, {"decision": "accept", "comment": "fine"}, format="json").status_code == 200

    client.raise_request_exception = False
    for query in ("q=%00", "status=validated%00", "website=a%00"):
        listed = client.get(f"/review/?{query}")
        assert listed.status_code == 400, (query, listed.status_code)
        assert b"NUL" in listed.content


@pytest.mark.django_db
def test_an_edited_text_or_value_past_the_limit_is_a_400_and_one_at_it_is_kept(client, alpha, imported):
    demo, select = imported
    client.force_login(make_user("ana", alpha, Role.REVIEWER))
    utterance = demo.turns.get(client_id="t-plain-1")
    for turn in (select, utterance):
        refused = post(client, demo, op="edit_text", turn=turn.pk, text="x" * (MAX_EDIT_TEXT_CHARS + 1))
        assert refused.status_code == 400, refused.content[:200]
        assert refused.json()["errors"] == [{"field": "text", "message": "at most 100,000 characters"}]
    assert not Edit.objects.filter(demonstration=demo).exists()
    kept = post(client, demo, op="edit_text", turn=select.pk, text="y" * MAX_EDIT_TEXT_CHARS)
    assert kept.status_code == 200, kept.content[:200]
    assert TurnCuration.objects.get(turn=select).text == "y" * MAX_EDIT_TEXT_CHARS
