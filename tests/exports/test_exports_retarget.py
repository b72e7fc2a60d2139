"""Targets re-picked in review on imported releases: two reviewers retarget turns of a WebLINX release (one choice
undone), and of a Mind2Web release; the exports carry the chosen elements (WebLINX ``action.arguments.element`` as
the official ``weblinx`` package loads it; Mind2Web ``pos_candidates`` and the step, a stored step not used once its
target changed), ``changes.json`` and the re-curation API name exactly those changes with their authors, and the
items nobody changed are the release's own bytes."""

import io
import json

import pytest
import weblinx
from django.core.management import call_command

from annotation.models import Demonstration, Mind2WebStep, Project, Role, Turn
from tests.support.actors import make_user, signed_in, token_client
from tests.support.mind2web_release import mind2web_export
from tests.support.mind2web_release import write_release as write_mind2web
from tests.support.weblinx_release import BOX, UID, download, review_edit, start_export, write_json, write_release
from workers.exports.mind2web_steps import process_demo

LINK = {"x": 300, "y": 20, "width": 80, "height": 24, "top": 20, "right": 380, "bottom": 44, "left": 300}
FIELD = {"x": 10, "y": 80, "width": 400, "height": 32, "top": 80, "right": 410, "bottom": 112, "left": 10}
PAGE = (
    f'<html><body><button data-webtasks-id="{UID}">Go</button><a data-webtasks-id="l1" href="/deals">Deals</a>'
    '<input data-webtasks-id="i1" name="q" placeholder="Search"><input data-webtasks-id="p1" type="password">'
    "</body></html>"
)


def rich_weblinx_release(root):
    """The test release, each browser turn's page with a link and a field beside the button it acted on."""
    release = write_release(root)
    for name in ("alpha", "bravo", "charlie", "delta"):
        folder = release / "demonstrations" / name
        for n in (1, 2):
            (folder / "pages" / f"page-{n}-0.html").write_text(PAGE, encoding="utf-8")
            write_json(folder / "bboxes" / f"bboxes-{n}.json", {UID: BOX, "l1": LINK, "i1": FIELD, "p1": FIELD})
    return release


def folder_bytes(folder) -> dict:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def turn(demo, client_id) -> Turn:
    return Turn.objects.get(demonstration=demo, client_id=client_id)


def changes(out) -> dict:
    return {entry["demo"]: entry for entry in json.loads((out / "changes.json").read_text())["demos"]}


def refused(user, demo, **body) -> str:
    """A review edit refused with a 400: the field it names."""
    answer = signed_in(user).post(
        f"/review/{demo.name}/edit", json.dumps({"revision": 0, **body}), content_type="application/json"
    )
    assert answer.status_code == 400, answer.content
    return answer.json()["errors"][0]["field"]


def target(index, was, now, by) -> dict:
    return {"index": index, "change": "target", "from": was, "to": now, "by": by}


@pytest.mark.django_db
def test_weblinx_targets_chosen_by_two_reviewers_are_exported_and_named_in_changes(media_storage, tmp_path):
    project = Project.objects.create(name="recurate", title="Re-curation")
    make_user("admin-c", project, Role.ADMIN)
    researcher = token_client(make_user("researcher-c", project, Role.RESEARCHER))
    ana, ben = make_user("ana", project, Role.REVIEWER), make_user("ben", project, Role.REVIEWER)
    release = rich_weblinx_release(tmp_path / "release")
    call_command("import_weblinx", str(release), "--project", "recurate", "--user", "admin-c", stdout=io.StringIO())
    demo = {d.source_id: d for d in Demonstration.objects.filter(project=project)}

    review_edit(ana, demo["charlie"], op="retarget", turn=turn(demo["charlie"], "1").pk, element="l1")
    review_edit(ben, demo["charlie"], op="retarget", turn=turn(demo["charlie"], "2").pk, element="i1")
    review_edit(ben, demo["bravo"], op="retarget", turn=turn(demo["bravo"], "1").pk, element="i1")
    # A typed text moves onto a password field only once emptied; then nothing in clear can be typed there.
    typed = turn(demo["bravo"], "2")
    assert refused(ben, demo["bravo"], op="retarget", turn=typed.pk, element="p1") == "element"
    review_edit(ben, demo["bravo"], op="edit_text", turn=typed.pk, text="")
    review_edit(ben, demo["bravo"], op="retarget", turn=typed.pk, element="p1")
    assert refused(ben, demo["bravo"], op="edit_text", turn=typed.pk, text="hunter2") == "text"
    made = review_edit(ana, demo["alpha"], op="retarget", turn=turn(demo["alpha"], "1").pk, element="l1")
    review_edit(ben, demo["alpha"], op="undo", edit=made["id"])  # alpha is the release's again
    assert refused(ana, demo["delta"], op="retarget", turn=turn(demo["delta"], "0").pk, element="l1") == "turn"

    out = download(researcher, start_export(researcher, "recurate"), tmp_path)
    loaded = weblinx.Demonstration("charlie", base_dir=str(out / "demonstrations"))
    elements = [t.element for t in weblinx.Replay.from_demonstration(loaded) if t.type == "browser"]
    assert [e["attributes"]["data-webtasks-id"] for e in elements] == ["l1", "i1"]
    assert [(e["tagName"], e["xpath"], e["bbox"]) for e in elements] == [
        ("A", "/html/body/a", LINK),
        ("INPUT", "/html/body/input[1]", FIELD),  # the first of two inputs
    ]
    assert elements[0]["attributes"]["href"] == "/deals"
    assert elements[0]["textContent"] == "Deals"

    found = changes(out)
    assert found["charlie"]["turns"] == [target(1, UID, "l1", "ana"), target(2, UID, "i1", "ben")]
    emptied = {"index": 2, "change": "text", "from": "Find the cheapest flight", "to": "", "by": "ben"}
    assert found["bravo"]["turns"] == [target(1, UID, "i1", "ben"), emptied, target(2, UID, "p1", "ben")]
    assert (found["alpha"]["status"], found["alpha"]["turns"]) == ("unchanged", [])
    for name in ("alpha", "delta"):  # nobody changed them: the release's own files
        assert folder_bytes(out / "demonstrations" / name) == folder_bytes(release / "demonstrations" / name)

    item = researcher.get("/api/projects/recurate/recuration/charlie/").json()
    assert item["changes"] == found["charlie"]
    row = next(r for r in item["turns"] if r["index"] == 1)
    assert (row["original"]["target"], row["curated"]["target"]) == (UID, "l1")
    listed = researcher.get("/api/projects/recurate/recuration/").json()
    assert listed["counts"]["changes"]["target"] == 4
    page = signed_in(ana).get("/projects/recurate/recuration/charlie/")
    assert page.status_code == 200
    assert b'data-change="target">target' in page.content
    assert b"Targets changed" in signed_in(ana).get("/projects/recurate/recuration/").content


