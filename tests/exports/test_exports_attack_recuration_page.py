"""Attacks on the re-curation page and API (docs/recuration.md) as each role: who may open them, hostile release ids
in the item URL, bad filters and pages, hostile free text shown as text, and what changes.json says of a Mind2Web
task whose action ids are numbers or which a reviewer discarded."""

import io
import json

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.actions.exports import recuration
from annotation.models import Demonstration, ExportJob, Project, Role, Turn
from tests.support.actors import make_user, signed_in, token_client
from tests.support.weblinx_release import review_edit, write_demo, write_json, write_release

HOSTILE = '"><img src=x onerror=alert(1)><script>alert(2)</script> =HYPERLINK("http://evil.example","x") \u202eevil'


@pytest.fixture
def world(db, media_storage, tmp_path):
    """``attack`` with a WebLINX release imported, and ``other`` with one of its own (``alpha`` in both, ``zulu``
    only in ``other``)."""
    project, other = Project.objects.create(name="attack"), Project.objects.create(name="other")
    people = {
        "admin": make_user("admin-x", project, Role.ADMIN),
        "ana": make_user("ana-x", project, Role.REVIEWER),
        "ben": make_user("ben-x", project, Role.REVIEWER),
        "annotator": make_user("ann-x", project, Role.ANNOTATOR),
        "outsider": make_user("otto-x", other, Role.ADMIN),
    }
    release = write_release(tmp_path / "release")
    write_json(release / "splits.json", {"train": ["alpha", "bravo"], "valid": ["charlie"]})
    call_command("import_weblinx", str(release), "--project", "attack", "--user", "admin-x", stdout=io.StringIO())
    theirs = write_release(tmp_path / "theirs")
    write_demo(theirs, "zulu", colour=9)
    call_command("import_weblinx", str(theirs), "--project", "other", "--user", "otto-x", stdout=io.StringIO())
    return project, people


def demo(project, release_id) -> Demonstration:
    return Demonstration.objects.get(project=project, source_id=release_id)


def mark(user, item, kind, turn=None, note=""):
    body = {"kind": kind, "note": note, **({"turn": turn} if turn is not None else {})}
    answer = token_client(user).post(f"/api/review/{item.name}/problems/", body, format="json")
    assert answer.status_code == 201, answer.content


PAGE, API = "/projects/attack/recuration/", "/api/projects/attack/recuration/"


def test_who_may_open_the_page_and_the_api(world):
    project, people = world
    for path in (PAGE, PAGE + "alpha/"):
        assert signed_in(people["annotator"]).get(path).status_code == 403
        assert signed_in(people["outsider"]).get(path).status_code == 404
        anonymous = Client().get(path)
        assert anonymous.status_code == 302
        assert "login" in anonymous["Location"]
    for path in (API, API + "alpha/"):
        assert token_client(people["annotator"]).get(path).status_code == 403
        assert token_client(people["outsider"]).get(path).status_code == 404
        assert Client().get(path).status_code in (401, 403)
    # a role lowered while the page is open: refused on the next request
    ana = signed_in(people["ana"])
    assert ana.get(PAGE).status_code == 200
    project.memberships.filter(user=people["ana"]).update(role=Role.ANNOTATOR)
    assert ana.get(PAGE + "alpha/").status_code == 403
    project.memberships.filter(user=people["ana"]).delete()
    assert ana.get(PAGE).status_code == 404


@pytest.mark.parametrize(
    "release_id",
    [
        "zulu",
        "ALPHA",
        "Alpha",
        "..",
        ".",
        "alpha%2F..",
        "alpha%2Fbravo",
        "%2e%2e",
        "alph%C3%A4",
        "a" * 5000,
        "alpha%00",
        "%00",
        "alpha%20",
        "%E2%80%AEahpla",
        "*",
        "%25",
        "alpha'--",
    ],
)
def test_an_item_url_names_only_this_projects_imports(world, release_id):
    _, people = world
    page = signed_in(people["admin"]).get(PAGE + release_id + "/")
    api = token_client(people["admin"]).get(API + release_id + "/")
    assert page.status_code == 404, (release_id, page.status_code)
    assert api.status_code == 404, (release_id, api.status_code)
    if "%2F" not in release_id:  # a slash: no item URL at all
        assert api.json()["errors"][0]["field"] == "release_id"


