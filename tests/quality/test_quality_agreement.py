"""Agreement and aggregation of form batches (docs/quality.md): figures compared with values computed by hand in this
file, crowd-kit checked on a case whose answer is known, the page and the API as every role, and the TurkingBench
export's quality.json.

The batch: ``forms_data.TEMPLATE`` (text, textarea, radio, checkbox group, select, range), three tasks with
gold answers, three annotators doing every task through the real queue (``do_accept_next`` / ``do_submit``)."""

import csv
import io
import json
import random
import tarfile
from fractions import Fraction

import pytest

from annotation.actions import forms
from annotation.lib import agreement as lib
from annotation.models import ExportJob, JobStatus, Role
from tests.support.actors import make_user
from tests.support.forms_data import make_batch
from workers.exports.jobs import run_export

# --- Krippendorff's α by hand ---------------------------------------------------------------------------------
#
# Nominal, three tasks: (a, a, b), (a, a, a), (b, b). Coincidences (each ordered pair of a task's m values counts
# 1/(m−1)): o_aa = 1 + 3 = 4, o_ab = o_ba = 1, o_bb = 2; n_a = 5, n_b = 3, n = 8.
# α = 1 − (n − 1)·(o_ab + o_ba) / (n_a·n_b + n_b·n_a) = 1 − 7·2/30 = 8/15.
NOMINAL_ALPHA = 8 / 15
# Interval, (1, 1, 3), (2, 2, 2), (3, 3): o_11 = 1, o_13 = o_31 = 1, o_22 = 3, o_33 = 2; n_1 = 2, n_2 = 3, n_3 = 3.
# Σ o·δ² = 2·4 = 8; Σ n_c·n_k·δ² = 2·(2·3·1 + 2·3·4 + 3·3·1) = 78; α = 1 − 7·8/78 = 11/39.
INTERVAL_ALPHA = 11 / 39


def test_alpha_matches_the_hand_computed_values():
    assert lib.alpha("nominal", {0: ["a", "a", "b"], 1: ["a", "a", "a"], 2: ["b", "b"]}) == pytest.approx(NOMINAL_ALPHA)
    assert lib.alpha("interval", {0: ["1", "1", "3"], 1: ["2", "2", "2"], 2: ["3", "3"]}) == pytest.approx(
        INTERVAL_ALPHA
    )


def test_alpha_is_undefined_without_two_answers_or_with_one_value():
    assert lib.alpha("nominal", {0: ["a"], 1: ["b"], 2: ["a"]}) is None  # nothing pairable
    assert lib.alpha("nominal", {}) is None
    assert lib.alpha("nominal", {0: ["a", "a"], 1: ["a", "a", "a"]}) is None  # one value: no expected disagreement
    assert lib.alpha("interval", {0: ["x", "y"], 1: ["z", "1"]}) is None  # not numbers
    assert lib.alpha(None, {0: ["a", "b"], 1: ["a", "a"]}) is None  # free text: not computed


def test_a_field_with_fewer_than_two_answers_per_task_has_no_agreement():
    types = {"q": "radio"}
    result = lib.batch_agreement(types, [(0, "w1", {"q": "a"}), (1, "w2", {"q": "b"}), (2, "w3", {})])
    (field,) = result["fields"]
    assert (field["majority_share"], field["alpha"], field["tasks_compared"]) == (None, None, 0)
    assert all(task["fields"].get("q", {}).get("agreement") is None for task in result["tasks"])
    assert [w["majority_agreement"] for w in result["workers"]] == [None, None, None]
    assert [w["gold_accuracy"] for w in result["workers"]] == [None, None, None]


