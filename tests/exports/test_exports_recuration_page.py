"""The re-curation page and API (docs/recuration.md): a WebLINX release imported, curated by three reviewers (edits,
"accept all suggestions", a rejection, a release rejection taken back, problem marks, a second review), then read on
the page and through the API as each role; their counts and item changes are exactly ``changes.json``'s from an export
of the same project, free text from the release or reviewers is shown as text, and a project without imports says so."""

import io
import json

import lxml.html
import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.actions.exports import recuration
from annotation.actions.review import do_store_suggestions
from annotation.models import Demonstration, Project, Role, SecondReview, Turn
from tests.support.actors import make_user, signed_in, token_client
from tests.support.weblinx_release import download, review_edit, start_export, write_demo, write_json, write_release

SCRIPT = "<script>alert('x')</script>"
FORMULA = '=HYPERLINK("http://evil.example","click")'
HOSTILE = f"{SCRIPT} {FORMULA}"


@pytest.fixture
def world(db, media_storage, tmp_path):
    """Project ``recurate`` with a release imported (alpha, bravo, charlie, delta: rejected in the release; foxtrot;
    echo's broken JSON kept it out), its people, and someone of another project."""
    project = Project.objects.create(name="recurate", title="Re-curation")
    other = Project.objects.create(name="elsewhere")
    people = {
        "admin": make_user("admin-r", project, Role.ADMIN),
        "researcher": make_user("researcher-r", project, Role.RESEARCHER),
        "ana": make_user("ana-r", project, Role.REVIEWER),
        "ben": make_user("ben-r", project, Role.REVIEWER),
        "cho": make_user("cho-r", project, Role.REVIEWER),
        "annotator": make_user("ann-r", project, Role.ANNOTATOR),
        "outsider": make_user("otto-r", other, Role.ADMIN),
    }
    release = write_release(tmp_path / "release")
    write_demo(release, "foxtrot", colour=6)
    write_json(
        release / "splits.json", {"train": ["alpha", "bravo", "foxtrot"], "valid": ["charlie"], "test_geo": ["delta"]}
    )
    (release / "demonstrations/delta/invalid.json").write_text('{"reason": "wrong site"}')
    call_command("import_weblinx", str(release), "--project", "recurate", "--user", "admin-r", stdout=io.StringIO())
    return project, people


def demo(project, release_id) -> Demonstration:
    return Demonstration.objects.get(project=project, source_id=release_id)


def turn(item, n) -> Turn:
    return Turn.objects.get(demonstration=item, client_id=str(n))


def mark(user, item, kind, turn_n=None, note=""):
    body = {"kind": kind, "note": note, **({"turn": turn(item, turn_n).pk} if turn_n is not None else {})}
    answer = token_client(user).post(f"/api/review/{item.name}/problems/", body, format="json")
    assert answer.status_code == 201, answer.content


