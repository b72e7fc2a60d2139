"""Export jobs end to end with a real Celery worker process on the configured broker and database."""

import hashlib
import io
import json
import os
import signal
import tarfile

import pytest

from annotation.actions import forms
from annotation.actions.quality.decisions import check_reviewable, do_decide
from annotation.models import ExportJob, JobStatus, Role
from devtools.processes import celery_beat, celery_worker
from tests.support.actors import make_user
from tests.support.corpus import ingest_corpus
from tests.support.forms_data import make_batch
from tests.support.jobs import job_ended as ended
from tests.support.jobs import poll_job
from tests.support.waits import wait_until

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]
EXPORTS = "/api/exports/"


@pytest.fixture
def client(researcher, api_for):
    return api_for(researcher)


def poll(client, job_id, until, timeout=180):
    """GET the export until ``until(body)``; returns every body seen."""
    return poll_job(client, f"{EXPORTS}{job_id}/", until, timeout)


def running_midway(body):
    return ended(body) or (body["status"] == "running" and 0 < body["progress"] < 0.9)


def exported_files(media_storage):
    folder = media_storage / "exports"
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_an_export_runs_on_the_worker_with_rising_progress_and_a_matching_manifest(client, worker, alpha):
    demos = ingest_corpus(project="alpha", demos=5, turns=24, elements=300, seed=5)

    job_id = client.post(EXPORTS, {"project": "alpha", "format": "weblinx"}, format="json").json()["id"]
    seen = poll(client, job_id, ended)

    final = seen[-1]
    assert final["status"] == "done", final["error"]
    progress = [body["progress"] for body in seen]
    assert progress == sorted(progress)
    assert final["progress"] == 1.0
    assert final["counts"]["demos"] == len(demos)
    archive = client.get(final["download_url"])
    data = b"".join(archive.streaming_content)
    assert hashlib.sha256(data).hexdigest() == final["sha256"]
    assert len(data) == final["size"]
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile() or m.islnk()}
    top = f"alpha-weblinx-{job_id}"
    manifest = json.loads(files.pop(f"{top}/manifest.json"))["files"]
    assert set(files) == {f"{top}/{name}" for name in manifest}
    assert all(hashlib.sha256(files[f"{top}/{n}"]).hexdigest() == e["sha256"] for n, e in manifest.items())
    splits = json.loads(files[f"{top}/splits.json"])
    assert sorted(name for names in splits.values() for name in names) == [d.name for d in demos]
    assert final["counts"]["files"] == len(manifest)
    quality = json.loads(files[f"{top}/quality.json"])  # the quality report beside the data (docs/quality.md)
    assert sorted(item["id"] for item in quality["items"]) == [d.name for d in demos]
    assert final["counts"]["quality"] == quality["totals"]


def test_a_job_whose_worker_is_killed_midway_ends_failed_and_serves_nothing(
    client, worker, alpha, settings, media_storage
):
    settings.JOB_STALE_SECONDS = 2
    ingest_corpus(project="alpha", demos=10, turns=30, elements=1200, seed=6)

    job_id = client.post(EXPORTS, {"project": "alpha", "format": "weblinx"}, format="json").json()["id"]
    midway = poll(client, job_id, running_midway)[-1]
    assert midway["status"] == "running", midway
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()

    final = poll(client, job_id, ended, timeout=30)[-1]

    assert final["status"] == "failed"
    assert "stopped responding" in final["error"]
    assert final["download_url"] is None
    assert client.get(f"{EXPORTS}{job_id}/download/").status_code == 409
    assert exported_files(media_storage) == []