def test_majority_vote_by_hand_and_ties_to_the_smallest_answer():
    rows = [
        (0, "w1", {"q": "b"}),
        (0, "w2", {"q": "b"}),
        (0, "w3", {"q": "a"}),
        (1, "w1", {"q": "c"}),
        (1, "w2", {"q": "b"}),  # a tie of one each: "b" < "c"
        (2, "w1", {"q": "c"}),
        (2, "w2", {"q": "c"}),
        (2, "w3", {"q": "c"}),
        (2, "w4", {"q": "a"}),
    ]
    result = lib.batch_agreement({"q": "select"}, rows)
    by_task = {task["task"]: task["fields"]["q"] for task in result["tasks"]}
    assert [by_task[t]["aggregated_majority"] for t in (0, 1, 2)] == ["b", "b", "c"]
    assert [by_task[t]["agreement"] for t in (0, 1, 2)] == pytest.approx([2 / 3, 1 / 2, 3 / 4])
    assert result["fields"][0]["majority_share"] == pytest.approx((2 + 1 + 3) / (3 + 2 + 4))
    workers = {w["worker"]: w for w in result["workers"]}
    assert workers["w1"]["majority_agreement"] == pytest.approx(2 / 3)  # b ✓, c ✗ (tie went to b), c ✓
    assert workers["w4"]["majority_agreement"] == 0


def test_dawid_skene_follows_a_reliable_worker_where_the_majority_follows_two_noisy_ones():
    """The known case: w1 is always right, w2 and w3 are right 60% of the time. Where both noisy workers agree on
    the wrong answer the majority is wrong; Dawid–Skene, which learns each worker's confusion, is not."""
    rng = random.Random(7)
    rows, truth = [], {}
    for task in range(60):
        truth[task] = rng.choice("ab")
        other = "b" if truth[task] == "a" else "a"
        rows.append((task, "w1", {"q": truth[task]}))
        for worker in ("w2", "w3"):
            rows.append((task, worker, {"q": truth[task] if rng.random() < 0.6 else other}))
    result = lib.batch_agreement({"q": "radio"}, rows)
    fields = {task["task"]: task["fields"]["q"] for task in result["tasks"]}
    outvoted = [task for task in truth if fields[task]["aggregated_majority"] != truth[task]]
    assert len(outvoted) >= 3  # the case is really there (4 tasks with this seed)
    assert all(fields[task]["aggregated_dawid_skene"] == truth[task] for task in truth)
    assert result["fields"][0]["dawid_skene_differs"] == len(outvoted)


def test_canonical_answers():
    assert lib.canonical("checkbox", ["b", "a"]) == lib.canonical("checkbox", "a|b") == "a|b"
    assert lib.canonical("checkbox", None) == ""  # nothing checked is an answer
    assert lib.canonical("radio", "") is None  # a blank radio is no answer
    assert lib.canonical("range", "4.0") == "4"
    assert lib.canonical("text", "  two   words ") == "two words"


def test_field_types_come_from_the_template():
    types = lib.field_types('<input type="submit" name="submit"><input name="t"><select name="s"></select>')
    assert types == {"t": "text", "s": "select"}
    whole = lib.field_types("<!doctype html><html><body><input type=range name=r><textarea name=x></textarea>")
    assert whole == {"r": "range", "x": "textarea"}


# --- A batch worked by three annotators ---------------------------------------------------------------------

CSV_WITH_GOLD = (
    "topic,sentence,Answer.polarity,Answer.score\n"
    "weather,It rains.,pos,4\nsport,They won.,neg,2\nfood,It is spicy.,neg,3\n"
)
# task → worker → answers (the form's names; a missing name was not sent)
ANSWERS = {
    0: {
        "ann1": {"polarity": "pos", "score": "1", "tags": ["a", "b"], "short": "Rain", "level": "low"},
        "ann2": {"polarity": "pos", "score": "1", "tags": ["b", "a"], "short": "rain "},
        "ann3": {"polarity": "neg", "score": "3", "short": "snow"},
    },
    1: {
        "ann1": {"polarity": "pos", "score": "2", "tags": "a", "short": "x"},
        "ann2": {"polarity": "pos", "score": "2", "tags": "a", "short": "x"},
        "ann3": {"polarity": "pos", "score": "2", "tags": "a", "short": "x"},
    },
    2: {
        "ann1": {"polarity": "neg", "score": "3"},
        "ann2": {"polarity": "neg", "score": "3"},
        "ann3": {},
    },
}


