"""One gold-accuracy figure per worker and batch, read as a team reads it: four workers through the real queue and
task frames, then the review page, the agreement page and its CSV, the API (``/api/decisions/``, ``/api/agreement/``),
the TurkingBench export's ``quality.json`` and the reason of a block all give the same value, equal to one computed
by hand here (rejected gold answers count: rejecting one never moves the figure). Then every input of the cached
figures changes in turn and the next read shows it at once."""

import csv
import datetime as dt
import io
import json
import re
import tarfile
from fractions import Fraction

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from lxml import html as lxml_html

from annotation.actions import forms
from annotation.lib.agreement import gold_text, percent
from annotation.models import Assignment, ExportJob, JobStatus, Role
from tests.support.actors import make_user, token_client
from tests.support.forms_data import TEMPLATE, make_batch
from workers.exports.jobs import run_export
from workers.tasks import auto_approve_assignments

# Six tasks: known answers (polarity, level) on tasks 0–3; tasks 4 and 5 have blank Answer.* cells (not gold).
KNOWN = {0: ("pos", "high"), 1: ("neg", "low"), 2: ("pos", "low"), 3: ("neg", "high")}
CSV = "topic,sentence,Answer.polarity,Answer.level\n" + "".join(
    f"t{i},s{i},{KNOWN[i][0]},{KNOWN[i][1]}\n" if i in KNOWN else f"t{i},s{i},,  \n" for i in range(6)
)


def other(value: str) -> str:
    return {"pos": "neg", "neg": "pos", "high": "low", "low": "high"}[value]


# What each worker answers on each task: (polarity right?, level right?). An answer's gold score is the mean of its
# two fields (exact match), a worker's gold accuracy the mean over their gold answers.
PLANS = {
    "ann": dict.fromkeys(range(6), (True, True)),
    "abe": dict.fromkeys(range(6), (True, False)),
    "amy": {0: (True, False), 1: (False, False), 2: (False, False), 3: (True, True)},
    "avi": {0: (True, True), 1: (True, True), 2: (True, False), 3: (False, False), 4: (True, True), 5: (True, True)},
}
# amy: 1/2, 0, 0 after three gold answers: 1/6 < 0.4, blocked then (she never does task 3).
EXPECTED = {
    "ann": (Fraction(1), 4),
    "abe": (Fraction(1, 2), 4),
    "amy": (Fraction(1, 6), 3),
    "avi": (Fraction(1 + 1 + Fraction(1, 2) + 0, 4), 4),
}


def answers_for(name: str, index: int) -> dict:
    polarity_right, level_right = PLANS[name][index]
    polarity, level = KNOWN.get(index, ("pos", "high"))
    return {
        "polarity": polarity if polarity_right else other(polarity),
        "level": level if level_right else other(level),
        "short": f"{name} on {index}",
        "assignmentId": "ASSIGNMENT_ID",  # what a template echoes into a hidden input
    }


@pytest.fixture
def team(alpha):
    people = {name: make_user(name, alpha, Role.ANNOTATOR) for name in PLANS}
    people["rex"] = make_user("rex", alpha, Role.RESEARCHER)
    people["ada"] = make_user("ada", alpha, Role.ADMIN)
    return people


def accept(worker, batch) -> Assignment | None:
    """The batch's next task for ``worker``; None when none is left for them, or they are blocked (403)."""
    response = token_client(worker).post(f"/api/batches/{batch.pk}/accept/")
    if response.status_code == 204 or (response.status_code == 403 and "blocked" in response.json()["detail"]):
        return None
    assert response.status_code == 201, response.content
    return Assignment.objects.select_related("task").get(pk=response.json()["id"])


def submit_in_frame(assignment: Assignment, answers: dict):
    """The worker's task frame posts the form (the frame's own capability URL, no session needed)."""
    response = Client().post(forms.work_url(assignment), answers)
    assert response.status_code == 200, response.content
    return response


def work_through(worker, batch) -> list[Assignment]:
    """The worker takes the batch's next task until none is left for them (or they are blocked)."""
    done = []
    while (assignment := accept(worker, batch)) is not None:
        submit_in_frame(assignment, answers_for(worker.username, assignment.task.index))
        done.append(assignment)
    return done


@pytest.fixture
def worked(alpha, team):
    batch = make_batch(alpha, team["rex"], csv_text=CSV, name="sentiment", assignments_per_task=4)
    api = token_client(team["rex"])
    settings = {"gold_threshold": 0.4, "gold_min_answers": 3}
    assert api.patch(f"/api/batch-quality/{batch.pk}/", settings, format="json").status_code == 200
    for name in PLANS:
        work_through(team[name], batch)
    return batch