def test_a_platform_demo_name_or_a_demo_not_imported_is_not_an_item(world):
    project, people = world
    alpha = demo(project, "alpha")
    admin = token_client(people["admin"])
    assert admin.get(API + alpha.name + "/").status_code == 404
    Demonstration.objects.filter(pk=alpha.pk).update(source={})  # its release facts lost
    assert admin.get(API + "alpha/").status_code == 404
    assert signed_in(people["admin"]).get(PAGE + "alpha/").status_code == 404


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=nope", "status"),
        ("status=CHANGED", "status"),
        ("status=%00", "status"),
        ("problem=nope", "problem"),
        ("problem=%3Cscript%3E", "problem"),
        ("status=changed&status=bogus", "status"),
    ],
)
def test_bad_filters_are_a_400_naming_the_field(world, query, field):
    _, people = world
    api = token_client(people["admin"]).get(f"{API}?{query}")
    assert api.status_code == 400, api.content
    assert api.json()["errors"][0]["field"] == field
    page = signed_in(people["admin"]).get(f"{PAGE}?{query}")
    assert page.status_code == 400
    assert b"<script>" not in page.content


@pytest.mark.parametrize("query", ["page=999999", "page=-1", "page=0", "page=abc", "page=1e9", "page=%00"])
def test_bad_pages_are_never_a_500(world, query):
    _, people = world
    assert signed_in(people["admin"]).get(f"{PAGE}?{query}").status_code == 200
    assert token_client(people["admin"]).get(f"{API}?{query}").status_code == 404
    for size in ("page_size=-1", "page_size=abc", "page_size=0", "page_size=99999999999999999999"):
        assert token_client(people["admin"]).get(f"{API}?{size}").status_code == 200


def test_hostile_free_text_is_shown_as_text_and_answered_as_json(world):
    project, people = world
    charlie = demo(project, "charlie")
    chat = Turn.objects.get(demonstration=charlie, client_id="0")
    review_edit(people["ana"], charlie, op="edit_text", turn=chat.pk, text=HOSTILE)
    review_edit(people["ben"], charlie, op="edit_metadata", fields={"category": HOSTILE, "task_description": HOSTILE})
    body = {"kind": "wrong_target", "note": HOSTILE, "turn": Turn.objects.get(demonstration=charlie, client_id="1").pk}
    assert (
        token_client(people["ana"]).post(f"/api/review/{charlie.name}/problems/", body, format="json").status_code
        == 201
    )
    body = {"kind": "task_infeasible", "note": "javascript:alert(3)"}
    assert (
        token_client(people["ben"]).post(f"/api/review/{charlie.name}/problems/", body, format="json").status_code
        == 201
    )
    for path in (PAGE, PAGE + "charlie/", PAGE + "?problem=wrong_target"):
        html = signed_in(people["ben"]).get(path).content.decode()
        assert "<img src=x" not in html, path
        assert "<script>alert(2)" not in html, path
        assert 'href="javascript:' not in html
    item = signed_in(people["ben"]).get(PAGE + "charlie/").content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in item
    assert "javascript:alert(3)" in item
    answer = token_client(people["admin"]).get(API + "charlie/").json()
    assert answer["task_description"] == HOSTILE
    assert answer["turns"][0]["curated"]["text"] == HOSTILE
    assert {m["note"] for m in answer["changes"]["problems"]} == {HOSTILE, "javascript:alert(3)"}
    assert {c["field"]: c["to"] for c in answer["changes"]["task"]} == {
        "category": HOSTILE,
        "task_description": HOSTILE,
    }


# --- A Mind2Web release ---------------------------------------------------------------------------------------------

M2W_PAGE = (
    '<html backend_node_id="1" bounding_box_rect="0,0,1280,800"><body backend_node_id="2" '
    'bounding_box_rect="0,0,1280,792"><input backend_node_id="3" bounding_box_rect="10,10,200,40" type="search">'
    '</input><button backend_node_id="7" bounding_box_rect="330,10,60,40" type="submit">Go</button></body></html>'
)