@pytest.fixture
def worked(alpha, researcher):
    """The batch after every annotator did every task (in the queue's order)."""
    batch = make_batch(alpha, researcher, csv_text=CSV_WITH_GOLD, assignments_per_task=3)
    annotators = [make_user(f"ann{n}", alpha, Role.ANNOTATOR) for n in (1, 2, 3)]
    for annotator in annotators:
        for _ in range(3):
            assignment = forms.do_accept_next(annotator, batch)
            forms.do_submit(assignment.pk, ANSWERS[assignment.task.index][annotator.username])
    return batch


def test_the_api_gives_the_hand_computed_figures(worked, researcher, api_for):
    body = api_for(researcher).get(f"/api/agreement/{worked.pk}/").json()
    fields = {field["name"]: field for field in body["fields"]}
    # polarity is the nominal example above (pos = a, neg = b); score the interval one.
    assert fields["polarity"]["alpha"] == pytest.approx(NOMINAL_ALPHA)
    assert fields["polarity"]["majority_share"] == pytest.approx(7 / 8)
    assert fields["score"]["alpha"] == pytest.approx(INTERVAL_ALPHA)
    assert fields["score"]["level"] == "interval"
    # tags: (a|b, a|b, nothing), (a, a, a), (nothing ×3): 8 of 9 with the majority
    assert fields["tags"]["majority_share"] == pytest.approx(8 / 9)
    # one answer only (level) or none (long): undefined, never 0 or 1
    assert (fields["level"]["answers"], fields["level"]["majority_share"], fields["level"]["alpha"]) == (1, None, None)
    assert (fields["long"]["answers"], fields["long"]["majority_share"]) == (0, None)
    assert fields["short"]["alpha"] is None  # free text
    tasks = {task["task"]: task for task in body["tasks"]}
    assert tasks[0]["fields"]["polarity"]["aggregated_majority"] == "pos"
    assert tasks[0]["fields"]["tags"]["aggregated_majority"] == "a|b"
    assert tasks[0]["fields"]["short"]["aggregated_majority"] == "Rain"  # a three-way tie: the smallest
    assert tasks[2]["fields"]["polarity"]["agreement"] == 1.0
    assert tasks[0]["fields"]["level"]["agreement"] is None
    assert sorted(tasks[0]["workers"]) == ["ann1", "ann2", "ann3"]
    workers = {worker["worker"]: worker for worker in body["workers"]}
    # ann3 against the majority: polarity ✗✓, score ✗✓, tags ✗✓✓, short ✗✓ → 5 of 9
    assert workers["ann3"]["majority_agreement"] == pytest.approx(5 / 9)
    # gold (every task: the CSV's Answer.* values), official metric: radio exact match, range
    # 1 − |gold − answer| / max(|gold|, |answer|); nothing sent = "". An answer's score is the mean over its task's
    # two known fields; the worker's accuracy the mean over their three gold answers.
    # ann1: (1 + 1/4) / 2, (0 + 1) / 2, (1 + 1) / 2
    assert workers["ann1"]["gold_accuracy"] == pytest.approx(float((Fraction(5, 8) + Fraction(1, 2) + 1) / 3))
    # ann3: (0 + 3/4) / 2, (0 + 1) / 2, (0 + 0) / 2 (blank)
    assert workers["ann3"]["gold_accuracy"] == pytest.approx((0.375 + 0.5 + 0) / 3)
    assert workers["ann3"]["gold_answers"] == 3
    assert body["totals"] == {"assignments": 9, "tasks": 3, "workers": 3, "answers": 32}