def curate(project, people) -> None:
    """What three reviewers did to the release."""
    ana, ben, cho = people["ana"], people["ben"], people["cho"]
    alpha, bravo, charlie = demo(project, "alpha"), demo(project, "bravo"), demo(project, "charlie")
    delta, foxtrot = demo(project, "delta"), demo(project, "foxtrot")
    # charlie: a text, a deletion, a move, a task field; problems on a turn and the task
    review_edit(ana, charlie, op="edit_text", turn=turn(charlie, 0).pk, text=HOSTILE)
    review_edit(ana, charlie, op="delete", turn=turn(charlie, 3).pk)
    review_edit(ben, charlie, op="move", turn=turn(charlie, 2).pk, to_index=1)
    review_edit(ben, charlie, op="edit_metadata", fields={"category": FORMULA})
    mark(ana, charlie, "wrong_target", 1, note=HOSTILE)
    mark(cho, charlie, "task_infeasible", note="the shop is closed")
    mark(cho, charlie, "wrong_target", 1)
    # alpha: cho accepts the screenshot suggestions (turn 1 shown with turn 2's screenshot), ben edits a text that
    # cho edits again and undoes (ben's text stands), then validates it: a second review decides otherwise
    do_store_suggestions(alpha, [(turn(alpha, 1), turn(alpha, 2).screenshot_id, "own")])
    review_edit(cho, alpha, op="accept_suggestions")
    review_edit(ben, alpha, op="edit_text", turn=turn(alpha, 3).pk, text="Done!")
    again = review_edit(cho, alpha, op="edit_text", turn=turn(alpha, 3).pk, text="Finished.")
    review_edit(cho, alpha, op="undo", edit=again["id"])
    Project.objects.filter(pk=project.pk).update(second_review_percent=100)
    review_edit(ben, alpha, op="transition", action="validate")
    second = SecondReview.objects.get(demonstration=alpha)
    decided = token_client(second.reviewer).post(
        f"/api/quality/second-reviews/{alpha.name}/",
        {"decision": "reject", "invalid_turns": [turn(alpha, 1).pk]},
        format="json",
    )
    assert decided.status_code == 200, decided.content
    Project.objects.filter(pk=project.pk).update(second_review_percent=0)
    # bravo rejected (dropped), delta (the release's rejection) reopened, foxtrot only marked
    review_edit(ana, bravo, op="transition", action="reject")
    review_edit(ben, delta, op="transition", action="reopen")
    mark(ben, foxtrot, "missing_step", 2, note="no search first")
    mark(ben, foxtrot, "instruction_ambiguous")


def exported_changes(people, tmp_path) -> dict:
    """``changes.json`` of a WebLINX export of every status, downloaded as a researcher does."""
    researcher = token_client(people["researcher"])
    out = download(researcher, start_export(researcher, "recurate"), tmp_path)
    return {entry["demo"]: entry for entry in json.loads((out / "changes.json").read_text())["demos"]}


def counted(entries: list, kinds: list) -> dict:
    """The page's figures, counted here from changes.json entries (independently of the action)."""
    status = {"unchanged": 0, "changed": 0, "dropped": 0}
    changes = dict.fromkeys(
        ["deleted", "moved", "text", "value", "target", "invalid", "screenshot", "task", "status"], 0
    )
    problems = {k["key"]: {"turn_marks": 0, "task_marks": 0, "items": set()} for k in kinds}
    for entry in entries:
        status[entry["status"]] += 1
        for change in entry["turns"] + entry["task"]:
            changes[change["change"]] += 1
        for mark_ in entry["problems"]:
            problems[mark_["kind"]]["turn_marks" if mark_["turn"] is not None else "task_marks"] += 1
            problems[mark_["kind"]]["items"].add(entry["demo"])
    problems = {key: {**row, "items": len(row["items"])} for key, row in problems.items()}
    return {"items": len(entries), "status": status, "changes": changes, "problems": problems}


def as_counted(counts: dict) -> dict:
    """The API's counts in ``counted``'s shape."""
    problems = {
        k["key"]: {"turn_marks": k["turn_marks"], "task_marks": k["task_marks"], "items": k["items"]}
        for k in counts["problems"]
    }
    return {"items": counts["items"], "status": counts["status"], "changes": counts["changes"], "problems": problems}


def page_counts(html: bytes) -> dict:
    """The page's summary tables, read as a person reads them."""
    tree = lxml.html.fromstring(html)

    def cells(table: str) -> dict:
        return {
            td.get("data-count"): int(td.text_content()) for td in tree.xpath(f"//*[@id='{table}']//td[@data-count]")
        }

    status = cells("recuration-status")
    problems = {}
    for row in tree.xpath("//*[@id='recuration-problems']/tbody/tr"):
        values = {td.get("data-count"): int(td.text_content()) for td in row.xpath("./td[@data-count]")}
        problems[row.get("data-kind")] = values
    return {
        "items": status.pop("items"),
        "status": {key: status[key] for key in ("unchanged", "changed", "dropped")},
        "changes": cells("recuration-changes"),
        "problems": problems,
    }


