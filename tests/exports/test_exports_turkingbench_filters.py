"""The TurkingBench export's filters, as a team uses them: two form batches with gold tasks, three workers whose work
is approved, left pending or rejected; researchers export with each choice of batches, review states and gold rows
(through the API and the export form), read each batch.csv back from the downloaded archive, export again after
more reviews, and are refused another project's batches or an unknown state. Exact cells: a real TurkingBench task
whose cells begin with - comes back byte for byte with the option, escaped without it."""

import csv
import io
import itertools
import tarfile

import pandas as pd
import pytest
from django.core.management import call_command
from django.test import Client

from agents.turkle import read_batch
from annotation.actions import forms
from annotation.actions.quality.decisions import check_reviewable, do_decide
from annotation.models import ExportJob, JobStatus, Role
from tests.support.actors import make_user
from tests.support.forms_data import make_batch, task_dir
from workers.exports.jobs import run_export

pytestmark = pytest.mark.django_db
EXPORTS = "/api/exports/"
TEMPLATE = '<p>${word}</p><input type="text" name="label">'
# task 0 of each batch is gold (a non-blank known answer imported with it); task 1 is not
CSV = {
    "colours": "word,Answer.label\nred,gold-red\nblue,\n",
    "shapes": "word,Answer.label\nsquare,gold-square\ncircle,\n",
}
DECISION = {"ann": "approved", "abe": "pending", "amy": "rejected"}  # each worker's work, as reviewed


@pytest.fixture
def team(alpha):
    """Two batches, three workers who each answer both tasks of both; the admin approves ann's work and rejects
    amy's, abe's waits for review."""
    admin = make_user("boss", alpha, Role.ADMIN)
    workers = {name: make_user(name, alpha, Role.ANNOTATOR) for name in DECISION}
    batches = {
        name: make_batch(alpha, admin, TEMPLATE, text, name, assignments_per_task=3) for name, text in CSV.items()
    }
    done = {"approved": [], "pending": [], "rejected": []}
    for (name, worker), batch in itertools.product(workers.items(), batches.values()):
        for _ in range(2):
            assignment = forms.do_accept_next(worker, batch)
            word = assignment.task.inputs["word"]
            forms.do_submit(assignment.pk, {"label": f"{name}:{word}"})
            done[DECISION[name]].append(assignment.pk)
    do_decide(admin, check_reviewable(admin, done["approved"]), "approve")
    do_decide(admin, check_reviewable(admin, done["rejected"]), "reject", "wrong labels")
    return {"admin": admin, "batches": batches, "workers": workers}


def expected_rows(batch: str, states, gold: bool) -> list[tuple]:
    """(word, label) rows of one exported batch.csv, stated independently of the export: the uploaded file's rows
    (its gold rows, blank answers too) first in file order, then each task's workers' answers in the order they
    submitted (ann, abe, amy), filtered by review."""
    lines = [line.split(",") for line in CSV[batch].splitlines()[1:]]
    words = [word for word, _ in lines]
    rows = [(word, label) for word, label in lines] if gold else []  # every row of the file, blank answers too
    for word in words:
        rows += [(word, f"{name}:{word}") for name, state in DECISION.items() if state in states]
    return rows


def export(client, **body) -> dict:
    """Start an export through the API, run its Celery task and return the job as the API shows it."""
    created = client.post(EXPORTS, {"project": "alpha", "format": "turkingbench", **body}, format="json")
    assert created.status_code == 202, created.json()
    run_export(created.json()["id"])
    job = client.get(f"{EXPORTS}{created.json()['id']}/").json()
    assert job["status"] == JobStatus.DONE, job["error"]
    return job


