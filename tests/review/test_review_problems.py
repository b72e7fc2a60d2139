"""Problems reviewers mark on a demo's task or turns (docs/review.md#problems), the project's taxonomy of kinds, and
their counts on the quality page (docs/quality.md#problems-marked).

One project with three reviewers, two annotators, an admin and a researcher, and an outsider in another project;
three recorded demos. Every step through the API or the pages as the person whose work it is; figures read back
from the API, the quality page and its CSV, and checked against counts made by hand."""

import csv
import io
import json
import tarfile

import pytest
from django.test import Client

from annotation import synth
from annotation.models import Demonstration, DemoStatus, Role, Turn
from tests.support.actors import make_user, token_client
from workers.exports.jobs import run_export
from workers.management.commands.synth_demos import ingest_demo

PEOPLE = {
    "rae": Role.REVIEWER,
    "rob": Role.REVIEWER,
    "roz": Role.REVIEWER,
    "ana": Role.ANNOTATOR,
    "ben": Role.ANNOTATOR,
    "ada": Role.ADMIN,
    "res": Role.RESEARCHER,
}


class Team:
    def __init__(self, alpha, beta):
        self.users = {name: make_user(name, alpha, role) for name, role in PEOPLE.items()}
        self.users["otto"] = make_user("otto", beta, Role.REVIEWER)
        self.api = {name: token_client(user) for name, user in self.users.items()}
        self.pages = {}
        for name, user in self.users.items():
            self.pages[name] = Client()
            self.pages[name].force_login(user)
        self.demos = []
        for index, spec in enumerate(synth.generate_corpus(3, 6, 20, seed=11)):
            navigator = self.users[("ana", "ben")[index % 2]]
            self.demos.append(ingest_demo(spec, navigator, alpha)[0])
        Demonstration.objects.filter(pk__in=[d.pk for d in self.demos]).update(status=DemoStatus.RECORDED)
        self.turns = [
            list(Turn.objects.filter(demonstration=d).order_by("timestamp", "seq").values_list("pk", flat=True))
            for d in self.demos
        ]

    def mark(self, who, demo, kind, turn=None, note=None, expect=201):
        body = {"kind": kind, **({"turn": turn} if turn is not None else {}), **({"note": note} if note else {})}
        response = self.api[who].post(f"/api/review/{self.demos[demo].name}/problems/", body, format="json")
        assert response.status_code == expect, response.content
        return response.json()

    def marks(self, who="rae", demo=0):
        response = self.api[who].get(f"/api/review/{self.demos[demo].name}/problems/")
        assert response.status_code == 200, response.content
        return response.json()

    def problems(self, who="res"):
        response = self.api[who].get("/api/quality/demos/alpha/")
        assert response.status_code == 200, response.content
        return {row["key"]: row for row in response.json()["problems"]["kinds"]}, response.json()["problems"]


@pytest.fixture
def team(alpha, beta):
    return Team(alpha, beta)


def turn_html(page: bytes, turn_id: int) -> str:
    """The timeline item of one turn on the review page, then its problems block (shown when it is selected)."""
    html = page.decode()
    item = next(item for item in html.split('<li class="turn ') if f'id="t{turn_id}"' in item).split("</li>")[0]
    block = html.split(f'<div class="turn-problems" data-for="{turn_id}" hidden>')[1].split("</details>")[0]
    return item + block


def mark_everything(team) -> dict:
    """The marks the figures below are counted from (by API, and one through the review page's form)."""
    t = team.turns
    team.mark("rae", 0, "wrong_target", t[0][1])
    team.mark("rob", 0, "wrong_target", t[0][1])  # the same kind on the same turn by a second reviewer
    team.mark("roz", 0, "wrong_value", t[0][1])  # a third reviewer, another kind, the same turn
    team.mark("rob", 0, "extra_step", t[0][3])
    team.mark("rae", 0, "task_infeasible")
    team.mark("rob", 0, "task_infeasible")
    team.mark("roz", 1, "missing_step", t[1][2])
    team.mark("rae", 1, "instruction_ambiguous")
    gone = team.mark("rae", 1, "wrong_target", t[1][0])
    assert team.api["rae"].delete(f"/api/review/{team.demos[1].name}/problems/{gone['id']}/").status_code == 204
    form = {"op": "mark", "kind": "wrong_target", "turn": str(t[2][0]), "note": "the search box, not the logo"}
    answer = team.pages["rae"].post(f"/review/{team.demos[2].name}/problems", form)
    assert answer.status_code == 302
    assert answer["Location"] == f"/review/{team.demos[2].name}/#t{t[2][0]}"
    return {"gone": gone}