def test_the_page_and_the_api_show_exactly_what_changes_json_says(world, tmp_path):
    project, people = world
    curate(project, people)

    changes = exported_changes(people, tmp_path)
    listed = token_client(people["researcher"]).get("/api/projects/recurate/recuration/")
    page = signed_in(people["ana"]).get("/projects/recurate/recuration/")

    assert listed.status_code == 200, listed.content
    assert page.status_code == 200
    data = listed.json()
    kinds = [{"key": k["key"]} for k in data["counts"]["problems"]]
    expected = counted(list(changes.values()), kinds)
    assert as_counted(data["counts"]) == expected
    assert page_counts(page.content) == expected
    # the figures themselves, as the reviewers left them
    assert expected["status"] == {"unchanged": 1, "changed": 3, "dropped": 1}
    assert expected["changes"] == {
        "deleted": 1,
        "moved": 1,
        "text": 2,
        "value": 0,
        "target": 0,
        "invalid": 0,
        "screenshot": 1,
        "task": 1,
        "status": 1,
    }
    assert expected["problems"]["wrong_target"] == {"turn_marks": 2, "task_marks": 0, "items": 1}
    assert expected["problems"]["task_infeasible"] == {"turn_marks": 0, "task_marks": 1, "items": 1}
    assert expected["problems"]["missing_step"] == {"turn_marks": 1, "task_marks": 0, "items": 1}
    assert expected["problems"]["instruction_ambiguous"] == {"turn_marks": 0, "task_marks": 1, "items": 1}
    assert expected["problems"]["wrong_value"] == {"turn_marks": 0, "task_marks": 0, "items": 0}
    assert data["counts"]["second_reviews"] == {"decided": 1, "same_decision": 0}

    # one row per item, with the entry's figures
    rows = {row["demo"]: row for row in data["results"]}
    assert sorted(rows) == sorted(changes) == ["alpha", "bravo", "charlie", "delta", "foxtrot"]
    for release_id, entry in changes.items():
        row = rows[release_id]
        assert row["name"] == demo(project, release_id).name
        assert row["status"] == entry["status"]
        assert row["agreement"] == entry["agreement"]
        assert sum(row["changes"].values()) == len(entry["turns"]) + len(entry["task"])
        assert sum(row["problems"].values()) == len(entry["problems"])
    assert {r: rows[r]["split"] for r in rows} == {
        "alpha": "train",
        "bravo": "train",
        "charlie": "valid",
        "delta": "test_geo",
        "foxtrot": "train",
    }
    tree = lxml.html.fromstring(page.content)
    shown = {tr.get("data-item"): tr.get("data-status") for tr in tree.xpath("//*[@id='recuration-items']/tbody/tr")}
    assert shown == {release_id: entry["status"] for release_id, entry in changes.items()}
    review_links = {a.get("href") for a in tree.xpath("//*[@id='recuration-items']//a")}
    assert {f"/review/{demo(project, r).name}/" for r in changes} <= review_links

    # each item: its changes.json entry exactly, on the API and on its page
    for release_id, entry in changes.items():
        item = token_client(people["admin"]).get(f"/api/projects/recurate/recuration/{release_id}/")
        assert item.status_code == 200, item.content
        assert item.json()["changes"] == entry
        assert signed_in(people["researcher"]).get(f"/projects/recurate/recuration/{release_id}/").status_code == 200


