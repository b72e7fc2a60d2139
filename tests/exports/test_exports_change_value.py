"""A change turn's value (a Mind2Web SELECT: the option chosen in a <select>) edited on the review page: on an imported
Mind2Web task, undone and redone by a second reviewer, in the Mind2Web export (``operation.value``, the repr) and its
``changes.json``; on a recorded demo, in the WebLINX export as the official ``weblinx`` package loads it; a click
turn, a password field, a secret URL parameter and an annotator refused."""

import io
import json

import pytest
import weblinx
from django.core.management import call_command

from annotation.lib.redact import MASK
from annotation.models import Demonstration, DemoReview, DemoStatus, Mind2WebStep, Role, Turn, TurnCuration
from tests.support.actors import make_user
from tests.support.corpus import ingest_corpus
from tests.support.mind2web_release import edit, mind2web_export, write_release
from tests.support.weblinx_release import download, start_export
from workers.exports.mind2web_steps import process_demo

VALUE_CHANGE = {"index": 1, "change": "value", "from": "Medium", "to": "Small"}


def post(client, demo, **body):
    revision = DemoReview.objects.filter(demonstration=demo).values_list("revision", flat=True).first() or 0
    body = json.dumps({"revision": revision, **body})
    return client.post(f"/review/{demo.name}/edit", body, content_type="application/json")


def plain_task(folder) -> dict:
    return next(r for r in json.loads((folder / "test_task.json").read_text()) if r["annotation_id"] == "t-plain")


def page_row(client, demo, turn) -> dict:
    """The turn as the review page hands it to its script."""
    page = client.get(f"/review/{demo.name}/")
    assert page.status_code == 200
    return next(row for row in page.context["turns"] if row["id"] == turn.pk)


@pytest.fixture
def imported(alpha, tmp_path, media_storage):
    """The Mind2Web release imported into alpha; t-plain's SELECT (chose "Medium") as a change turn."""
    make_user("admin-m", alpha, Role.ADMIN)  # the importer
    release = write_release(tmp_path / "release")
    call_command("import_mind2web", str(release / "test_task.json"), "--project", "alpha", stdout=io.StringIO())
    demo = Demonstration.objects.get(project=alpha, source_id="t-plain")
    return demo, demo.turns.get(client_id="t-plain-2")


@pytest.mark.django_db
def test_a_select_value_edited_undone_and_redone_reaches_the_mind2web_export_and_changes(
    client, api_for, alpha, imported, tmp_path
):
    demo, select = imported
    assert (select.intent, select.arguments["value"]) == ("change", "Medium")
    ana, ben = make_user("ana", alpha, Role.REVIEWER), make_user("ben", alpha, Role.REVIEWER)
    researcher = api_for(make_user("researcher", alpha, Role.RESEARCHER))

    client.force_login(ana)
    assert page_row(client, demo, select)["text_editable"] is True  # the page opens its text editor on the turn
    edit(client, demo, 0, op="edit_text", turn=select.pk, text="Small")
    assert TurnCuration.objects.get(turn=select).text == "Small"

    out = mind2web_export(researcher, tmp_path, "edited")
    step = plain_task(out)["actions"][1]
    assert step["operation"] == {"op": "SELECT", "original_op": "SELECT", "value": "Small"}
    assert plain_task(out)["action_reprs"][1].endswith("-> SELECT: Small")
    changes = {e["demo"]: e for e in json.loads((out / "changes.json").read_text())["demos"]}
    assert changes["t-plain"]["turns"] == [
        {"index": 1, "change": "value", "from": "Medium", "to": "Small", "by": "ana"}
    ]

    # Ben undoes it (the release's value again: nothing changed), then redoes it (the change is his).
    client.force_login(ben)
    made = Demonstration.objects.get(pk=demo.pk).edits.get(kind="edit_text")
    undo = post(client, demo, op="undo", edit=made.pk)
    assert undo.status_code == 200, undo.content
    entry = researcher.get("/api/projects/alpha/recuration/t-plain/").json()
    assert entry["changes"]["turns"] == []
    undone = plain_task(mind2web_export(researcher, tmp_path, "undone"))  # unchanged: the release's own task
    assert undone["actions"][1]["operation"]["value"] == "Medium"
    redo = post(client, demo, op="undo", edit=undo.json()["id"])
    assert redo.status_code == 200, redo.content
    entry = researcher.get("/api/projects/alpha/recuration/t-plain/").json()
    assert entry["changes"]["turns"] == [{**VALUE_CHANGE, "by": "ben"}]
    row = next(r for r in entry["turns"] if r["index"] == 1)
    assert (row["original"]["text"], row["curated"]["text"]) == ("Medium", "Small")
    listed = researcher.get("/api/projects/alpha/recuration/").json()
    assert listed["counts"]["changes"]["value"] == 1
    out = mind2web_export(researcher, tmp_path, "redone")
    assert plain_task(out)["actions"][1]["operation"]["value"] == "Small"
    assert json.loads((out / "changes.json").read_text())["demos"][0]["turns"][0]["by"] == "ben"

    # Another value after the steps were stored: the stored step ("Small") no longer matches its key, so is not used.
    process_demo(Demonstration.objects.get(pk=demo.pk))  # as the worker stores them
    assert Mind2WebStep.objects.filter(demonstration=demo, value="Small").exists()
    assert post(client, demo, op="edit_text", turn=select.pk, text="XL").status_code == 200
    out = mind2web_export(researcher, tmp_path, "again")
    assert plain_task(out)["actions"][1]["operation"]["value"] == "XL"
    assert plain_task(out)["action_reprs"][1].endswith("-> SELECT: XL")
    page = client.get("/projects/alpha/recuration/t-plain/")
    assert page.status_code == 200
    assert b'data-change="value">value' in page.content
    assert b"Values edited" in client.get("/projects/alpha/recuration/").content