# Counted by hand from ``mark_everything``. Reviewers who marked per demo: demo 0 rae, rob, roz (pairs rae–rob,
# rae–roz, rob–roz); demo 1 roz, rae (one pair); demo 2 rae alone (no pair). A (pair, place) is compared when either
# of the pair marked the kind there, agreeing when both did.
EXPECTED = {
    # demo 0 turn 1 by rae, rob (compared by all 3 pairs, rae–rob agree); demo 2 turn 0 by rae (no pair)
    "wrong_target": {"marks": 3, "demos": 2, "turns": 2, "compared": 3, "agreeing": 1, "agreement": 0.3333},
    # demo 0 turn 1 by roz: rae–roz and rob–roz compared
    "wrong_value": {"marks": 1, "demos": 1, "turns": 1, "compared": 2, "agreeing": 0, "agreement": 0.0},
    # demo 1 turn 2 by roz: rae–roz
    "missing_step": {"marks": 1, "demos": 1, "turns": 1, "compared": 1, "agreeing": 0, "agreement": 0.0},
    # demo 0 turn 3 by rob: rae–rob, rob–roz
    "extra_step": {"marks": 1, "demos": 1, "turns": 1, "compared": 2, "agreeing": 0, "agreement": 0.0},
    # demo 0's task by rae and rob: 3 pairs, rae–rob agree
    "task_infeasible": {"marks": 2, "demos": 1, "turns": 0, "compared": 3, "agreeing": 1, "agreement": 0.3333},
    # demo 1's task by rae: rae–roz
    "instruction_ambiguous": {"marks": 1, "demos": 1, "turns": 0, "compared": 1, "agreeing": 0, "agreement": 0.0},
}
TOTALS = {"marks": 9, "demos": 3, "turns": 4, "compared": 12, "agreeing": 2, "agreement": 0.1667}


def test_marks_are_counted_by_kind_on_the_quality_page_its_api_and_csv(team):
    mark_everything(team)
    kinds, problems = team.problems()
    for key, figures in EXPECTED.items():
        assert {name: kinds[key][name] for name in figures} == figures, key
    assert {name: problems["totals"][name] for name in TOTALS} == TOTALS
    page = team.pages["rob"].get("/projects/alpha/quality/reviewers/")
    assert page.status_code == 200
    html = page.content.decode()
    row = html.split('<tr data-kind="wrong_target">')[1].split("</tr>")[0]
    for name, value in [("marks", 3), ("demos", 2), ("turns", 2), ("compared", 3), ("agreeing", 1)]:
        assert f'data-count="{name}">{value}<' in row
    assert 'data-count="agreement">33 %<' in row
    total = html.split('<tr data-kind="total">')[1].split("</tr>")[0]
    assert 'data-count="marks">9<' in total
    assert 'data-count="agreement">17 %<' in total
    rows = list(csv.reader(io.StringIO(team.pages["res"].get("/projects/alpha/quality/problems.csv").content.decode())))
    assert rows[0] == ["demo", "turn", "turn_seq", "kind", "label", "reviewer", "note", "marked_at"]
    assert len(rows) == 1 + 9
    page_mark = next(row for row in rows if row[:2] == [team.demos[2].name, str(team.turns[2][0])])
    assert page_mark[3:7] == ["wrong_target", "Wrong target", "rae", "the search box, not the logo"]


def test_the_exports_quality_report_counts_each_demos_marks_by_kind(team):
    mark_everything(team)
    statuses = ["recorded", "in_review", "validated"]
    created = team.api["res"].post(
        "/api/exports/", {"project": "alpha", "format": "weblinx", "statuses": statuses}, format="json"
    )
    assert created.status_code == 202, created.content
    run_export(created.json()["id"])
    data = b"".join(team.api["res"].get(f"/api/exports/{created.json()['id']}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/quality.json"))
        report = json.loads(tar.extractfile(member).read())
    items = {item["id"]: item["problems"] for item in report["items"]}
    assert items[team.demos[0].name] == {"extra_step": 1, "task_infeasible": 2, "wrong_target": 2, "wrong_value": 1}
    assert items[team.demos[1].name] == {"instruction_ambiguous": 1, "missing_step": 1}
    assert items[team.demos[2].name] == {"wrong_target": 1}
    assert report["totals"]["problems"] == {key: figures["marks"] for key, figures in sorted(EXPECTED.items())}


