"""What makes a task gold, and its answers' scores kept true to its known answers (docs/quality.md, "Gold tasks"): a
task is gold when it has at least one non-blank known answer; blank CSV cells are never known answers nor scored
against; marking by task, unmarking and marking from an assignment score the submitted answers again, as does a new
template; a real TurkingBench task with blank Answer.* cells scores as a computation written here says; the data
migration brings existing tasks to the rule."""

import csv
import io
import math
from collections import defaultdict
from fractions import Fraction

import lxml.html
import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from annotation.actions import forms
from annotation.models import Assignment, Batch, FiguresVersion, Membership, Project, Role, Task
from tests.support.actors import make_user, token_client
from tests.support.forms_data import TEMPLATE, task_dir

# Tasks 0 and 2 have a non-blank known answer; task 1's cells are all blank (empty or spaces), task 3 has no row
# with answers at all (its only cell is blank too).
CSV = "topic,sentence,Answer.polarity,Answer.level\nt0,s0,pos,\nt0,s0,pos,high\nt1,s1,, \nt2,s2,,low\nt3,s3,,\n"


@pytest.fixture
def admin(alpha):
    return make_user("ada", alpha, Role.ADMIN)


@pytest.fixture
def crowd(alpha):
    return [make_user(name, alpha, Role.ANNOTATOR) for name in ("ann", "abe", "amy")]


def batch_with_blanks(alpha, admin, **settings):
    api = token_client(admin)
    sent = api.post(
        "/api/batches/",
        {
            "project": "alpha",
            "name": "blanks",
            "template": SimpleUploadedFile("template.html", TEMPLATE.encode(), content_type="text/html"),
            "csv": SimpleUploadedFile("blanks.csv", CSV.encode(), content_type="text/csv"),
            "assignments_per_task": 3,
            **settings,
        },
        format="multipart",
    )
    assert sent.status_code == 201, sent.content
    return Batch.objects.get(pk=sent.json()["id"])


def scores(admin, batch) -> dict:
    rows = token_client(admin).get("/api/decisions/", {"batch": batch.pk, "page_size": 100}).json()["results"]
    return {(row["worker"], row["task_index"]): row["gold_score"] for row in rows}


def work(worker, batch, answers) -> None:
    while (assignment := forms.do_accept_next(worker, batch)) is not None:
        forms.do_submit(assignment.pk, answers(assignment.task.index), timezone.now())


def test_an_upload_makes_gold_only_the_tasks_with_a_non_blank_answer(alpha, admin):
    batch = batch_with_blanks(alpha, admin)
    shown = token_client(admin).get(f"/api/batch-quality/{batch.pk}/").json()
    assert shown["gold_tasks"] == [0, 2]
    known = dict(batch.tasks.values_list("index", "gold_answers"))
    assert known == {0: {"polarity": ["pos", "pos"], "level": ["high"]}, 1: {}, 2: {"level": ["low"]}, 3: {}}
    # the imported rows stay as they were: the TurkingBench export's gold rows
    assert batch.tasks.get(index=1).gold == [{"row": 2, "answers": {"polarity": "", "level": " "}}]


def test_only_fields_with_a_known_value_are_scored(alpha, admin, crowd):
    batch = batch_with_blanks(alpha, admin)
    ann, abe, amy = crowd
    work(ann, batch, lambda i: {"polarity": "pos", "level": "high"})
    work(abe, batch, lambda i: {"polarity": "neg", "level": "low"})
    work(amy, batch, lambda i: {"short": "only text"})
    found = scores(admin, batch)
    # task 0: polarity (pos, pos) and level (high): the blank cell of the first row is not a known level
    assert (found[("ann", 0)], found[("abe", 0)], found[("amy", 0)]) == (1.0, 0.0, 0.0)
    # task 2: level only (its polarity cell is blank): abe's "low" is right, ann's "high" wrong
    assert (found[("ann", 2)], found[("abe", 2)], found[("amy", 2)]) == (0.0, 1.0, 0.0)
    # tasks 1 and 3 are not gold: no score
    assert {found[(name, index)] for name in ("ann", "abe", "amy") for index in (1, 3)} == {None}
    workers = {w["worker"]: w for w in token_client(admin).get(f"/api/agreement/{batch.pk}/").json()["workers"]}
    assert [(workers[n]["gold_accuracy"], workers[n]["gold_answers"]) for n in ("ann", "abe", "amy")] == [
        (0.5, 2),
        (0.5, 2),
        (0.0, 2),
    ]