def m2w_action(uid: str, op: str, value: str = "") -> dict:
    tag, node = {"TYPE": ("input", "3"), "CLICK": ("button", "7")}[op]
    attributes = json.dumps({"backend_node_id": node, "bounding_box_rect": "10,10,200,40"})
    candidate = {"tag": tag, "backend_node_id": node, "is_original_target": True, "is_top_level_target": True}
    return {
        "action_uid": uid,
        "operation": {"op": op, "original_op": op, "value": value},
        "raw_html": M2W_PAGE,
        "cleaned_html": "<html></html>",
        "pos_candidates": [{**candidate, "attributes": attributes}],
        "neg_candidates": [],
    }


def m2w_task(aid: str, uids: tuple, text="socks") -> dict:
    actions = [m2w_action(uids[0], "TYPE", text), m2w_action(uids[1], "CLICK"), m2w_action(uids[2], "CLICK")]
    reprs = [f"[input]  Search -> TYPE: {text}", "[button]  Go -> CLICK", "[button]  Go -> CLICK"]
    record = {"annotation_id": aid, "website": "shoeshop", "domain": "Shopping", "subdomain": "Shoes"}
    return {**record, "confirmed_task": f"Buy {text}", "action_reprs": reprs, "actions": actions}


@pytest.fixture
def mind2web(db, media_storage, tmp_path):
    """``m2w`` with a Mind2Web release imported: ``digits`` (action ids that are numbers, not in order) and
    ``plain``."""
    project = Project.objects.create(name="m2w")
    people = {"admin": make_user("admin-m", project, Role.ADMIN), "ana": make_user("ana-m", project, Role.REVIEWER)}
    people["ben"] = make_user("ben-m", project, Role.REVIEWER)
    split = tmp_path / "train.json"
    split.write_text(json.dumps([m2w_task("digits", ("2", "0", "1")), m2w_task("plain", ("p-a", "p-b", "p-c"))]))
    call_command("import_mind2web", str(split), "--project", "m2w", "--user", "admin-m", stdout=io.StringIO())
    return project, people


def test_a_mind2web_turn_is_indexed_by_its_place_in_the_task_even_when_its_action_id_is_a_number(mind2web):
    project, people = mind2web
    digits = demo(project, "digits")
    typed = Turn.objects.get(demonstration=digits, client_id="2")  # the task's first action
    review_edit(people["ana"], digits, op="edit_text", turn=typed.pk, text="shoes")
    review_edit(people["ana"], digits, op="delete", turn=Turn.objects.get(demonstration=digits, client_id="1").pk)
    entry = recuration.changes_of(demo(project, "digits"))
    assert sorted((c["index"], c["change"]) for c in entry["turns"]) == [(0, "text"), (2, "deleted")]
    answer = token_client(people["admin"]).get("/api/projects/m2w/recuration/digits/").json()
    assert [row["index"] for row in answer["turns"]] == [0, 1, 2]
    assert answer["turns"][0]["changes"][0]["change"] == "text"
    assert answer["turns"][2]["curated"] is None


def test_a_discarded_mind2web_task_is_dropped_by_whoever_discarded_it(mind2web):
    project, people = mind2web
    plain = demo(project, "plain")
    review_edit(people["ana"], plain, op="edit_metadata", fields={"discarded": True})
    review_edit(people["ben"], plain, op="edit_metadata", fields={"category": "Shoes and boots"})
    entry = recuration.changes_of(demo(project, "plain"))
    assert entry["status"] == "dropped"
    assert entry["by"] == "ana-m"
    listed = token_client(people["admin"]).get("/api/projects/m2w/recuration/?status=dropped").json()
    assert [row["demo"] for row in listed["results"]] == ["plain"]