def test_the_review_page_lists_marks_per_turn_with_counts_and_unmarks_through_its_form(team):
    mark_everything(team)
    demo, t1 = team.demos[0], team.turns[0][1]
    page = team.pages["rae"].get(f"/review/{demo.name}/")
    item = turn_html(page.content, t1)
    assert 'data-problems="3"' in item
    assert "Problems (3) · Wrong target ×2 · Wrong value ×1" in item
    assert item.count('name="op" value="unmark"') == 1  # rae may unmark only her own
    task = page.content.decode().split('id="problems"')[1].split("</section>")[0]
    assert "Problems (2) · Task infeasible ×2" in task
    assert "Instruction ambiguous" in task  # a task-level kind offered on the task's form
    mine = next(m for m in team.marks("rae")["turns"] if m["turn"] == t1)["marks"]
    rae_mark = next(m for m in mine if m["reviewer"] == "rae")
    answer = team.pages["rae"].post(
        f"/review/{demo.name}/problems", {"op": "unmark", "mark": rae_mark["id"], "turn": t1}
    )
    assert answer.status_code == 302
    item = turn_html(team.pages["rae"].get(f"/review/{demo.name}/").content, t1)
    assert "Problems (2) · Wrong target ×1 · Wrong value ×1" in item
    # an admin may unmark anyone's; a reviewer not someone else's
    rob_mark = next(m for m in mine if m["reviewer"] == "rob")
    assert team.api["roz"].delete(f"/api/review/{demo.name}/problems/{rob_mark['id']}/").status_code == 403
    assert team.api["ada"].delete(f"/api/review/{demo.name}/problems/{rob_mark['id']}/").status_code == 204
    assert team.api["ada"].delete(f"/api/review/{demo.name}/problems/{rob_mark['id']}/").status_code == 404


def test_marking_again_keeps_one_mark_and_replaces_its_note(team):
    first = team.mark("rob", 1, "wrong_value", team.turns[1][4], note="typed 12")
    again = team.mark("rob", 1, "wrong_value", team.turns[1][4], note="typed 12, asked 21", expect=200)
    assert again["id"] == first["id"]
    assert again["note"] == "typed 12, asked 21"
    other = team.mark("roz", 1, "wrong_value", team.turns[1][4])
    assert other["id"] != first["id"]
    counts = team.marks("rob", 1)["counts"]
    assert counts == {"wrong_value": 2}


def test_marks_survive_reorder_and_delete_edits_as_comments_do(team):
    demo, turns = team.demos[0], team.turns[0]
    team.mark("rae", 0, "wrong_target", turns[1])
    team.mark("rob", 0, "extra_step", turns[3])
    client = team.pages["rae"]

    def edit(op, **fields):
        revision = client.get(f"/review/{demo.name}/revision").json()["revision"]
        body = {"op": op, "revision": revision, **fields}
        answer = client.post(f"/review/{demo.name}/edit", body, content_type="application/json")
        assert answer.status_code == 200, answer.content

    edit("comment", text="look at this one", turn=turns[1])
    edit("move", turn=turns[1], to_index=4)
    edit("delete", turn=turns[3])
    marks = {row["turn"]: [m["kind"] for m in row["marks"]] for row in team.marks("rob")["turns"]}
    assert marks == {turns[1]: ["wrong_target"], turns[3]: ["extra_step"]}
    page = client.get(f"/review/{demo.name}/").content
    moved = turn_html(page, turns[1])
    assert "Wrong target ×1" in moved
    assert "1 comment" in moved
    assert 'data-index="4"' in moved
    deleted = turn_html(page, turns[3])
    assert '<span class="badge">deleted</span>' in deleted
    assert "Extra step ×1" in deleted
    assert team.problems()[0]["extra_step"]["marks"] == 1  # a deleted turn's marks still count