@pytest.mark.django_db
def test_a_click_a_password_field_a_secret_and_an_annotator_are_refused(client, alpha, imported):
    demo, select = imported
    click = demo.turns.get(client_id="t-plain-3")
    client.force_login(make_user("ana", alpha, Role.REVIEWER))
    refused = post(client, demo, op="edit_text", turn=click.pk, text="Small")
    assert refused.status_code == 400
    assert refused.json()["errors"] == [{"field": "text", "message": "chat, textInput or change only"}]

    secret = post(client, demo, op="edit_text", turn=select.pk, text="https://x.example/?token=abc")
    assert secret.status_code == 400
    assert secret.json()["errors"][0]["field"] == "text"

    # A change turn on a password field: nothing in clear (ingest would have masked it), the mask is fine.
    arguments = {**select.arguments, "element": {"attributes": {"type": "password"}}}
    Turn.objects.filter(pk=select.pk).update(arguments=arguments)
    refused = post(client, demo, op="edit_text", turn=select.pk, text="hunter2")
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "text"
    assert post(client, demo, op="edit_text", turn=select.pk, text=MASK).status_code == 200
    assert not TurnCuration.objects.filter(turn=select, text="hunter2").exists()

    client.force_login(make_user("annie", alpha, Role.ANNOTATOR))
    assert post(client, demo, op="edit_text", turn=select.pk, text="Small").status_code == 404
    assert TurnCuration.objects.get(turn=select).text == MASK


@pytest.mark.django_db
def test_a_recorded_change_turn_edited_exports_its_value_to_weblinx(client, api_for, media_storage, tmp_path):
    demo = ingest_corpus(project="alpha", demos=1, turns=24, elements=40, seed=7, status=DemoStatus.RECORDED)[0]
    change = Turn.objects.filter(demonstration=demo, intent="change").order_by("seq").first()
    assert change is not None
    assert "value" in change.arguments
    project = demo.project
    client.force_login(make_user("ana", project, Role.REVIEWER))
    row = page_row(client, demo, change)
    assert row["text_editable"]
    assert row["text"] == change.arguments["value"]
    edit(client, demo, 0, op="edit_text", turn=change.pk, text="Curated «option» 🚀")
    assert page_row(client, demo, change)["text"] == "Curated «option» 🚀"

    researcher = api_for(make_user("researcher", project, Role.RESEARCHER))
    folder = download(researcher, start_export(researcher, project.name), tmp_path)
    loaded = weblinx.Demonstration(demo.name, base_dir=str(folder / "demonstrations"))
    values = [turn.args.get("value") for turn in weblinx.Replay.from_demonstration(loaded) if turn.intent == "change"]
    assert values[0] == "Curated «option» 🚀"
    assert change.arguments["value"] not in values[:1]


@pytest.mark.django_db
def test_the_history_says_a_value_was_changed_and_a_text_edited(client, alpha, imported):
    demo, select = imported
    typed = demo.turns.get(client_id="t-plain-1")  # a TYPE: its text, not a value
    ana, ben = make_user("ana", alpha, Role.REVIEWER), make_user("ben", alpha, Role.REVIEWER)
    value_words = f"Changed the value of turn {select.seq} to “Small”"
    client.force_login(ana)
    edit(client, demo, 0, op="edit_text", turn=select.pk, text="Small")
    client.force_login(ben)
    state = client.get(f"/review/{demo.name}/revision").json()  # what an open page polls
    assert (state["last_edit"]["kind"], state["last_edit"]["author"]) == (value_words, "ana")
    stale = post(client, demo, op="edit_text", turn=typed.pk, text="wool socks", revision=0)
    assert stale.status_code == 409
    assert "changed by ana (edit value at" in stale.json()["detail"]
    edit(client, demo, 1, op="edit_text", turn=typed.pk, text="wool socks")
    made = demo.edits.get(kind="edit_text", turn=select)
    assert post(client, demo, op="undo", edit=made.pk).status_code == 200

    for person in (ana, ben):
        client.force_login(person)
        page = client.get(f"/review/{demo.name}/")
        kinds = [row["kind"] for row in page.context["history"]]
        assert kinds == [
            f"Changed the value of turn {select.seq} to “Medium” (undid #{made.pk})",
            f"Edited the text of turn {typed.seq}",
            value_words,
        ]
        assert value_words in page.content.decode()
        assert page.context["history"][0]["button"]["label"] == f"Redo edit #{made.pk} (edit value)"
        assert page.context["history"][1]["button"]["label"].endswith("(edit text)")
    assert "Edited the text" not in client.get(f"/review/{demo.name}/revision").json()["last_edit"]["kind"]