def test_the_work_folder_of_a_killed_export_is_swept_by_beat(client, worker, worker_env, alpha, settings, tmp_path):
    """A SIGKILLed worker never runs its cleanup: the partial export (and its hard links) stays in EXPORT_TMP_DIR
    until beat's sweep reaps the job and removes the folder; a finished job's folder is gone at once."""
    ingest_corpus(project="alpha", demos=10, turns=30, elements=1200, seed=6)
    job_id = client.post(EXPORTS, {"project": "alpha", "format": "weblinx"}, format="json").json()["id"]
    assert poll(client, job_id, running_midway)[-1]["status"] == "running"
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    left = list(settings.EXPORT_TMP_DIR.iterdir())
    assert [folder.name.split("-")[:2] for folder in left] == [["exportjob", str(job_id)]]
    assert any(path.is_file() for path in left[0].rglob("*"))  # the partial export is really there

    env = {**worker_env, "JOB_STALE_SECONDS": "2", "EXPORT_SWEEP_SECONDS": "1"}
    with (
        celery_worker(env, tmp_path / "sweeper.log"),
        celery_beat(env, tmp_path / "beat.log", tmp_path / "beat-schedule"),
    ):
        wait_until(lambda: not left[0].exists(), 60, 0.1, "the sweep to remove the killed job's folder")
        other = client.post(EXPORTS, {"project": "alpha", "format": "mind2web"}, format="json").json()["id"]
        assert poll(client, other, ended)[-1]["status"] == "done"

    assert ExportJob.objects.get(pk=job_id).status == JobStatus.FAILED
    assert list(settings.EXPORT_TMP_DIR.iterdir()) == []


def test_a_running_job_can_be_cancelled_and_the_worker_goes_on_with_the_next(client, worker, alpha, media_storage):
    ingest_corpus(project="alpha", demos=10, turns=30, elements=1200, seed=8)

    first = client.post(EXPORTS, {"project": "alpha", "format": "weblinx"}, format="json").json()["id"]
    poll(client, first, running_midway)
    cancelled = client.post(f"{EXPORTS}{first}/cancel/")
    second = client.post(
        EXPORTS, {"project": "alpha", "format": "mind2web", "archive_format": "zip"}, format="json"
    ).json()["id"]
    done = poll(client, second, ended)[-1]

    assert cancelled.status_code == 200
    assert ExportJob.objects.get(pk=first).status == JobStatus.CANCELLED
    assert not ExportJob.objects.get(pk=first).file
    assert done["status"] == "done", done["error"]
    assert [p.name for p in exported_files(media_storage)] == [f"alpha-mind2web-{second}.zip"]


def gold_clicks(client, demos):
    """``(split, predictions)``: a perfect click prediction for every click of the demos of one split — a split that
    has clicks (demo names are random, so which split a demo falls in varies from run to run)."""
    listed = client.get("/api/demonstrations/", {"project__name": "alpha", "page_size": 100}).json()["results"]
    for split in dict.fromkeys(row["split"] for row in listed):
        predictions = []
        for demo in (d for d in demos if any(r["name"] == d.name and r["split"] == split for r in listed)):
            for index, turn in enumerate(demo.turns.order_by("timestamp", "seq")):
                if turn.intent == "click":
                    output = f'click(uid="{turn.element_uid}")'
                    predictions.append({"demo_name": demo.name, "turn_index": index, "output_predicted": output})
        if predictions:
            return split, predictions
    raise AssertionError(f"no split of {[row['name'] for row in listed]} has a click")