def test_a_secret_the_import_masked_is_on_neither_side_of_the_item(db, media_storage, tmp_path):
    Project.objects.create(name="masked")
    admin = make_user("admin-s", Project.objects.get(name="masked"), Role.ADMIN)
    root = tmp_path / "release"
    folder = write_demo(root, "secret")
    replay = json.loads((folder / "replay.json").read_text())
    replay["data"][1]["action"]["arguments"]["metadata"]["url"] = "https://shop.example/cart?token=SECRET-TOKEN-123"
    replay["data"][2]["action"]["arguments"]["element"]["attributes"]["type"] = "password"
    replay["data"][2]["action"]["arguments"]["text"] = "hunter2-SECRET-PASSWORD"
    write_json(folder / "replay.json", replay)
    write_json(root / "splits.json", {"train": ["secret"]})
    call_command("import_weblinx", str(root), "--project", "masked", "--user", "admin-s", stdout=io.StringIO())
    item = Demonstration.objects.get(source_id="secret")
    # Clear text on a password field is refused (test_exports_change_value.py); emptying it is an edit.
    review_edit(admin, item, op="edit_text", turn=Turn.objects.get(demonstration=item, client_id="2").pk, text="")
    for answer in (
        signed_in(admin).get("/projects/masked/recuration/secret/"),
        token_client(admin).get("/api/projects/masked/recuration/secret/"),
        signed_in(admin).get("/projects/masked/recuration/"),
        token_client(admin).get("/api/projects/masked/recuration/"),
    ):
        assert answer.status_code == 200
        assert b"SECRET-TOKEN-123" not in answer.content
        assert b"hunter2" not in answer.content
    assert token_client(admin).get("/api/projects/masked/recuration/secret/").json()["changes"]["masked"] is True


def test_the_item_page_reads_the_same_queries_however_many_turns_edits_and_marks(world):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    project, people = world
    charlie = demo(project, "charlie")
    reviewer = token_client(people["ana"])
    for n in range(4):
        pk = Turn.objects.get(demonstration=charlie, client_id=str(n)).pk
        review_edit(people["ana"], charlie, op="set_validity", turn=pk, valid=False)
        for kind in ("wrong_target", "missing_step"):
            body = {"kind": kind, "note": f"n{n}", "turn": pk}
            assert reviewer.post(f"/api/review/{charlie.name}/problems/", body, format="json").status_code == 201
    counts = {}
    for name in ("bravo", "charlie"):
        for path in (PAGE + name + "/", API + name + "/"):
            client = signed_in(people["ben"]) if path.startswith(PAGE) else token_client(people["ben"])
            client.get(path)  # sessions, caches
            with CaptureQueriesContext(connection) as queries:
                assert client.get(path).status_code == 200
            counts[(name, path.startswith(PAGE))] = len(queries)
    assert counts[("bravo", True)] == counts[("charlie", True)]
    assert counts[("bravo", False)] == counts[("charlie", False)]


def undo(user, item, edit_id):
    return review_edit(user, item, op="undo", edit=edit_id)


def test_an_undo_of_a_redo_changes_nothing_and_leaves_a_change_to_whoever_made_it(world):
    project, people = world
    ana, ben = people["ana"], people["ben"]
    charlie, bravo = demo(project, "charlie"), demo(project, "bravo")
    # a task field set, undone, redone, undone again: as the release had it
    made = review_edit(ana, charlie, op="edit_metadata", fields={"category": "Travel"})
    redone = undo(ana, charlie, undo(ana, charlie, made["id"])["id"])
    undo(ana, charlie, redone["id"])
    entry = recuration.changes_of(demo(project, "charlie"))
    assert entry["task"] == []
    assert entry["status"] == "unchanged"
    # ana's text, ben's over it undone, redone and undone again: ana's text stands, as hers
    chat = Turn.objects.get(demonstration=bravo, client_id="0").pk
    review_edit(ana, bravo, op="edit_text", turn=chat, text="ana's")
    over = review_edit(ben, bravo, op="edit_text", turn=chat, text="ben's")
    redone = undo(ben, bravo, undo(ben, bravo, over["id"])["id"])
    undo(ben, bravo, redone["id"])
    [change] = recuration.changes_of(demo(project, "bravo"))["turns"]
    assert (change["to"], change["by"]) == ("ana's", "ana-x")
    answer = token_client(people["admin"]).get(API + "bravo/").json()
    assert answer["turns"][0]["changes"][0]["by"] == "ana-x"