def test_marking_a_task_without_a_known_value_is_refused_naming_the_field(alpha, admin, crowd, client):
    batch = batch_with_blanks(alpha, admin)
    api = token_client(admin)
    refused = api.post(f"/api/batch-quality/{batch.pk}/gold/", {"tasks": [0, 1]}, format="json")
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "tasks"
    assert "task 1 has no non-blank Answer.* value" in refused.json()["detail"]
    assert api.get(f"/api/batch-quality/{batch.pk}/").json()["gold_tasks"] == [0, 2]  # nothing changed
    client.force_login(admin)
    page = client.post(f"/work/batches/{batch.pk}/decisions/gold", {"tasks": "3"}, follow=True).content.decode()
    assert "task 3 has no non-blank Answer.* value" in page
    one = client.post(f"/work/batches/{batch.pk}/decisions/gold", {"tasks": "1, x"}, follow=True).content.decode()
    assert "expected task indices (from 0)" in one
    # an assignment with nothing but blanks, hidden fields and MTurk's parameters has no answer to be gold
    ann = crowd[0]
    blank = forms.do_accept_next(ann, batch)
    forms.do_submit(blank.pk, {"short": "  ", "tags": [], "assignmentId": "x", "hitId": "7"}, timezone.now())
    from_blank = api.post(f"/api/batch-quality/{batch.pk}/gold/", {"assignment": blank.pk}, format="json")
    assert from_blank.status_code == 400
    assert from_blank.json()["errors"][0]["field"] == "assignment"


def test_marking_unmarking_and_marking_from_an_assignment_score_the_answers_again(alpha, admin, crowd):
    batch = batch_with_blanks(alpha, admin)
    ann, abe, _ = crowd
    work(ann, batch, lambda i: {"polarity": "pos", "level": "high", "assignmentId": "A1"})
    work(abe, batch, lambda i: {"polarity": "neg", "level": "high", "short": "x"})
    api = token_client(admin)
    assert scores(admin, batch)[("abe", 0)] == 0.5
    assert (
        api.post(f"/api/batch-quality/{batch.pk}/gold/", {"tasks": [0], "gold": False}, format="json").status_code
        == 200
    )
    assert scores(admin, batch)[("abe", 0)] is None
    assert api.post(f"/api/batch-quality/{batch.pk}/gold/", {"tasks": [0]}, format="json").status_code == 200
    assert scores(admin, batch)[("abe", 0)] == 0.5
    # task 1 (blank cells) gets ann's answers as known ones: her hidden parameter is not one of them
    ann_task1 = Assignment.objects.get(task__batch=batch, task__index=1, worker=ann)
    assert (
        api.post(f"/api/batch-quality/{batch.pk}/gold/", {"assignment": ann_task1.pk}, format="json").status_code == 200
    )
    assert batch.tasks.get(index=1).gold_answers == {"polarity": ["pos"], "level": ["high"]}
    found = scores(admin, batch)
    assert (found[("ann", 1)], found[("abe", 1)]) == (1.0, 0.5)
    reviews = api.get("/api/decisions/", {"batch": batch.pk, "worker": "abe"}).json()["results"]
    # abe's gold answers: task 0 (1/2), task 1 (1/2), task 2 (its known level is low; his high: 0)
    assert {row["worker_gold"] for row in reviews} == {(0.5 + 0.5 + 0) / 3}
    assert {row["worker_gold_answers"] for row in reviews} == {3}


def test_a_new_template_scores_the_answers_again_with_its_field_types(alpha, admin, crowd):
    batch = batch_with_blanks(alpha, admin)
    ann = crowd[0]
    work(ann, batch, lambda i: {"polarity": "pos", "level": "low"})
    assert scores(admin, batch)[("ann", 0)] == 0.5  # polarity right, level wrong
    # "level" becomes a number input: the official scorer has no rule for it, so only polarity counts
    numbered = TEMPLATE.replace('<select name="level">', '<input type="number" name="level"><select name="old">')
    forms.do_update_batch_settings(batch, html_template=numbered)
    assert scores(admin, batch)[("ann", 0)] == 1.0
    assert scores(admin, batch)[("ann", 2)] is None  # task 2 knows only level: nothing left to score


# --- A real TurkingBench task with blank Answer.* cells ------------------------------------------------------

WINOGRANDE = "Winogrande plausiblity"


def csv_rows(name: str) -> tuple[list[str], list[dict]]:
    with open(task_dir(name) / "batch.csv", encoding="utf-8-sig", newline="") as file:
        reader = csv.DictReader(file)
        return reader.fieldnames, list(reader)


def plain_known(name: str) -> list[dict]:
    """Per instance (rows sharing every non-Answer column, in file order), the non-blank Answer.* values."""
    header, rows = csv_rows(name)
    inputs = [column for column in header if not column.startswith("Answer.")]
    instances: dict[tuple, dict] = {}
    for row in rows:
        known = instances.setdefault(tuple(row[column] for column in inputs), {})
        for column in header:
            if column.startswith("Answer.") and row[column].strip():
                known.setdefault(column.removeprefix("Answer."), []).append(row[column])
    return list(instances.values())