def test_a_new_submission_changes_the_figures_read_again(worked, alpha, researcher, api_for):
    client = api_for(researcher)
    before = client.get(f"/api/agreement/{worked.pk}/").json()
    batch = forms.do_update_batch_settings(worked, assignments_per_task=4)
    fourth = make_user("ann4", alpha, Role.ANNOTATOR)
    assignment = forms.do_accept_next(fourth, batch)
    forms.do_submit(assignment.pk, {"polarity": "neg", "level": "high"})
    after = client.get(f"/api/agreement/{worked.pk}/").json()
    assert after["totals"]["assignments"] == before["totals"]["assignments"] + 1 == 10
    level = next(field for field in after["fields"] if field["name"] == "level")
    assert level["answers"] == 2
    assert assignment.task.index == 0
    assert level["majority_share"] == pytest.approx(1 / 2)  # low vs high on task 0


def rows_of(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_page_shows_the_tables_and_links_the_downloads(worked, researcher, client):
    client.force_login(researcher)
    batch_page = client.get(f"/work/batches/{worked.pk}/").content.decode()
    assert f'href="/work/batches/{worked.pk}/agreement/"' in batch_page
    page = client.get(f"/work/batches/{worked.pk}/agreement/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="agreement-fields"' in html
    assert 'id="agreement-workers"' in html
    assert 'id="chart-fields"' in html
    assert f"{NOMINAL_ALPHA:.3f}" in html
    assert "—" in html
    fields = rows_of(client.get(f"/work/batches/{worked.pk}/agreement/fields.csv").content.decode())
    level = next(row for row in fields if row["name"] == "level")
    assert (level["majority_share"], level["alpha"]) == ("", "")  # undefined: empty, never 0
    tasks = client.get(f"/work/batches/{worked.pk}/agreement/tasks.csv")
    assert "attachment" in tasks["Content-Disposition"]
    first = rows_of(tasks.content.decode())[0]
    assert (first["task"], first["polarity.majority"], first["polarity.dawid_skene"]) == ("0", "pos", "pos")
    everything = json.loads(client.get(f"/work/batches/{worked.pk}/agreement.json").content)
    assert everything["batch"]["name"] == worked.name
    api_csv = client.get(f"/api/agreement/{worked.pk}/workers/")
    assert api_csv.status_code == 200
    assert api_csv["Content-Type"].startswith("text/csv")
    assert {row["worker"] for row in rows_of(api_csv.content.decode())} == {"ann1", "ann2", "ann3"}


@pytest.mark.parametrize(
    ("who", "status"),
    [("researcher", 200), ("reviewer", 200), ("admin", 200), ("ann1", 403), ("teammate", 403), ("outsider", 404)],
)
def test_who_may_read_the_agreement(worked, alpha, researcher, reviewer, teammate, outsider, who, status, api_for):
    users = {"researcher": researcher, "reviewer": reviewer, "teammate": teammate, "outsider": outsider}
    if who == "admin":
        users["admin"] = make_user("admin1", alpha, Role.ADMIN)
    if who == "ann1":
        from django.contrib.auth import get_user_model

        users["ann1"] = get_user_model().objects.get(username="ann1")
    user = users[who]
    from django.test import Client

    page_client = Client()
    page_client.force_login(user)
    for url in (
        f"/work/batches/{worked.pk}/agreement/",
        f"/work/batches/{worked.pk}/agreement.json",
        f"/work/batches/{worked.pk}/agreement/tasks.csv",
    ):
        assert page_client.get(url).status_code == status, url
    api = api_for(user)
    for url in (f"/api/agreement/{worked.pk}/", f"/api/agreement/{worked.pk}/fields/"):
        response = api.get(url)
        assert response.status_code == status, url
        if status != 200:
            assert response["Content-Type"].startswith("application/json")
            assert response.json()["code"]


def test_the_api_lists_the_batches_one_may_read(worked, researcher, reviewer, teammate, outsider, api_for):
    for user, expected in ((researcher, [worked.pk]), (reviewer, [worked.pk]), (teammate, []), (outsider, [])):
        listed = api_for(user).get("/api/agreement/")
        assert listed.status_code == 200
        assert [row["batch"] for row in listed.json()["results"]] == expected, user.username
    (row,) = api_for(researcher).get("/api/agreement/").json()["results"]
    assert row["url"].endswith(f"/api/agreement/{worked.pk}/")


def test_unknown_batches_and_anonymous_visitors(worked, researcher, client, api_for):
    client.force_login(researcher)
    assert client.get("/work/batches/999999/agreement/").status_code == 404
    assert client.get(f"/work/batches/{worked.pk}/agreement/nope.csv").status_code == 404
    assert api_for(researcher).get("/api/agreement/999999/").status_code == 404
    assert api_for(researcher).get(f"/api/agreement/{worked.pk}/nope/").status_code == 404
    client.logout()
    assert client.get(f"/work/batches/{worked.pk}/agreement/").status_code == 302  # to sign-in
    from rest_framework.test import APIClient

    assert APIClient().get(f"/api/agreement/{worked.pk}/").status_code in (401, 403)


def test_the_turkingbench_export_holds_quality_json_naming_each_task(worked, researcher, api_for):
    client = api_for(researcher)
    created = client.post("/api/exports/", {"project": "alpha", "format": "turkingbench"}, format="json")
    assert created.status_code == 202, created.json()
    run_export(created.json()["id"])
    job = ExportJob.objects.get(pk=created.json()["id"])
    assert job.status == JobStatus.DONE, job.error
    shown = client.get(f"/api/exports/{job.pk}/").json()
    assert shown["counts"]["quality"]["items"] == 3
    data = b"".join(client.get(f"/api/exports/{job.pk}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/quality.json"))
        report = json.load(tar.extractfile(member))
    assert report["format"] == "turkingbench"
    assert [item["id"] for item in report["items"]] == [f"{worked.name}/0", f"{worked.name}/1", f"{worked.name}/2"]
    first = report["items"][0]
    assert first["kind"] == "task"
    assert first["status"] == "completed"
    assert sorted(first["workers"]) == ["ann1", "ann2", "ann3"]
    assert first["fields"]["polarity"]["aggregated_majority"] == "pos"
    assert first["fields"]["polarity"]["aggregated_dawid_skene"] == "pos"
    assert first["fields"]["polarity"]["agreement"] == pytest.approx(2 / 3)
    assert first["gold_accuracy_of_workers"]["ann3"] == pytest.approx((0.375 + 0.5 + 0) / 3)
    assert first["gold_answers_of_workers"]["ann3"] == 3
    by_batch = report["totals"]["agreement_by_batch"][worked.name]
    assert by_batch["fields"]["polarity"]["alpha"] == pytest.approx(NOMINAL_ALPHA)
    assert by_batch["fields"]["level"]["alpha"] is None
    assert report["totals"]["by_status"] == {"completed": 3}


def test_the_export_command_names_every_task_of_a_real_turkingbench_batch(db, tmp_path):
    from django.core.management import call_command

    from annotation.models import Batch
    from tests.support.forms_data import task_dir

    call_command("import_turkingbench", str(task_dir("Formalize sentence")), project="tb", stdout=io.StringIO())
    batch = Batch.objects.get(project__name="tb")
    out = tmp_path / "export"
    call_command("export_dataset", "--format", "turkingbench", "--project", "tb", "--out", str(out), "--gold",
                 stdout=io.StringIO())  # fmt: skip
    report = json.loads((out / "quality.json").read_text())
    indexes = list(batch.tasks.order_by("index").values_list("index", flat=True))
    assert [item["id"] for item in report["items"]] == [f"{batch.name}/{index}" for index in indexes]
    assert all(item["gold_rows"] >= 1 and item["workers"] == [] for item in report["items"])  # gold only, no work
    assert report["totals"]["items"] == len(indexes)