def downloaded(client, job: dict) -> dict:
    """{path inside the archive: bytes} of the export's download."""
    data = b"".join(client.get(job["download_url"]).streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def batch_rows(files: dict, batch: str) -> list[tuple]:
    """(word, label) of each data row of a batch.csv, read as a researcher's csv module reads it."""
    reader = csv.DictReader(io.StringIO(files[f"tasks/{batch}/batch.csv"].decode("utf-8-sig")))
    return [(row["word"], row["Answer.label"]) for row in reader]


def test_by_default_every_batch_with_approved_and_pending_work_and_gold_rows(team, researcher, api_for):
    client = api_for(researcher)
    job = export(client)
    assert job["batches"] == [{"id": team["batches"][n].pk, "name": n} for n in ("colours", "shapes")]
    assert (job["review_states"], job["include_gold"], job["exact_cells"]) == (["approved", "pending"], True, False)
    assert job["statuses"] == []  # demo statuses mean nothing for form batches
    files = downloaded(client, job)
    for batch in ("colours", "shapes"):
        assert batch_rows(files, batch) == expected_rows(batch, ("approved", "pending"), gold=True)


STATE_CHOICES = [["approved"], ["pending"], ["rejected"], ["rejected", "approved"], ["approved", "pending", "rejected"]]


@pytest.mark.parametrize("gold", [True, False])
@pytest.mark.parametrize("states", STATE_CHOICES)
@pytest.mark.parametrize("chosen", [("colours",), ("shapes",), ("colours", "shapes")])
def test_each_choice_of_batches_states_and_gold_exports_exactly_that_work(
    team, researcher, api_for, chosen, states, gold
):
    client = api_for(researcher)
    ids = [team["batches"][name].pk for name in chosen]
    job = export(client, batches=ids, review_states=states, include_gold=gold)
    assert [batch["name"] for batch in job["batches"]] == list(chosen)
    assert job["review_states"] == [s for s in ("approved", "pending", "rejected") if s in states]
    files = downloaded(client, job)
    assert {path.split("/")[1] for path in files if path.startswith("tasks/")} == set(chosen)
    for batch in chosen:
        assert batch_rows(files, batch) == expected_rows(batch, states, gold)
    assert job["counts"]["rows"] == sum(len(expected_rows(batch, states, gold)) for batch in chosen)


def test_only_gold_rows_when_no_state_is_chosen_and_gold_is(team, researcher, api_for):
    client = api_for(researcher)
    files = downloaded(client, export(client, review_states=[], include_gold=True))
    assert batch_rows(files, "colours") == [("red", "gold-red"), ("blue", "")]


def test_a_second_export_after_more_reviews_follows_the_new_decisions(team, researcher, api_for):
    client = api_for(researcher)
    first = batch_rows(downloaded(client, export(client, review_states=["approved"], include_gold=False)), "shapes")
    assert first == expected_rows("shapes", ["approved"], gold=False)
    admin, abe = team["admin"], team["workers"]["abe"]
    pending = list(abe.assignments.values_list("pk", flat=True))
    do_decide(admin, check_reviewable(admin, pending), "approve")  # abe's work is approved now
    second_researcher = make_user("rita", team["batches"]["shapes"].project, Role.RESEARCHER)
    other = api_for(second_researcher)
    again = batch_rows(downloaded(other, export(other, review_states=["approved"], include_gold=False)), "shapes")
    assert again == [
        ("square", "ann:square"),
        ("square", "abe:square"),
        ("circle", "ann:circle"),
        ("circle", "abe:circle"),
    ]
    assert ExportJob.objects.filter(project__name="alpha", status=JobStatus.DONE).count() == 2


def test_filters_of_another_project_or_another_format_are_refused_naming_the_field(team, researcher, beta, api_for):
    theirs = make_batch(beta, None, TEMPLATE, CSV["colours"], "secret-batch")
    client = api_for(researcher)
    mine = team["batches"]["colours"].pk
    cases = [
        ({"batches": [mine, theirs.pk]}, "batches[1]"),
        ({"batches": [999999]}, "batches[0]"),
        ({"review_states": ["approved", "done"]}, "review_states[1]"),
        ({"review_states": [], "include_gold": False}, "review_states"),
        ({"statuses": ["validated"]}, "statuses"),
        ({"format": "weblinx", "batches": [mine]}, "batches"),
        ({"format": "mind2web", "review_states": ["approved"]}, "review_states"),
        ({"format": "weblinx", "exact_cells": True}, "exact_cells"),
    ]
    for body, field in cases:
        response = client.post(EXPORTS, {"project": "alpha", "format": "turkingbench", **body}, format="json")
        assert response.status_code == 400, (body, response.json())
        assert [error["field"] for error in response.json()["errors"]] == [field], body
        assert "secret-batch" not in response.content.decode()  # another project's batch is not named
    bad_id = client.post(EXPORTS, {"project": "alpha", "format": "turkingbench", "batches": ["x"]}, format="json")
    assert bad_id.status_code == 400
    assert "batches" in bad_id.content.decode()
    assert not ExportJob.objects.exists()


# --- Exact cells -------------------------------------------------------------------------------------------------

REAL_TASK = "Word Formality Annotation"  # cells such as -3_Very_Informal


def test_exact_cells_give_back_a_real_task_byte_for_byte_and_the_default_escapes(researcher, alpha, api_for, tmp_path):
    call_command("import_turkingbench", str(task_dir(REAL_TASK)), project="alpha", stdout=io.StringIO())
    original = (task_dir(REAL_TASK) / "batch.csv").read_bytes()
    assert b",-3_Very_Informal" in original
    client = api_for(researcher)
    exact = downloaded(client, export(client, exact_cells=True))[f"tasks/{REAL_TASK}/batch.csv"]
    assert exact == original
    escaped = downloaded(client, export(client))[f"tasks/{REAL_TASK}/batch.csv"]
    assert escaped != original
    assert b",'-3_Very_Informal" in escaped
    assert b",-3_Very_Informal" not in escaped
    (tmp_path / "escaped.csv").write_bytes(escaped)
    as_read = read_batch(tmp_path / "escaped.csv")  # the platform's reader takes the ' off again
    pd.testing.assert_frame_equal(as_read, read_batch(task_dir(REAL_TASK) / "batch.csv"))


# --- The export form -----------------------------------------------------------------------------------------


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_form_offers_the_turkingbench_filters_with_their_defaults(team, researcher):
    html = page_client(researcher).get("/projects/alpha/exports/").content.decode()
    for index, name in enumerate(("colours", "shapes")):  # every batch, ticked
        assert f'name="batches" value="{team["batches"][name].pk}" id="id_batches_{index}" checked' in html
    assert 'name="review_states" value="approved" id="id_review_states_0" checked' in html
    assert 'name="review_states" value="pending" id="id_review_states_1" checked' in html
    assert 'name="review_states" value="rejected" id="id_review_states_2">' in html
    assert 'name="include_gold" aria-describedby="id_include_gold_helptext" id="id_include_gold" checked>' in html
    assert 'name="exact_cells" aria-describedby="id_exact_cells_helptext" id="id_exact_cells">' in html
    assert 'id="export-statuses" data-formats="weblinx mind2web"' in html  # hidden for a TurkingBench export
    assert 'id="export-form-filters" data-formats="turkingbench"' in html
    assert "approved and pending (not yet reviewed) by default" in html
    assert "-3_Very_Informal becomes &#x27;-3_Very_Informal" in html  # the trade-off of exact cells, explained
    assert "do not open that batch.csv in a spreadsheet" in html


def test_an_export_from_the_form_uses_and_shows_its_filters(team, researcher):
    client = page_client(researcher)
    shapes = team["batches"]["shapes"]
    form = {
        "format": "turkingbench",
        "splits": "",
        "statuses": ["validated"],  # the hidden WebLINX/Mind2Web boxes still post; a TurkingBench export ignores them
        "batches": [shapes.pk],
        "review_states": ["rejected"],
        "exact_cells": "on",
        "archive_format": "tar.gz",
    }
    response = client.post("/projects/alpha/exports/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    job = ExportJob.objects.get()
    assert (list(job.batches.all()), job.review_states, job.include_gold, job.exact_cells, job.statuses) == (
        [shapes],
        ["rejected"],
        False,
        True,
        [],
    )
    run_export(job.pk)
    page = client.get(response["Location"]).content.decode()
    assert '<dd id="export-batches">shapes</dd>' in page
    assert '<dd id="export-review-states">rejected <span' in page
    assert '<dd id="export-gold">left out</dd>' in page
    assert '<dd id="export-cells">exact <span' in page
    assert "<dt>Statuses</dt>" not in page
    listing = client.get("/projects/alpha/exports/").content.decode()
    assert "1 batch; answers rejected; gold left out; cells exact" in listing
    archive = b"".join(page_client(researcher).get(f"/api/exports/{job.pk}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        files = {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert batch_rows(files, "shapes") == expected_rows("shapes", ["rejected"], gold=False)


def test_the_form_refuses_no_batch_and_another_projects_batch(team, researcher, beta):
    theirs = make_batch(beta, None, TEMPLATE, CSV["colours"], "secret-batch")
    client = page_client(researcher)
    base = {"format": "turkingbench", "review_states": ["approved"], "archive_format": "tar.gz"}
    none = client.post("/projects/alpha/exports/", base)
    assert none.status_code == 400
    assert "Choose at least one batch." in none.content.decode()
    other = client.post("/projects/alpha/exports/", {**base, "batches": [theirs.pk]})
    assert other.status_code == 400
    assert "secret-batch" not in other.content.decode()
    assert not ExportJob.objects.exists()