def test_each_change_names_who_made_it_accept_all_suggestions_included(world, tmp_path):
    project, people = world
    curate(project, people)

    changes = exported_changes(people, tmp_path)

    alpha = changes["alpha"]
    screenshot = turn(demo(project, "alpha"), 2).screenshot_id
    assert alpha["turns"] == [
        {
            "index": 1,
            "change": "screenshot",
            "from": turn(demo(project, "alpha"), 1).screenshot_id,
            "to": screenshot,
            "by": "cho-r",
        },
        {"index": 3, "change": "text", "from": "Done.", "to": "Done!", "by": "ben-r"},  # cho's edit undone
    ]
    second = SecondReview.objects.get(demonstration=demo(project, "alpha"))
    assert alpha["agreement"] == {
        "first": {"reviewer": "ben-r", "decision": "accept"},
        "second": {"reviewer": second.reviewer.username, "decision": "reject"},
        "turns_agreeing": 3,
        "turns": 4,
    }
    assert changes["charlie"]["turns"] == [
        {"index": 0, "change": "text", "from": "Find the cheapest flight", "to": HOSTILE, "by": "ana-r"},
        {"index": 2, "change": "moved", "from": 2, "to": 1, "by": "ben-r"},
        {"index": 3, "change": "deleted", "by": "ana-r"},
    ]
    assert changes["charlie"]["task"] == [
        {"change": "task", "field": "category", "from": "Shopping", "to": FORMULA, "by": "ben-r"}
    ]
    assert (changes["bravo"]["status"], changes["bravo"]["by"]) == ("dropped", "ana-r")
    assert changes["delta"]["task"] == [
        {"change": "status", "field": "status", "from": "invalid", "to": "in_review", "by": "ben-r"}
    ]
    assert (changes["foxtrot"]["status"], len(changes["foxtrot"]["problems"])) == ("unchanged", 2)

    # the item's page marks the same, turn by turn: the original beside the curated
    page = signed_in(people["ben"]).get("/projects/recurate/recuration/charlie/")
    tree = lxml.html.fromstring(page.content)
    rows = {tr.get("data-index"): tr for tr in tree.xpath("//*[@id='item-turns']/tbody/tr")}
    assert "deleted" in rows["3"].get("class")
    assert [s.get("data-change") for s in rows["2"].xpath(".//*[@data-change]")] == ["moved"]
    assert rows["0"].xpath("./td[contains(@class, 'original')]")[0].text_content().strip() == "Find the cheapest flight"
    assert HOSTILE in rows["0"].xpath("./td[contains(@class, 'curated')]")[0].text_content()
    assert "ana-r" in rows["0"].xpath(".//*[@data-change='text']")[0].text_content()
    assert [s.get("data-problem") for s in rows["1"].xpath(".//*[@data-problem]")] == ["wrong_target", "wrong_target"]
    task_row = tree.xpath("//*[@id='item-task']//tr[@data-field='category']")[0]
    assert [td.text_content() for td in task_row.xpath("./td")] == ["category", "Shopping", FORMULA, "ben-r"]
    assert [li.get("data-problem") for li in tree.xpath("//*[@id='item-task-problems']/li")] == ["task_infeasible"]


def test_free_text_from_the_release_and_the_reviewers_is_shown_as_text(world):
    project, people = world
    curate(project, people)
    client = signed_in(people["researcher"])

    for url in ("/projects/recurate/recuration/charlie/", "/projects/recurate/recuration/alpha/"):
        page = client.get(url)
        assert page.status_code == 200
        body = page.content.decode()
        assert "<script>alert" not in body  # the release's ODD text and the reviewers' edits, escaped
        assert "&lt;script&gt;alert(" in body
    body = client.get("/projects/recurate/recuration/charlie/").content.decode()
    assert "=HYPERLINK(&quot;http://evil.example&quot;,&quot;click&quot;)" in body  # the task field, as text
    tree = lxml.html.fromstring(body)
    assert not tree.xpath("//main//script")
    assert (
        HOSTILE in tree.xpath("//*[@id='item-turns']//tr[@data-index='1']//*[@class='note']")[0].text_content()
    )  # the note
    listed = token_client(people["researcher"]).get("/api/projects/recurate/recuration/charlie/").json()
    assert listed["turns"][0]["curated"]["text"] == HOSTILE  # JSON keeps the value as it is