def test_a_mind2web_items_split_is_its_release_split(mind2web, tmp_path):
    project, people = mind2web
    split = tmp_path / "test_website.json"
    split.write_text(json.dumps([m2w_task("elsewhere", ("e-a", "e-b", "e-c"))]))
    call_command("import_mind2web", str(split), "--project", "m2w", "--user", "admin-m", stdout=io.StringIO())
    listed = token_client(people["admin"]).get("/api/projects/m2w/recuration/").json()
    assert {row["demo"]: row["split"] for row in listed["results"]} == {
        "digits": "train",
        "elsewhere": "test_website",
        "plain": "train",
    }
    item = token_client(people["admin"]).get("/api/projects/m2w/recuration/elsewhere/").json()
    assert item["item"]["split"] == "test_website"


def test_the_page_and_api_agree_with_a_mind2web_exports_changes_json(mind2web, tmp_path):
    from tests.support.weblinx_release import EVERY_STATUS, download
    from workers.exports.jobs import run_export

    project, people = mind2web
    ana, ben = people["ana"], people["ben"]
    digits, plain = demo(project, "digits"), demo(project, "plain")
    typed = Turn.objects.get(demonstration=digits, client_id="2").pk
    review_edit(ana, digits, op="edit_text", turn=typed, text="boots")
    moved = review_edit(
        ben, digits, op="move", turn=Turn.objects.get(demonstration=digits, client_id="1").pk, to_index=0
    )
    undo(ben, digits, undo(ben, digits, moved["id"])["id"])
    review_edit(ana, plain, op="edit_metadata", fields={"discarded": True})
    review_edit(ben, plain, op="edit_metadata", fields={"category": "Boots"})
    body = {"kind": "wrong_target", "note": "n", "turn": typed}
    assert token_client(ben).post(f"/api/review/{digits.name}/problems/", body, format="json").status_code == 201
    admin = token_client(people["admin"])
    created = admin.post(
        "/api/exports/", {"project": "m2w", "format": "mind2web", "statuses": EVERY_STATUS}, format="json"
    )
    assert created.status_code == 202, created.content
    run_export(created.json()["id"])
    out = download(admin, ExportJob.objects.get(pk=created.json()["id"]), tmp_path)
    exported = {entry["demo"]: entry for entry in json.loads((out / "changes.json").read_text())["demos"]}
    for release_id, entry in exported.items():
        assert admin.get(f"/api/projects/m2w/recuration/{release_id}/").json()["changes"] == entry
    listed = admin.get("/api/projects/m2w/recuration/").json()
    assert listed["counts"]["status"] == {"unchanged": 0, "changed": 1, "dropped": 1}
    assert exported["plain"]["by"] == "ana-m"
    assert [(c["index"], c["change"], c["by"]) for c in exported["digits"]["turns"]] == [
        (0, "text", "ana-m"),
        (2, "moved", "ben-m"),
    ]


def test_an_item_without_turns_is_shown_without_rows(world):
    """The import skips a demo whose replay has no turn; one whose turns are gone still answers."""
    project, people = world
    bravo = demo(project, "bravo")
    review_edit(people["ana"], bravo, op="edit_metadata", fields={"category": "Travel"})
    Turn.objects.filter(demonstration=bravo).delete()
    page = signed_in(people["admin"]).get(PAGE + "bravo/")
    assert page.status_code == 200
    assert b"The release gave this demo no turn." in page.content
    answer = token_client(people["admin"]).get(API + "bravo/")
    assert answer.status_code == 200
    assert answer.json()["turns"] == []
    assert answer.json()["changes"]["status"] == "changed"
    assert signed_in(people["admin"]).get(PAGE).status_code == 200