def page_of(user, url: str):
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return lxml_html.fromstring(response.content.decode())


def review_page_figures(user, batch) -> dict:
    """``{worker: (percent, gold answers)}`` from the review page's rows."""
    root = page_of(user, f"/work/batches/{batch.pk}/decisions/")
    found = {}
    for row in root.xpath('//table[@id="review-rows"]/tbody/tr'):
        text = " ".join(row.xpath('td[@class="worker-gold"]')[0].text_content().split())
        match = re.fullmatch(r"([\d.]+%) over (\d+) gold answers?", text)
        assert match, text
        found.setdefault(row.get("data-worker"), set()).add((match.group(1), int(match.group(2))))
    assert all(len(values) == 1 for values in found.values()), found  # every row of a worker: the same figure
    return {worker: values.pop() for worker, values in found.items()}


def agreement_page_figures(user, batch) -> dict:
    root = page_of(user, f"/work/batches/{batch.pk}/agreement/")
    return {
        row.get("data-worker"): (
            row.xpath('td[@class="gold"]')[0].text_content().strip(),
            int(row.xpath('td[@class="gold-answers"]')[0].text_content()),
        )
        for row in root.xpath('//table[@id="agreement-workers"]/tbody/tr')
    }


def exported_quality(api, batch) -> dict:
    created = api.post("/api/exports/", {"project": batch.project.name, "format": "turkingbench"}, format="json")
    assert created.status_code == 202, created.content
    run_export(created.json()["id"])
    job = ExportJob.objects.get(pk=created.json()["id"])
    assert job.status == JobStatus.DONE, job.error
    data = b"".join(api.get(f"/api/exports/{job.pk}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/quality.json"))
        return json.load(tar.extractfile(member))


def test_one_gold_accuracy_everywhere_equal_to_the_hand_computed_one(worked, team):
    batch, rex = worked, team["rex"]
    api = token_client(rex)
    # rejecting gold answers (two of abe's, amy's first) does not raise or lower anyone's figure
    abe_rows = api.get("/api/decisions/", {"batch": batch.pk, "worker": "abe"}).json()["results"]
    amy_rows = api.get("/api/decisions/", {"batch": batch.pk, "worker": "amy"}).json()["results"]
    rejected = [abe_rows[0]["id"], abe_rows[1]["id"], amy_rows[0]["id"]]
    decided = api.post(
        "/api/decisions/decide/",
        {"decision": "reject", "feedback": "wrong level", "assignments": rejected},
        format="json",
    )
    assert decided.json() == {"changed": 3}

    reviews = {}
    for row in api.get("/api/decisions/", {"batch": batch.pk, "page_size": 100}).json()["results"]:
        reviews.setdefault(row["worker"], set()).add((row["worker_gold"], row["worker_gold_answers"]))
    assert all(len(values) == 1 for values in reviews.values())
    reviews = {worker: values.pop() for worker, values in reviews.items()}
    agreement = {
        w["worker"]: (w["gold_accuracy"], w["gold_answers"])
        for w in api.get(f"/api/agreement/{batch.pk}/").json()["workers"]
    }
    workers_csv = api.get(f"/api/agreement/{batch.pk}/workers/").content.decode()
    in_csv = {
        row["worker"]: (float(row["gold_accuracy"]), int(row["gold_answers"]))
        for row in csv.DictReader(io.StringIO(workers_csv))
    }
    report = exported_quality(api, batch)
    exported = {}
    for item in report["items"]:
        for worker in item["workers"]:
            exported.setdefault(worker, set()).add(
                (item["gold_accuracy_of_workers"][worker], item["gold_answers_of_workers"][worker])
            )
    assert all(len(values) == 1 for values in exported.values())
    exported = {worker: values.pop() for worker, values in exported.items()}
    on_review_page = review_page_figures(rex, batch)
    on_agreement_page = agreement_page_figures(rex, batch)

    for name, (accuracy, answers) in EXPECTED.items():
        value = reviews[name][0]
        assert value == pytest.approx(float(accuracy), abs=1e-12), name
        assert reviews[name] == agreement[name] == in_csv[name] == exported[name] == (value, answers), name
        assert on_review_page[name] == on_agreement_page[name] == (percent(value), answers), name

    # the block's reason names the same figure, on the review page, in the API and in the worker's refusal
    (block,) = api.get(f"/api/batch-quality/{batch.pk}/").json()["blocked"]
    assert block["worker"] == "amy"
    figure = gold_text(reviews["amy"][0], 3)
    assert figure == "gold accuracy 16.7% over 3 gold answers"
    assert figure in block["reason"]
    assert block["accuracy"] == reviews["amy"][0]
    refusal = token_client(team["amy"]).post(f"/api/batches/{batch.pk}/accept/")
    assert refusal.status_code == 403
    assert figure in refusal.json()["detail"]
    blocked_row = page_of(rex, f"/work/batches/{batch.pk}/decisions/").xpath(
        '//table[@id="blocked-workers"]//tr[@data-worker="amy"]'
    )
    assert figure in blocked_row[0].text_content()
    # the gold filters select by the same figure: below 0.5 is amy alone; at least 0.5 is ann, abe (0.5) and avi
    below = api.get("/api/decisions/", {"batch": batch.pk, "gold_below": "0.5"}).json()["results"]
    assert {row["worker"] for row in below} == {"amy"}
    at_least = api.get("/api/decisions/", {"batch": batch.pk, "gold_at_least": "0.5"}).json()["results"]
    assert {row["worker"] for row in at_least} == {"ann", "abe", "avi"}
    # the page says which answers the figure counts
    note = page_of(rex, f"/work/batches/{batch.pk}/decisions/").xpath('//*[@id="gold-note"]')[0].text_content()
    assert "rejected alike" in note


