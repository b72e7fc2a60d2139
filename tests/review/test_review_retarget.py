"""A browser turn's target re-picked on the review page (op ``retarget``, the picker's ``…/turns/<id>/elements``):
two reviewers retarget several turns of a recorded demo, undo and redo each other's choices, and read the result
on the page and in its history; the quality checks on the chosen target; and the refusals (chat, elementless and
deleted turns, elements not on the page, annotators, researchers, outsiders, decided demos)."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Demonstration, DemoStatus, Edit, Project, Role, Turn, TurnCuration
from tests.support.actors import make_user, token_client
from tests.support.corpus import ingest_corpus
from tests.support.review_data import acting, post_edit, uid_missing_demo
from tests.support.weblinx_release import download, start_export


def listed(client, demo, turn):
    return client.get(f"/review/{demo.name}/turns/{turn.pk}/elements")


def page_row(client, demo, turn) -> dict:
    page = client.get(f"/review/{demo.name}/")
    assert page.status_code == 200
    return next(row for row in page.context["turns"] if row["id"] == turn.pk)


def history(client, demo) -> list:
    return [entry["kind"] for entry in client.get(f"/review/{demo.name}/").context["history"]]


@pytest.fixture
def recorded(db, media_storage):
    """A recorded synthetic demo of project alpha (pages with 40 elements and their boxes), two reviewers."""
    demo = ingest_corpus(project="alpha", demos=1, turns=24, elements=40, seed=7, status=DemoStatus.RECORDED)[0]
    project = demo.project
    return demo, make_user("ana", demo.project, Role.REVIEWER), make_user("ben", project, Role.REVIEWER)


def another(client, demo, turn) -> dict:
    """An element of the turn's page other than its current target, as the picker lists it."""
    answer = listed(client, demo, turn)
    assert answer.status_code == 200, answer.content
    data = answer.json()
    assert data["current"] == data["recorded"] == turn.element_uid
    assert len(data["elements"]) > 1
    inside = [element for element in data["elements"] if element["tag"] not in ("html", "head", "body")]
    return next(element for element in inside if element["uid"] != data["current"])


def test_two_reviewers_retarget_turns_undo_and_redo_and_the_page_shows_each_target(client, recorded):
    demo, ana, ben = recorded
    first, second, third = acting(demo)[:3]

    client.force_login(ana)
    chosen = another(client, demo, first)
    answer = post_edit(client, demo, op="retarget", turn=first.pk, element=chosen["uid"])
    assert answer.status_code == 200, answer.content
    element = TurnCuration.objects.get(turn=first).element
    assert element["attributes"]["data-webtasks-id"] == chosen["uid"]
    assert element["bbox"] == chosen["box"]
    assert element["tagName"] == chosen["tag"].upper()
    assert element["xpath"].startswith("/html/")
    assert element["outerHTML"].startswith(f"<{chosen['tag']}")
    row = page_row(client, demo, first)
    assert (row["target"], row["retargeted"], row["box"]) == (chosen["uid"], True, chosen["box"])
    assert listed(client, demo, first).json()["current"] == chosen["uid"]
    assert Demonstration.objects.get(pk=demo.pk).status == DemoStatus.IN_REVIEW  # the first edit starts the review

    client.force_login(ben)
    for turn in (second, third):
        assert post_edit(
            client, demo, op="retarget", turn=turn.pk, element=another(client, demo, turn)["uid"]
        ).status_code
    ben_edit = Edit.objects.filter(demonstration=demo, turn=second, kind="retarget").get()
    # Ben undoes Ana's choice: the recorded element again; Ana redoes it.
    anas = Edit.objects.get(demonstration=demo, turn=first, kind="retarget")
    undo = post_edit(client, demo, op="undo", edit=anas.pk)
    assert undo.status_code == 200, undo.content
    assert TurnCuration.objects.get(turn=first).element is None
    assert page_row(client, demo, first)["target"] == first.element_uid
    client.force_login(ana)
    redo = post_edit(client, demo, op="undo", edit=undo.json()["id"])
    assert redo.status_code == 200, redo.content
    assert TurnCuration.objects.get(turn=first).element["attributes"]["data-webtasks-id"] == chosen["uid"]
    assert TurnCuration.objects.get(turn=second).element is not None
    assert ben_edit.author == ben

    words = history(client, demo)
    change = f"Changed the target of turn {first.seq} from "
    recorded, now = f"the recorded element #{first.element_uid}", f"{chosen['tag']} #{chosen['uid']}"
    assert words[0] == f"{change}{recorded} to {now} (undid #{undo.json()['id']})"
    assert words[1] == f"{change}{now} to {recorded} (undid #{anas.pk})"
    assert sum(word.startswith("Changed the target") for word in words) == 5

    # Choosing the recorded element again puts the turn back (no curated element), undoable as any edit.
    back = post_edit(client, demo, op="retarget", turn=second.pk, element=second.element_uid)
    assert back.status_code == 200, back.content
    assert TurnCuration.objects.get(turn=second).element is None
    assert post_edit(client, demo, op="undo", edit=back.json()["id"]).status_code == 200
    assert TurnCuration.objects.get(turn=second).element is not None