def number_text(value: str) -> str:
    return str(int(float(value))) if float(value).is_integer() else value


def plain_score(known: dict, answers: dict) -> float | None:
    """Exact match per known field (radio: the one known value; the equal box: checked or not), hidden gender fields
    never scored, the mean over the fields that are."""
    marks = []
    for name, values in known.items():
        if name.startswith("gender"):
            continue  # hidden inputs
        (value,) = set(values)
        marks.append(number_text(answers.get(name, "")) == number_text(value) if answers.get(name) else False)
    return sum(Fraction(int(mark)) for mark in marks) / len(marks) if marks else None


def flipped(value: str) -> str:
    return "2" if value == "1" else "1"


WINOGRANDE_WORKERS = {
    # every radio right, the equal box checked exactly where the annotator checked it
    "wren": lambda known: {
        "Answer_radios1": known["Answer_radios1"][0],
        "Answer_radios2": known["Answer_radios2"][0],
        **{box: "1" for box in ("equal1", "equal2") if box in known},
        "assignmentId": "A",
        "gender1": "",
        "Comments": "",
    },
    # the first radio right, the second wrong, the equal box checked everywhere (scored only where it is known)
    "wade": lambda known: {
        "Answer_radios1": known["Answer_radios1"][0],
        "Answer_radios2": flipped(known["Answer_radios2"][0]),
        "equal1": "1",
        "equal2": "1",
    },
    # nothing answered but the hidden fields
    "wes": lambda known: {"assignmentId": "A", "gender1": "female", "gender2": "male"},
}


@pytest.fixture
def winogrande(db):
    project = Project.objects.create(name="tb")
    call_command("import_turkingbench", str(task_dir(WINOGRANDE)), project="tb", assignments=3, stdout=io.StringIO())
    for name in WINOGRANDE_WORKERS:
        Membership.objects.create(project=project, user=make_user(name), role=Role.ANNOTATOR)
    Membership.objects.create(project=project, user=make_user("rhea"), role=Role.RESEARCHER)
    return Batch.objects.get(project=project)


def test_a_real_turkingbench_task_with_blank_answer_cells_scores_as_computed_by_hand(winogrande):
    batch = winogrande
    known = plain_known(WINOGRANDE)
    assert len(known) == batch.tasks.count() == 25
    stored = dict(batch.tasks.values_list("index", "gold_answers"))
    assert {index: stored[index] for index in range(25)} == dict(enumerate(known))
    assert batch.tasks.filter(is_gold=True).count() == 25  # every instance has its radios
    assert all("gender1" not in values and "gender2" not in values for values in known)  # all blank in the CSV
    assert sum("equal1" in values for values in known) == 1  # one instance's annotator checked the boxes
    expected = defaultdict(list)
    for name, answer in WINOGRANDE_WORKERS.items():
        worker = batch.project.memberships.get(user__username=name).user
        while (assignment := forms.do_accept_next(worker, batch)) is not None:
            answers = answer(known[assignment.task.index])
            forms.do_submit(assignment.pk, answers, timezone.now())
            expected[name].append(plain_score(known[assignment.task.index], answers))
    rhea = batch.project.memberships.get(user__username="rhea").user
    stored_scores = scores(rhea, batch)
    for name, values in expected.items():
        assert len(values) == 25
        mine = {index: score for (worker, index), score in stored_scores.items() if worker == name}
        assert [mine[index] for index in range(25)] == [pytest.approx(float(v)) for v in values], name
    workers = {w["worker"]: w for w in token_client(rhea).get(f"/api/agreement/{batch.pk}/").json()["workers"]}
    for name, values in expected.items():
        mean = sum(values, Fraction(0)) / len(values)
        assert workers[name]["gold_accuracy"] == pytest.approx(float(mean)), name
        assert workers[name]["gold_answers"] == 25
    assert workers["wren"]["gold_accuracy"] == 1.0  # blank cells no longer count against a right answer
    # wade: one radio of two right; where the annotator checked both boxes, his two checks count too
    assert workers["wade"]["gold_accuracy"] == pytest.approx(float((24 * Fraction(1, 2) + Fraction(3, 4)) / 25))
    assert workers["wes"]["gold_accuracy"] == 0.0
    fields = {field["name"] for field in token_client(rhea).get(f"/api/agreement/{batch.pk}/").json()["fields"]}
    assert not {"assignmentId", "gender1", "gender2", "qid1", "url1"} & fields  # hidden inputs are not answers
    assert {"Answer_radios1", "equal1", "Comments"} <= fields