def test_hidden_fields_and_blank_answers_stay_out_of_the_answer_tables(worked, team):
    batch, rex = worked, team["rex"]
    root = page_of(rex, f"/work/batches/{batch.pk}/decisions/")
    cells = [
        " ".join(cell.text_content().split()) for cell in root.xpath('//table[@id="review-rows"]//td[@class="answers"]')
    ]
    assert cells
    assert not [cell for cell in cells if "assignmentId" in cell]
    assert all("polarity=" in cell and "short=" in cell for cell in cells)
    body = token_client(rex).get(f"/api/agreement/{batch.pk}/").json()
    assert "assignmentId" not in {field["name"] for field in body["fields"]}
    assert all("assignmentId" not in task["fields"] for task in body["tasks"])
    # the results CSV keeps every column, as Turkle does
    response = token_client(rex).get(f"/api/batches/{batch.pk}/results/", HTTP_ACCEPT="text/csv")
    results = b"".join(response.streaming_content).decode()
    assert "Answer.assignmentId" in next(csv.reader(io.StringIO(results)))


# --- The cache: every input, in turn -----------------------------------------------------------------------


def read(api, batch) -> dict:
    response = api.get(f"/api/agreement/{batch.pk}/")
    assert response.status_code == 200
    return response.json()


def marker_of(body: dict, index: int):
    task = next((task for task in body["tasks"] if task["task"] == index), None)
    return None if task is None else task["fields"].get("long", {}).get("aggregated_majority")


class Tamper:
    """A change no action makes (written straight to the table): the cached figures cannot know of it, so a read
    shows it only once an action has made a new version of them."""

    def __init__(self, batch):
        self.batch, self.count = batch, 0
        self.assignment = Assignment.objects.filter(task__batch=batch, task__index=5, worker__username="ann").get()

    def __call__(self) -> str:
        self.count += 1
        marker = f"marker {self.count}"
        Assignment.objects.filter(pk=self.assignment.pk).update(answers={**self.assignment.answers, "long": marker})
        return marker