@pytest.mark.django_db
def test_mind2web_targets_chosen_regenerate_their_tasks_and_changes(client, api_for, alpha, media_storage, tmp_path):
    make_user("admin-m", alpha, Role.ADMIN)
    release = write_mind2web(tmp_path / "release")
    files = [str(release / "test_task.json"), str(release / "train.json")]
    call_command("import_mind2web", *files, "--project", "alpha", stdout=io.StringIO())
    demo = {d.source_id: d for d in Demonstration.objects.filter(project=alpha)}
    ana, ben = make_user("ana", alpha, Role.REVIEWER), make_user("ben", alpha, Role.REVIEWER)
    researcher = api_for(make_user("researcher", alpha, Role.RESEARCHER))
    process_demo(demo["t-plain"])  # its steps stored, as the worker stores them
    stored = set(Mind2WebStep.objects.filter(demonstration=demo["t-plain"]).values_list("key", flat=True))

    click = turn(demo["t-plain"], "t-plain-3")
    for bad in ("5", "99"):  # an option without a box; no such element
        client.force_login(ana)
        refused = client.post(
            f"/review/{demo['t-plain'].name}/edit",
            json.dumps({"revision": 0, "op": "retarget", "turn": click.pk, "element": bad}),
            content_type="application/json",
        )
        assert (refused.status_code, refused.json()["errors"][0]["field"]) == (400, "element")
    review_edit(ana, demo["t-plain"], op="retarget", turn=click.pk, element="3")
    review_edit(ben, demo["t-missing"], op="retarget", turn=turn(demo["t-missing"], "t-missing-1").pk, element="7")

    out = mind2web_export(researcher, tmp_path, "retargeted")
    plain = json.loads((out / "test_task.json").read_text())[0]
    step = plain["actions"][2]
    assert [c["backend_node_id"] for c in step["pos_candidates"]] == ["3"]
    assert "3" not in [c["backend_node_id"] for c in step["neg_candidates"]]
    assert step["operation"]["op"] == "CLICK"
    assert plain["action_reprs"][2].startswith("[input]")
    assert plain["actions"][0]["pos_candidates"][0]["backend_node_id"] == "3"  # the untouched step as it was
    new_keys = set(Mind2WebStep.objects.filter(demonstration=demo["t-plain"]).values_list("key", flat=True))
    assert new_keys == stored  # the export did not store; the retargeted step's key is another one
    train = (out / "train.json").read_text(encoding="utf-8")
    records = {r["annotation_id"]: r for r in json.loads(train)}
    assert records["t-missing"]["actions"][0]["pos_candidates"][0]["backend_node_id"] == "7"
    original = json.loads((release / "train.json").read_text(encoding="utf-8"))[0]
    assert records["t-odd"] == original
    assert json.dumps(original, ensure_ascii=False, indent=1).replace("\n", "\n ") in train  # its own bytes

    found = changes(out)
    assert found["t-plain"]["turns"] == [target(2, "7", "3", "ana")]
    assert found["t-missing"]["turns"] == [target(0, "3", "7", "ben")]
    assert (found["t-odd"]["status"], found["t-odd"]["turns"]) == ("unchanged", [])
    item = researcher.get("/api/projects/alpha/recuration/t-plain/").json()
    assert item["changes"]["turns"] == found["t-plain"]["turns"]