def test_filters_and_pages(world, monkeypatch):
    project, people = world
    curate(project, people)
    api = token_client(people["researcher"])
    client = signed_in(people["researcher"])

    def items(answer) -> list:
        return [row["demo"] for row in answer.json()["results"]]

    assert items(api.get("/api/projects/recurate/recuration/?status=changed")) == ["alpha", "charlie", "delta"]
    assert items(api.get("/api/projects/recurate/recuration/?problem=wrong_target")) == ["charlie"]
    assert items(api.get("/api/projects/recurate/recuration/?status=unchanged&problem=missing_step")) == ["foxtrot"]
    assert items(api.get("/api/projects/recurate/recuration/?status=dropped&problem=missing_step")) == []
    filtered = api.get("/api/projects/recurate/recuration/?status=changed").json()
    assert filtered["counts"]["items"] == 5  # the counts stay the project's
    assert filtered["count"] == 3
    page = client.get("/projects/recurate/recuration/?problem=task_infeasible")
    assert [
        tr.get("data-item") for tr in lxml.html.fromstring(page.content).xpath("//*[@id='recuration-items']/tbody/tr")
    ] == ["charlie"]
    for query, field in (("status=edited", "status"), ("problem=nonsense", "problem")):
        refused = api.get(f"/api/projects/recurate/recuration/?{query}")
        assert refused.status_code == 400
        assert refused.json()["errors"][0]["field"] == field
        assert client.get(f"/projects/recurate/recuration/?{query}").status_code == 400

    first = api.get("/api/projects/recurate/recuration/?page_size=2").json()
    assert (first["count"], [r["demo"] for r in first["results"]]) == (5, ["alpha", "bravo"])
    assert first["next"]
    assert first["previous"] is None
    assert api.get("/api/projects/recurate/recuration/?page=9").status_code == 404
    monkeypatch.setattr("annotation.views.exports.recuration.PAGE_ITEMS", 2)
    paged = lxml.html.fromstring(client.get("/projects/recurate/recuration/?status=changed&page=2").content)
    assert [tr.get("data-item") for tr in paged.xpath("//*[@id='recuration-items']/tbody/tr")] == ["delta"]
    assert "status=changed" in paged.xpath("//*[@id='recuration-pager']/a")[0].get("href")


def test_who_may_see_it(world):
    project, people = world
    urls = ("/projects/recurate/recuration/", "/projects/recurate/recuration/charlie/")
    api_urls = ("/api/projects/recurate/recuration/", "/api/projects/recurate/recuration/charlie/")
    expected = {"admin": 200, "researcher": 200, "ana": 200, "annotator": 403, "outsider": 404}
    for who, status in expected.items():
        for url in urls:
            assert signed_in(people[who]).get(url).status_code == status, (who, url)
        for url in api_urls:
            assert token_client(people[who]).get(url).status_code == status, (who, url)
    assert signed_in(people["ana"]).get("/projects/recurate/recuration/nosuch/").status_code == 404
    assert token_client(people["ana"]).get("/api/projects/recurate/recuration/nosuch/").status_code == 404
    assert signed_in(people["outsider"]).get("/projects/elsewhere/recuration/charlie/").status_code == 404
    assert Client().get(urls[0]).status_code == 302  # to sign in
    # notes as review shows them: everyone who may open the demos (an annotator may not see this page at all)
    assert recuration.sees_notes(people["ana"], project)
    assert not recuration.sees_notes(people["annotator"], project)


def test_the_page_is_linked_where_people_look_for_it_once_a_release_is_imported(world):
    project, people = world
    for who in ("ana", "researcher", "admin"):
        reviewers = lxml.html.fromstring(signed_in(people[who]).get("/projects/recurate/quality/reviewers/").content)
        assert reviewers.xpath("//*[@id='recuration-link']")[0].get("href") == "/projects/recurate/recuration/"
    records = lxml.html.fromstring(signed_in(people["annotator"]).get("/projects/recurate/quality/records/").content)
    assert not records.xpath("//*[@id='recuration-link']")
    exports = lxml.html.fromstring(signed_in(people["researcher"]).get("/projects/recurate/exports/").content)
    assert exports.xpath("//*[@id='recuration-note']//a")[0].get("href") == "/projects/recurate/recuration/"