def test_three_reviewers_undoing_and_redoing_agree_with_a_weblinx_exports_changes_json(world, tmp_path):
    from annotation.actions.review import do_store_suggestions
    from tests.support.weblinx_release import download, start_export

    project, people = world
    ana, ben, cho = people["ana"], people["ben"], make_user("cho-x", project, Role.REVIEWER)
    alpha, charlie = demo(project, "alpha"), demo(project, "charlie")
    t = {n: Turn.objects.get(demonstration=alpha, client_id=str(n)) for n in range(4)}
    # cho accepts the suggestions, ana undoes it, ben redoes it: ben's screenshot
    do_store_suggestions(alpha, [(t[1], t[2].screenshot_id, "own")])
    accepted = review_edit(cho, alpha, op="accept_suggestions")
    undo(ben, alpha, undo(ana, alpha, accepted["id"])["id"])
    # ana deletes turn 3, ben restores it, cho undoes the restore: ana's deletion
    review_edit(ana, alpha, op="delete", turn=t[3].pk)
    restored = review_edit(ben, alpha, op="restore", turn=t[3].pk)
    undo(cho, alpha, restored["id"])
    # cho marks turn 0 invalid; ana's text on it, ben's over it, undone thrice by cho: ana's text
    review_edit(cho, alpha, op="set_validity", turn=t[0].pk, valid=False)
    review_edit(ana, alpha, op="edit_text", turn=t[0].pk, text="ana's")
    over = review_edit(ben, alpha, op="edit_text", turn=t[0].pk, text="ben's")
    undo(cho, alpha, undo(cho, alpha, undo(cho, alpha, over["id"])["id"])["id"])
    # charlie: a move undone and redone thrice over: unmoved
    moved = review_edit(
        ana, charlie, op="move", turn=Turn.objects.get(demonstration=charlie, client_id="2").pk, to_index=0
    )
    undo(cho, charlie, undo(ben, charlie, undo(ana, charlie, moved["id"])["id"])["id"])

    researcher = make_user("res-x", project, Role.RESEARCHER)
    out = download(token_client(researcher), start_export(token_client(researcher), "attack"), tmp_path)
    exported = {entry["demo"]: entry for entry in json.loads((out / "changes.json").read_text())["demos"]}
    assert sorted((c["index"], c["change"], c["by"]) for c in exported["alpha"]["turns"]) == [
        (0, "invalid", "cho-x"),
        (0, "text", "ana-x"),
        (1, "screenshot", "ben-x"),
        (3, "deleted", "ana-x"),
    ]
    assert exported["charlie"]["status"] == "unchanged"
    client = token_client(researcher)
    for release_id, entry in exported.items():
        assert client.get(f"{API}{release_id}/").json()["changes"] == entry
    listed = client.get(API).json()
    statuses = [entry["status"] for entry in exported.values()]
    assert listed["counts"]["status"] == {key: statuses.count(key) for key in ("unchanged", "changed", "dropped")}
    assert listed["counts"]["status"]["changed"] == 1


def test_counts_follow_the_projects_own_problem_kinds(world):
    from annotation.actions.review import do_set_kinds, kinds_of

    project, people = world
    charlie = demo(project, "charlie")
    turn1 = Turn.objects.get(demonstration=charlie, client_id="1").pk
    body = {"kind": "wrong_target", "note": "", "turn": turn1}
    assert (
        token_client(people["ana"]).post(f"/api/review/{charlie.name}/problems/", body, format="json").status_code
        == 201
    )
    kinds = [
        {"key": "wrong_target", "label": HOSTILE[:60], "level": "turn"},  # renamed
        {"key": "stale_page", "label": "Stale page", "level": "turn"},  # new; the rest removed
    ]
    do_set_kinds(project, kinds)
    assert [k["key"] for k in kinds_of(project)] == ["wrong_target", "stale_page"]
    body = {"kind": "stale_page", "note": "", "turn": turn1}
    assert (
        token_client(people["ben"]).post(f"/api/review/{charlie.name}/problems/", body, format="json").status_code
        == 201
    )
    admin = token_client(people["admin"])
    counts = {k["key"]: (k["label"], k["turn_marks"], k["items"]) for k in admin.get(API).json()["counts"]["problems"]}
    assert counts == {"wrong_target": (HOSTILE[:60].strip(), 1, 1), "stale_page": ("Stale page", 1, 1)}
    assert [row["demo"] for row in admin.get(API + "?problem=stale_page").json()["results"]] == ["charlie"]
    assert admin.get(API + "?problem=missing_step").status_code == 400  # removed: no longer a kind of the project
    page = signed_in(people["ben"]).get(PAGE + "?problem=stale_page")
    assert page.status_code == 200
    assert b"<img src=x" not in page.content