# --- The migration ----------------------------------------------------------------------------------------


def test_the_data_migration_brings_existing_tasks_to_the_rule(alpha, admin, crowd):
    import importlib

    migration = importlib.import_module("annotation.migrations.0024_gold_rule")
    batch = batch_with_blanks(alpha, admin)
    ann = crowd[0]
    work(ann, batch, lambda i: {"polarity": "pos", "level": "low"})
    # the state before the rule: no task marked at import, one marked with a blank value kept, stale scores
    Task.objects.filter(batch=batch).update(is_gold=False, gold_answers={})
    Task.objects.filter(batch=batch, index=1).update(
        is_gold=True, gold_answers={"polarity": ["", " "], "level": [None]}
    )
    Task.objects.filter(batch=batch, index=2).update(is_gold=True, gold_answers={"level": ["", "low"], "short": [""]})
    Assignment.objects.filter(task__batch=batch).update(gold_score=0.25)
    FiguresVersion.objects.filter(batch=batch).delete()
    migration.forward(apps, None)
    tasks = {task.index: task for task in batch.tasks.all()}
    assert {index: task.is_gold for index, task in tasks.items()} == {0: True, 1: False, 2: True, 3: False}
    assert tasks[0].gold_answers == {"polarity": ["pos", "pos"], "level": ["high"]}  # from the CSV, blanks left out
    assert tasks[1].gold_answers == {}
    assert tasks[2].gold_answers == {"level": ["low"]}
    found = dict(Assignment.objects.filter(task__batch=batch).values_list("task__index", "gold_score"))
    assert found == {0: 0.5, 1: None, 2: 1.0, 3: None}
    assert FiguresVersion.objects.filter(batch=batch).exists()
    assert not math.isnan(found[0])


def test_the_review_page_numbers_tasks_from_0_and_takes_indices(alpha, admin, crowd):
    batch = batch_with_blanks(alpha, admin)
    work(crowd[0], batch, lambda i: {"polarity": "pos"})
    client = Client()
    client.force_login(admin)
    page = client.get(f"/work/batches/{batch.pk}/decisions/").content.decode()
    cells = [" ".join(cell.text_content().split()) for cell in lxml.html.fromstring(page).xpath("//td[@class='task']")]
    assert "0 gold" in cells
    assert "3" in cells
    assert "Gold: tasks 0, 2." in page
    marked = client.post(f"/work/batches/{batch.pk}/decisions/gold", {"tasks": "2", "gold": "0"}, follow=True)
    assert "Gold: task 0." in marked.content.decode()


def test_numbers_past_what_the_columns_hold_and_nul_bytes_are_400s_never_500s(alpha, admin, crowd):
    """The second outside review's 500s: a task index or an assignment id past 64 bits, a NUL in the worker filter."""
    batch = batch_with_blanks(alpha, admin)
    api = token_client(admin)
    for body, field in (
        ({"tasks": [9223372036854775808]}, "tasks"),
        ({"tasks": [2**31]}, "tasks"),
        ({"tasks": [-1]}, "tasks"),
        ({"assignment": 2**70}, "assignment"),
    ):
        response = api.post(f"/api/batch-quality/{batch.pk}/gold/", body, format="json")
        assert response.status_code == 400, body
        assert response.json()["errors"][0]["field"].startswith(field)
    client = Client()
    client.force_login(admin)
    page = client.post(f"/work/batches/{batch.pk}/decisions/gold", {"tasks": "9223372036854775808"}, follow=True)
    assert page.status_code == 200
    assert "has no task 9223372036854775808" in page.content.decode()
    assert client.get(f"/work/batches/{batch.pk}/decisions/", {"worker": "a\x00b"}).status_code == 400
    assert api.get("/api/decisions/", {"batch": batch.pk, "worker": "a\x00b"}).status_code == 400
    # a digit str.isdigit() takes and int() refuses (the third outside review: eight 500s)
    assert api.get("/api/decisions/", {"batch": "²"}).status_code == 400
    assert api.post("/api/batches/²/accept/", {}, format="json").status_code in (400, 404)
    assert api.post(f"/api/batch-quality/{batch.pk}/gold/", {"tasks": ["²"]}, format="json").status_code == 400
    for fields in ({"assignment": "²"}, {"tasks": "²"}):
        assert client.post(f"/work/batches/{batch.pk}/decisions/gold", fields, follow=True).status_code == 200
    assert (
        client.post(
            f"/work/batches/{batch.pk}/decisions/decide", {"assignment": "²", "decision": "approve"}
        ).status_code
        < 500
    )
    assert client.get("/agents/compare/", {"a": "²", "b": "1"}).status_code == 400