def test_every_input_of_the_cached_figures_makes_the_next_read_compute_afresh(worked, team, alpha):
    batch, rex, ada = worked, team["rex"], team["ada"]
    api, admin = token_client(rex), token_client(ada)
    forms.do_update_batch_settings(batch, assignments_per_task=5)  # room for a fifth worker
    tamper = Tamper(batch)
    body = read(api, batch)
    seen = [marker_of(body, 5)]

    def after(change, name):
        marker = tamper()
        assert marker_of(read(api, batch), 5) == seen[-1], f"{name}: the read before the change comes from the cache"
        change()
        now = marker_of(read(api, batch), 5)
        assert now == marker, f"{name}: the next read after it computes afresh"
        seen.append(now)

    rows = {
        (r["worker"], r["task_index"]): r["id"]
        for r in api.get("/api/decisions/", {"batch": batch.pk, "page_size": 100}).json()["results"]
    }
    # a submission (a fifth worker, through the queue and the task frame)
    late = make_user("lou", alpha, Role.ANNOTATOR)
    after(lambda: submit_in_frame(accept(late, batch), {"polarity": "pos", "level": "high"}), "submission")
    # review decisions: one by one, reopen, in bulk, by filter, by the results CSV, automatic approval
    after(lambda: api.post(f"/api/decisions/{rows[('ann', 0)]}/approve/", {}, format="json"), "approve")
    after(lambda: api.post(f"/api/decisions/{rows[('ann', 1)]}/reject/", {"feedback": "no"}, format="json"), "reject")
    after(lambda: api.post(f"/api/decisions/{rows[('ann', 1)]}/reopen/"), "reopen")
    bulk = {"decision": "approve", "assignments": [rows[("abe", 0)], rows[("abe", 1)]]}
    after(lambda: api.post("/api/decisions/decide/", bulk, format="json"), "bulk decision")
    by_filter = {"decision": "approve", "filter": {"batch": batch.pk, "worker": "avi"}}
    after(lambda: api.post("/api/decisions/decide/", by_filter, format="json"), "decision by filter")
    upload = f"AssignmentId,Approve,Reject\n{rows[('abe', 2)]},,too short\n".encode()

    def upload_csv():
        data = {"batch": batch.pk, "csv": SimpleUploadedFile("r.csv", upload, content_type="text/csv")}
        sent = api.post("/api/decisions/upload/", data, format="multipart")
        assert sent.json() == {"approved": 0, "rejected": 1, "unchanged": 0}

    after(upload_csv, "results CSV")

    def auto_approval():
        Assignment.objects.filter(task__batch=batch).update(submitted_at=timezone.now() - dt.timedelta(days=30))
        assert auto_approve_assignments() > 0

    after(auto_approval, "automatic approval")
    # gold marks and known values: unmark, mark by task, from an assignment
    after(
        lambda: admin.post(f"/api/batch-quality/{batch.pk}/gold/", {"tasks": [3], "gold": False}, format="json"),
        "unmark",
    )
    after(lambda: admin.post(f"/api/batch-quality/{batch.pk}/gold/", {"tasks": [3]}, format="json"), "mark")
    after(
        lambda: admin.post(f"/api/batch-quality/{batch.pk}/gold/", {"assignment": rows[("avi", 4)]}, format="json"),
        "from an assignment",
    )
    # batch settings: quality settings, the batch's own, and its template
    after(lambda: admin.patch(f"/api/batch-quality/{batch.pk}/", {"gold_rate": 0.3}, format="json"), "quality settings")
    after(
        lambda: admin.patch(f"/api/batches/{batch.pk}/", {"description": "Read twice."}, format="json"),
        "batch settings",
    )
    after(lambda: forms.do_update_batch_settings(batch, html_template=TEMPLATE + "<!-- v2 -->"), "template")
    assert len(seen) == 15


def test_gold_changes_show_in_the_figures_at_once(worked, team):
    """The cause of the stale figures: a gold answer changed, the cache key (gold tasks counted) did not."""
    batch, rex, ada = worked, team["rex"], team["ada"]
    api, admin = token_client(rex), token_client(ada)

    def accuracy(name):
        return next(w for w in read(api, batch)["workers"] if w["worker"] == name)["gold_accuracy"]

    assert accuracy("abe") == 0.5
    # abe's answers become task 0's known answers (polarity, level and short; not the hidden assignmentId): his
    # answer there now scores 1, and ann's (1 + 0 + 2/3) / 3: her level differs, and her short text "ann on 0"
    # against "abe on 0" has ROUGE-L F1 2/3 (the common subsequence "on 0")
    mine = api.get("/api/decisions/", {"batch": batch.pk, "worker": "abe"}).json()["results"]
    task0 = next(row for row in mine if row["task_index"] == 0)
    assert (
        admin.post(f"/api/batch-quality/{batch.pk}/gold/", {"assignment": task0["id"]}, format="json").status_code
        == 200
    )
    assert accuracy("abe") == pytest.approx((1 + 0.5 * 3) / 4)
    assert accuracy("ann") == pytest.approx(float((Fraction(5, 9) + 3) / 4))
    # unmarking task 0 takes it out of everyone's figure
    assert (
        admin.post(f"/api/batch-quality/{batch.pk}/gold/", {"tasks": [0], "gold": False}, format="json").status_code
        == 200
    )
    assert accuracy("abe") == 0.5
    ann = next(w for w in read(api, batch)["workers"] if w["worker"] == "ann")
    assert (ann["gold_accuracy"], ann["gold_answers"]) == (1.0, 3)