def test_a_project_without_imports_says_so(db):
    project = Project.objects.create(name="plain")
    researcher = make_user("res-p", project, Role.RESEARCHER)

    page = signed_in(researcher).get("/projects/plain/recuration/")
    answer = token_client(researcher).get("/api/projects/plain/recuration/")

    assert page.status_code == 200
    tree = lxml.html.fromstring(page.content)
    assert "No demo of plain was imported from a release" in tree.xpath("//*[@id='recuration-empty']")[0].text_content()
    assert not tree.xpath("//*[@id='recuration-items']")
    assert answer.status_code == 200
    assert (answer.json()["counts"]["items"], answer.json()["results"]) == (0, [])
    assert answer.json()["counts"]["status"] == {"unchanged": 0, "changed": 0, "dropped": 0}
    reviewers = lxml.html.fromstring(signed_in(researcher).get("/projects/plain/quality/reviewers/").content)
    assert not reviewers.xpath("//*[@id='recuration-link']")
    assert not lxml.html.fromstring(signed_in(researcher).get("/projects/plain/exports/").content).xpath(
        "//*[@id='recuration-note']"
    )


def test_an_undone_accept_all_and_an_undo_over_someone_elses_edit_leave_the_right_authors(world, tmp_path):
    project, people = world
    alpha, charlie = demo(project, "alpha"), demo(project, "charlie")
    do_store_suggestions(alpha, [(turn(alpha, 1), turn(alpha, 2).screenshot_id, "own")])
    accepted = review_edit(people["cho"], alpha, op="accept_suggestions")
    review_edit(people["ana"], alpha, op="undo", edit=accepted["id"])
    review_edit(people["ana"], charlie, op="edit_metadata", fields={"category": "Travel"})
    later = review_edit(people["ben"], charlie, op="edit_metadata", fields={"category": "Trains"})
    review_edit(people["ben"], charlie, op="undo", edit=later["id"])

    entries = {e["demo"]: e for e in (recuration.changes_of(demo(project, r)) for r in ("alpha", "charlie"))}

    assert (entries["alpha"]["status"], entries["alpha"]["turns"]) == ("unchanged", [])
    assert entries["charlie"]["task"] == [
        {"change": "task", "field": "category", "from": "Shopping", "to": "Travel", "by": "ana-r"}
    ]
    assert entries == {e["demo"]: e for e in exported_changes(people, tmp_path).values() if e["demo"] in entries}


def test_more_imported_items_cost_no_more_queries_and_change_no_other_item(world, tmp_path):
    project, people = world
    curate(project, people)
    api = token_client(people["researcher"])
    api.get("/api/projects/recurate/recuration/")
    with CaptureQueriesContext(connection) as before:
        rows = {row["demo"]: row for row in api.get("/api/projects/recurate/recuration/").json()["results"]}
    more = tmp_path / "more"
    for name in ("golf", "hotel", "india"):
        write_demo(more, name, colour=7)
    write_json(more / "splits.json", {"train": ["golf", "hotel", "india"]})
    call_command("import_weblinx", str(more), "--project", "recurate", "--user", "admin-r", stdout=io.StringIO())
    mark(people["cho"], demo(project, "hotel"), "extra_step", 1)

    with CaptureQueriesContext(connection) as after:
        answer = api.get("/api/projects/recurate/recuration/").json()

    assert len(after.captured_queries) == len(before.captured_queries)
    assert answer["counts"]["items"] == 8
    assert answer["counts"]["status"] == {"unchanged": 4, "changed": 3, "dropped": 1}
    assert {row["demo"]: row for row in answer["results"] if row["demo"] in rows} == rows