def test_annotators_and_researchers_cannot_mark_outsiders_do_not_see_the_demo(team):
    name, turn = team.demos[0].name, team.turns[0][1]
    body = {"kind": "wrong_target", "turn": turn}
    for who in ("ana", "res"):  # ana navigated it: both may open it in review
        assert team.api[who].post(f"/api/review/{name}/problems/", body, format="json").status_code == 403, who
        page = team.pages[who].post(f"/review/{name}/problems", {"op": "mark", **body})
        assert page.status_code == 403, who
    # ben, an annotator of the project who did not navigate it, may not open it: 404 whatever he asks, so the
    # answer does not tell him the demo exists
    assert team.api["ben"].get(f"/api/review/{name}/problems/").status_code == 404
    assert team.api["ben"].post(f"/api/review/{name}/problems/", body, format="json").status_code == 404
    assert team.pages["ben"].post(f"/review/{name}/problems", {"op": "mark", **body}).status_code == 404
    assert team.api["otto"].post(f"/api/review/{name}/problems/", body, format="json").status_code == 404
    assert team.pages["otto"].post(f"/review/{name}/problems", {"op": "mark", **body}).status_code == 404
    assert team.api["otto"].get(f"/api/review/{name}/problems/").status_code == 404
    assert team.api["rae"].post("/api/review/no-such-demo/problems/", body, format="json").status_code == 404
    mark = team.mark("rae", 0, "wrong_target", turn)
    assert team.api["ana"].delete(f"/api/review/{name}/problems/{mark['id']}/").status_code == 403
    assert team.api["ben"].delete(f"/api/review/{name}/problems/{mark['id']}/").status_code == 404
    # the annotator who navigated it sees the marks on her demo, with who marked, as she sees comments
    seen = team.marks("ana")
    assert seen["turns"][0]["marks"][0]["reviewer"] == "rae"
    page = team.pages["ana"].get(f"/review/{name}/")
    assert "Wrong target ×1" in turn_html(page.content, turn)
    assert 'class="mark-problem"' not in page.content.decode()  # no form to mark
    assert team.pages["ana"].get("/projects/alpha/quality/reviewers/").status_code == 403
    assert team.pages["otto"].get("/projects/alpha/quality/problems.csv").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "wrong_targett", "turn": 0}, "kind"),
        ({"kind": None}, "kind"),
        ({"kind": ["wrong_target"]}, "kind"),
        ({"kind": "wrong_target"}, "turn"),
        ({"kind": "task_infeasible", "turn": 0}, "turn"),
        ({"kind": "wrong_target", "turn": 0, "note": "x" * 201}, "note"),
        ({"kind": "wrong_target", "turn": 0, "note": 5}, "note"),
    ],
)
def test_a_bad_mark_is_a_400_naming_the_field_and_nothing_is_stored(team, body, field):
    if body.get("turn") == 0:
        body = {**body, "turn": team.turns[0][2]}
    response = team.api["rob"].post(f"/api/review/{team.demos[0].name}/problems/", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == field
    assert team.marks("rob")["counts"] == {}


def test_another_demos_turn_is_a_404_naming_the_turn(team):
    body = {"kind": "wrong_target", "turn": team.turns[1][0]}
    response = team.api["rob"].post(f"/api/review/{team.demos[0].name}/problems/", body, format="json")
    assert response.status_code == 404
    assert response.json()["errors"][0]["field"] == "turn"


def test_a_note_is_stored_as_text_escaped_on_pages_and_neutralised_in_the_csv(team):
    note = '=HYPERLINK("http://evil.example/","x")<script>alert(1)</script>'
    team.mark("roz", 2, "wrong_value", team.turns[2][1], note=note)
    assert team.marks("roz", 2)["turns"][0]["marks"][0]["note"] == note
    page = team.pages["rae"].get(f"/review/{team.demos[2].name}/").content.decode()
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    text = team.pages["rae"].get("/projects/alpha/quality/problems.csv").content.decode()
    cell = list(csv.reader(io.StringIO(text)))[1][6]
    assert cell == "'" + note  # a spreadsheet shows it as text, never runs it


def put_kinds(team, who, kinds):
    return team.api[who].put("/api/projects/alpha/problem-kinds/", {"kinds": kinds}, format="json")


def test_admins_change_the_taxonomy_and_a_kind_in_use_cannot_be_dropped(team):
    kinds = team.api["rae"].get("/api/projects/alpha/problem-kinds/").json()["kinds"]
    assert [k["key"] for k in kinds] == [
        "wrong_target",
        "wrong_value",
        "missing_step",
        "extra_step",
        "task_infeasible",
        "instruction_ambiguous",
    ]
    team.mark("rae", 0, "missing_step", team.turns[0][2])
    new = [dict(k) for k in kinds if k["key"] != "missing_step"]
    new[0]["label"] = "Wrong element"
    new.append({"key": "stale_page", "label": "Page changed since", "level": "turn"})
    refused = put_kinds(team, "ada", new)
    assert refused.status_code == 409
    assert "missing_step" in refused.json()["detail"]
    moved = [{**k, "level": "task"} if k["key"] == "missing_step" else k for k in kinds]
    assert put_kinds(team, "ada", moved).status_code == 409  # nor move to another level
    assert put_kinds(team, "rae", new).status_code == 403
    assert put_kinds(team, "otto", new).status_code == 404
    mark = team.marks("rae")["turns"][0]["marks"][0]
    assert team.api["rae"].delete(f"/api/review/{team.demos[0].name}/problems/{mark['id']}/").status_code == 204
    saved = put_kinds(team, "ada", new)
    assert saved.status_code == 200, saved.content
    assert [k["key"] for k in saved.json()["kinds"]][-1] == "stale_page"
    team.mark("rob", 1, "stale_page", team.turns[1][1])
    team.mark("rob", 1, "wrong_target", team.turns[1][1])
    team.mark("rob", 1, "missing_step", team.turns[1][1], expect=400)  # no longer a kind
    kinds, _ = team.problems()
    assert kinds["wrong_target"]["label"] == "Wrong element"
    assert kinds["stale_page"]["marks"] == 1
    assert "missing_step" not in kinds
    page = team.pages["rob"].get(f"/review/{team.demos[1].name}/").content.decode()
    assert '<option value="stale_page">Page changed since</option>' in page
    assert "Wrong element ×1" in page


@pytest.mark.parametrize(
    ("kinds", "field"),
    [
        ([{"key": "Bad Key", "label": "x", "level": "turn"}], "kinds[0].key"),
        ([{"key": "ok", "label": "x", "level": "turn"}, {"key": "ok", "label": "y", "level": "task"}], "kinds[1].key"),
        ([{"key": "ok", "label": "", "level": "turn"}], "kinds[0].label"),
        ([{"key": "ok", "label": "x" * 61, "level": "turn"}], "kinds[0].label"),
        ([{"key": "ok", "label": "x", "level": "step"}], "kinds[0].level"),
        ([{"key": f"k{i}", "label": "x", "level": "turn"} for i in range(21)], "kinds"),
        ("wrong_target", "kinds"),
        ([["wrong_target"]], "kinds[0]"),
    ],
)
def test_a_bad_taxonomy_is_a_400_naming_the_field_and_nothing_changes(team, kinds, field):
    response = put_kinds(team, "ada", kinds)
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == field
    assert len(team.api["ada"].get("/api/projects/alpha/problem-kinds/").json()["kinds"]) == 6


def test_the_settings_page_edits_the_taxonomy(team):
    page = team.pages["ada"].get("/projects/alpha/settings/").content.decode()
    assert "wrong_target | turn | Wrong target" in page
    text = "wrong_target | turn | Wrong element\nunclear_goal | task | Goal unclear\n"
    team.mark("rae", 0, "missing_step", team.turns[0][0])
    refused = team.pages["ada"].post("/projects/alpha/problem-kinds", {"kinds": text}, follow=True)
    assert "missing_step is marked 1 time" in refused.content.decode()
    team.pages["rae"].post(
        f"/review/{team.demos[0].name}/problems",
        {"op": "unmark", "mark": team.marks("rae")["turns"][0]["marks"][0]["id"]},
    )
    saved = team.pages["ada"].post("/projects/alpha/problem-kinds", {"kinds": text}, follow=True)
    assert "Problem kinds saved (2)." in saved.content.decode()
    assert "unclear_goal | task | Goal unclear" in saved.content.decode()
    bad = team.pages["ada"].post("/projects/alpha/problem-kinds", {"kinds": "just a line"}, follow=True)
    assert "line 1: expected key | level | label" in bad.content.decode()
    assert team.pages["rae"].post("/projects/alpha/problem-kinds", {"kinds": text}).status_code == 403
    assert team.pages["otto"].post("/projects/alpha/problem-kinds", {"kinds": text}).status_code == 404
    answer = team.api["res"].get("/api/projects/alpha/problem-kinds/").json()
    assert [k["key"] for k in answer["kinds"]] == ["wrong_target", "unclear_goal"]