def test_retargets_refused_with_the_field_named(client, recorded):
    demo, ana, _ = recorded
    click = acting(demo)[0]
    client.force_login(ana)
    chat = Turn.objects.filter(demonstration=demo, type="chat").first()
    elementless = next(t for t in Turn.objects.filter(demonstration=demo, type="browser") if not t.element_uid)
    for turn, what in ((chat, "chat"), (elementless, "no element")):
        refused = post_edit(client, demo, op="retarget", turn=turn.pk, element=click.element_uid)
        assert refused.status_code == 400, what
        assert refused.json()["errors"][0]["field"] == "turn", what
        assert listed(client, demo, turn).status_code == 400, what
    for bad in ("no-such-element", "", 7, None, ["a"]):
        refused = post_edit(client, demo, op="retarget", turn=click.pk, element=bad)
        assert refused.status_code == 400, bad
        assert refused.json()["errors"] == [{"field": "element", "message": refused.json()["errors"][0]["message"]}]
    missing = post_edit(client, demo, op="retarget", turn=10**9, element=click.element_uid)
    assert (missing.status_code, missing.json()["errors"][0]["field"]) == (404, "turn")

    assert post_edit(client, demo, op="delete", turn=click.pk).status_code == 200
    deleted = post_edit(
        client, demo, op="retarget", turn=click.pk, element=another(client, demo, acting(demo)[1])["uid"]
    )
    assert deleted.status_code == 400
    assert deleted.json()["errors"][0] == {"field": "turn", "message": "the turn is deleted: restore it first"}
    assert not TurnCuration.objects.filter(turn=click).exclude(element=None).exists()

    # Who: the navigator (an annotator) and a researcher may not; another project's reviewer learns nothing.
    target = another(client, demo, acting(demo)[1])["uid"]
    project = demo.project
    beta = Project.objects.create(name="beta", title="Beta")
    for user, status in (
        (demo.navigator, 403),
        (make_user("rita", project, Role.RESEARCHER), 403),
        (make_user("otto", beta, Role.REVIEWER), 404),
    ):
        client.force_login(user)
        assert post_edit(client, demo, op="retarget", turn=acting(demo)[1].pk, element=target).status_code == status
        assert listed(client, demo, acting(demo)[1]).status_code == status
    assert not Edit.objects.filter(demonstration=demo, kind="retarget").exists()

    # A decided demo is read-only until reopened.
    Demonstration.objects.filter(pk=demo.pk).update(status=DemoStatus.VALIDATED)
    client.force_login(ana)
    assert post_edit(client, demo, op="retarget", turn=acting(demo)[1].pk, element=target).status_code == 409


# --- The quality checks read the curated target ------------------------------------------------------------------


def uid_missing_everywhere(client, researcher, demo, turn, tmp_path) -> dict:
    """How each surface shows ``turn``'s uid_missing: the review page's row, the navigator's record, the export's
    quality.json; the list's issue count of the demo; the queries of the review page."""
    client.get(f"/review/{demo.name}/")  # the first view may compute the checks
    with CaptureQueriesContext(connection) as queries:
        page = client.get(f"/review/{demo.name}/")
    row = next(row for row in page.context["turns"] if row["id"] == turn.pk)
    listed = client.get(f"/review/live?names={demo.name}").json()["demos"][demo.name]["issues"]
    records = researcher.get("/api/quality/demos/alpha/records/").json()["records"]
    record = next(r for r in records if r["user"] == demo.navigator.username)
    exported = download(researcher, start_export(researcher, "alpha"), tmp_path)
    report = json.loads((exported / "quality.json").read_text())
    (item,) = [item for item in report["items"] if item["id"] == demo.name]
    return {
        "page": any(issue.startswith("element uid missing") for issue in row["issues"]),
        "list": listed,
        "record": record["checks_failing"].get("uid_missing", 0),
        "export": item["checks"]["uid_missing"],
        "page_queries": len(queries),
    }


def in_view(box, turn) -> bool:
    return box["x"] >= 0 and box["x"] + box["width"] <= turn.viewport_width and 0 <= box["y"] < turn.viewport_height


def test_the_quality_checks_read_the_target_a_reviewer_picked(client, db, media_storage, tmp_path):
    """A turn whose recorded uid is not on its page fails uid_missing on every surface; retargeted to an element of
    its page it passes; the retarget undone, it fails again."""
    demo, turn = uid_missing_demo()
    researcher = token_client(make_user("res", demo.project, Role.RESEARCHER))
    client.force_login(make_user("ana", demo.project, Role.REVIEWER))
    before = uid_missing_everywhere(client, researcher, demo, turn, tmp_path / "a")
    assert (before["page"], before["record"], before["export"]) == (True, 1, 1)

    listed_elements = listed(client, demo, turn).json()["elements"]
    chosen = next(e for e in listed_elements if e["tag"] == "a" and in_view(e["box"], turn))  # no box_outside either
    made = post_edit(client, demo, op="retarget", turn=turn.pk, element=chosen["uid"])
    assert made.status_code == 200, made.content
    after = {**before, "page": False, "list": before["list"] - 1, "record": 0, "export": 0}  # as many queries
    assert uid_missing_everywhere(client, researcher, demo, turn, tmp_path / "b") == after

    assert post_edit(client, demo, op="undo", edit=made.json()["id"]).status_code == 200
    assert uid_missing_everywhere(client, researcher, demo, turn, tmp_path / "c") == before