def test_an_evaluation_is_scored_on_the_worker_and_bad_predictions_fail_with_a_reason(client, worker, alpha):
    demos = ingest_corpus(project="alpha", demos=3, turns=24, elements=60, seed=9)
    split, predictions = gold_clicks(client, demos)
    assert predictions

    good = client.post(
        "/api/evaluations/",
        {"project": "alpha", "format": "weblinx", "split": split, "predictions": predictions},
        format="json",
    )
    bad = client.post(
        "/api/evaluations/",
        {
            "project": "alpha",
            "format": "weblinx",
            "split": split,
            "predictions": [{"demo_name": "zzzzzzz", "turn_index": 0, "output_predicted": 'click(uid="x")'}],
        },
        format="json",
    )
    good_result = poll_evaluation(client, good.json()["id"])
    bad_result = poll_evaluation(client, bad.json()["id"])

    assert (good.status_code, bad.status_code) == (202, 202)
    assert good_result["status"] == "done", good_result["error"]
    aggregate = good_result["results"]["aggregate"]
    assert aggregate["intent_match"] == 1.0
    assert aggregate["element_group"] == 1.0
    assert aggregate["overall"] == 1.0
    assert len(good_result["results"]["per_turn"]) <= len(predictions)
    listed = client.get("/api/demonstrations/", {"project__name": "alpha", "split": split, "status": "validated"})
    split_turns = sum(demo["turn_count"] for demo in listed.json()["results"])
    coverage, outside = good_result["results"]["coverage"], good_result["results"]["outside"]
    assert 0 < coverage["predicted"] <= coverage["turns"] < split_turns  # the official turns: no hover, tab, instructor
    assert coverage["predicted"] == len(predictions) - len(outside)
    assert len(good_result["data_version"]) == 64
    assert bad_result["data_version"] == ""  # nothing was scored
    assert bad_result["status"] == "failed"
    assert "prediction 0" in bad_result["error"]
    assert "zzzzzzz" in bad_result["error"]


def test_an_evaluation_records_the_data_version_it_scored(client, worker, alpha):
    demos = ingest_corpus(project="alpha", demos=3, turns=12, elements=30, seed=4)
    split, predictions = gold_clicks(client, demos)
    body = {"project": "alpha", "format": "weblinx", "split": split}

    first_id = client.post("/api/evaluations/", {**body, "predictions": predictions}, format="json").json()["id"]
    first = poll_evaluation(client, first_id)
    again = client.post("/api/evaluations/", {**body, "predictions": predictions[:1]}, format="json").json()["id"]
    same_data = poll_evaluation(client, again)
    edited = [d for d in demos if any(p["demo_name"] == d.name for p in predictions)][0]
    type(edited).objects.filter(pk=edited.pk).update(task_description="A changed task")
    changed = poll_evaluation(
        client, client.post("/api/evaluations/", {**body, "predictions": predictions}, format="json").json()["id"]
    )

    assert first["status"] == same_data["status"] == changed["status"] == "done"
    assert same_data["data_version"] == first["data_version"]
    assert same_data["results"]["coverage"]["predicted"] == 1
    assert changed["data_version"] != first["data_version"]


def poll_evaluation(client, evaluation_id, timeout=120):
    return poll_job(client, f"/api/evaluations/{evaluation_id}/", ended, timeout)[-1]


def test_a_turkingbench_export_with_filters_runs_on_the_worker(client, worker, alpha, owner, teammate):
    """The form batches' export on the real worker: only the chosen batch, only approved work, no gold rows, cells
    verbatim (a worker's answer beginning with - stays as typed)."""
    admin = make_user("boss", alpha, Role.ADMIN)
    template, text = '<p>${word}</p><input type="text" name="label">', "word,Answer.label\nred,gold\n"
    chosen, other = (make_batch(alpha, admin, template, text, name, assignments_per_task=2) for name in "ab")
    for worker, label in ((owner, "-3_Very_Informal"), (teammate, "=rejected")):
        for batch in (chosen, other):
            forms.do_submit(forms.do_accept_next(worker, batch).pk, {"label": label})
    do_decide(admin, check_reviewable(admin, list(owner.assignments.values_list("pk", flat=True))), "approve")
    do_decide(admin, check_reviewable(admin, list(teammate.assignments.values_list("pk", flat=True))), "reject", "no")
    body = {"project": "alpha", "format": "turkingbench", "batches": [chosen.pk], "review_states": ["approved"]}
    created = client.post(EXPORTS, {**body, "include_gold": False, "exact_cells": True}, format="json")
    assert created.status_code == 202, created.json()
    final = poll(client, created.json()["id"], ended)[-1]
    assert final["status"] == "done", final["error"]
    assert final["counts"]["rows"] == 1
    data = b"".join(client.get(final["download_url"]).streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        files = {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert "tasks/b/batch.csv" not in files
    assert files["tasks/a/batch.csv"].decode("utf-8-sig") == "word,Answer.label\nred,-3_Very_Informal\n"
