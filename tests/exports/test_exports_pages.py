"""Research pages: the splits report (configuration for admins), exports started, followed, cancelled and
downloaded from the UI, and evaluations uploaded and read there; per-role access. (The worker side, with a real
Celery worker: test_export_worker.py; in Chromium: manage/test_manage_ui.py.)"""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Evaluation, ExportJob, JobStatus, Role, SplitConfig
from tests.support.actors import make_user, signed_in, start_demo

pytestmark = pytest.mark.django_db


# --- Splits ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", list(Role))
def test_every_member_reads_the_splits_report(alpha, role):
    user = make_user(f"m-{role}", alpha, role)
    start_demo(user, alpha, sees_screen=False, status="validated")
    response = signed_in(user).get("/projects/alpha/splits/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="report-weblinx"' in html
    assert 'id="report-mind2web"' in html
    assert '<td class="num" data-split="test_vis">1</td>' in html
    assert ('id="split-config-form"' in html) == (role == Role.ADMIN)


def test_the_report_counts_the_chosen_statuses_and_refuses_unknown_ones(admin, alpha):
    start_demo(admin, alpha, sees_screen=False, status="recorded")
    client = signed_in(admin)
    assert '<td class="num" data-split="test_vis">0</td>' in client.get("/projects/alpha/splits/").content.decode()
    chosen = client.get("/projects/alpha/splits/?statuses=recorded&statuses=validated").content.decode()
    assert '<td class="num" data-split="test_vis">1</td>' in chosen
    bad = client.get("/projects/alpha/splits/?statuses=bogus")
    assert bad.status_code == 400
    assert "statuses[0]" in bad.content.decode()


def config_form(**fields):
    form = {"seed": "3", "valid_fraction": "0.2", "test_iid_fraction": "0.1", "test_task_fraction": "0.2"}
    form.update(held_out_websites="a.example\n b.example \n", held_out_regions="", held_out_subcategories="")
    form.update(held_out_domains="")
    return {**form, **fields}


def test_an_admin_changes_the_configuration_through_the_apis_rules(admin, alpha):
    response = signed_in(admin).post("/projects/alpha/splits/", config_form())
    assert response.status_code == 302
    config = SplitConfig.for_project(alpha)
    assert (config.seed, config.valid_fraction, config.held_out_websites) == (3, 0.2, ["a.example", "b.example"])
    refused = signed_in(admin).post("/projects/alpha/splits/", config_form(test_iid_fraction="0.9"))
    assert refused.status_code == 400
    assert "valid_fraction + test_iid_fraction exceed 1" in refused.content.decode()
    assert SplitConfig.for_project(alpha).test_iid_fraction == 0.1
    for seed in ("2147483648", "99999999999999999999"):  # a seed the column cannot hold: the field named, none stored
        too_big = signed_in(admin).post("/projects/alpha/splits/", config_form(seed=seed))
        assert too_big.status_code == 400
        assert "expected a whole number from -2147483648 to 2147483647" in too_big.content.decode()
    assert SplitConfig.for_project(alpha).seed == 3


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.REVIEWER, Role.RESEARCHER])
def test_only_admins_change_the_configuration(alpha, role):
    user = make_user(f"m-{role}", alpha, role)
    assert signed_in(user).post("/projects/alpha/splits/", config_form(seed="9")).status_code == 403
    assert SplitConfig.for_project(alpha).seed == 0


# --- Exports --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("role", "status"), [(Role.ANNOTATOR, 403), (Role.REVIEWER, 403), (Role.RESEARCHER, 200)])
def test_researchers_and_admins_open_the_export_and_evaluation_pages(alpha, role, status):
    user = make_user(f"m-{role}", alpha, role)
    assert signed_in(user).get("/projects/alpha/exports/").status_code == status
    assert signed_in(user).get("/projects/alpha/evaluations/").status_code == status


def test_an_export_started_from_the_page_is_queued_and_followed(researcher, django_capture_on_commit_callbacks):
    form = {"format": "mind2web", "splits": "train, test_task", "statuses": ["validated", "rejected"]}
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = signed_in(researcher).post("/projects/alpha/exports/", {**form, "archive_format": "zip"})
    job = ExportJob.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/projects/alpha/exports/{job.pk}/"
    assert (job.format, job.splits, job.statuses, job.archive_format) == (
        "mind2web",
        ["train", "test_task"],
        ["validated", "rejected"],
        "zip",
    )
    assert len(callbacks) == 1
    page = signed_in(researcher).get(response["Location"]).content.decode()
    assert f'data-job-url="/api/exports/{job.pk}/"' in page
    assert 'id="cancel-job"' in page
    assert f'href="/api/exports/{job.pk}/download/"' in page  # shown once the poll says done


def test_a_bad_split_is_refused_on_the_form_naming_it(researcher):
    form = {"format": "weblinx", "splits": "tset", "statuses": ["validated"], "archive_format": "tar.gz"}
    response = signed_in(researcher).post("/projects/alpha/exports/", form)
    assert response.status_code == 400
    assert "splits[0] &#x27;tset&#x27; is not allowed" in response.content.decode()
    assert not ExportJob.objects.exists()


def test_a_job_is_cancelled_from_its_page_once(researcher, alpha):
    job = ExportJob.objects.create(project=alpha, owner=researcher, format="weblinx", statuses=["validated"])
    client = signed_in(researcher)
    assert client.post(f"/projects/alpha/exports/{job.pk}/cancel").status_code == 302
    assert ExportJob.objects.get(pk=job.pk).status == JobStatus.CANCELLED
    again = client.post(f"/projects/alpha/exports/{job.pk}/cancel", follow=True)
    assert "already cancelled" in again.content.decode()


@pytest.mark.parametrize("kind", ["exports", "evaluations"])
def test_a_colleagues_job_offers_no_cancel_and_refuses_one(researcher, alpha, kind):
    if kind == "exports":
        job = ExportJob.objects.create(project=alpha, owner=researcher, format="weblinx", statuses=["validated"])
    else:
        job = Evaluation.objects.create(
            project=alpha, owner=researcher, format="weblinx", split="valid", predictions=[]
        )
    colleague = signed_in(make_user("colleague", alpha, Role.RESEARCHER))

    page = colleague.get(f"/projects/alpha/{kind}/{job.pk}/")
    assert page.status_code == 200
    assert 'id="cancel-job"' not in page.content.decode()
    assert colleague.post(f"/projects/alpha/{kind}/{job.pk}/cancel").status_code == 403
    assert type(job).objects.get(pk=job.pk).status == JobStatus.QUEUED
    admin = signed_in(make_user("boss", alpha, Role.ADMIN))
    assert 'id="cancel-job"' in admin.get(f"/projects/alpha/{kind}/{job.pk}/").content.decode()
    assert admin.post(f"/projects/alpha/{kind}/{job.pk}/cancel").status_code == 302
    assert type(job).objects.get(pk=job.pk).status == JobStatus.CANCELLED


def test_jobs_of_another_project_are_not_found(researcher, beta, outsider):
    job = ExportJob.objects.create(project=beta, owner=outsider, format="weblinx", statuses=["validated"])
    client = signed_in(researcher)
    assert client.get(f"/projects/alpha/exports/{job.pk}/").status_code == 404
    assert client.post(f"/projects/alpha/exports/{job.pk}/cancel").status_code == 404
    assert client.get(f"/projects/beta/exports/{job.pk}/").status_code == 404
    assert ExportJob.objects.get(pk=job.pk).status == JobStatus.QUEUED


def test_the_export_list_shows_dates_with_years_and_downloads(researcher, alpha):
    job = ExportJob.objects.create(
        project=alpha, owner=researcher, format="weblinx", status=JobStatus.DONE, file="exports/a.tar.gz", size=10
    )
    html = signed_in(researcher).get("/projects/alpha/exports/").content.decode()
    assert f"{job.created_at:%Y-%m-%d %H:%M}" in html
    assert f'href="/api/exports/{job.pk}/download/"' in html


# --- Evaluations ----------------------------------------------------------------------------------------------


def predictions_file(content) -> SimpleUploadedFile:
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    return SimpleUploadedFile("results.json", data, content_type="application/json")


def test_predictions_uploaded_from_the_page_are_queued(researcher, django_capture_on_commit_callbacks):
    rows = [{"demo_name": "abcdefg", "turn_index": 1, "output_predicted": 'click(uid="u")'}]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = signed_in(researcher).post(
            "/projects/alpha/evaluations/",
            {"format": "weblinx", "split": "test_iid", "predictions": predictions_file(rows)},
        )
    evaluation = Evaluation.objects.get()
    assert response["Location"] == f"/projects/alpha/evaluations/{evaluation.pk}/"
    assert (evaluation.split, evaluation.predictions, len(callbacks)) == ("test_iid", rows, 1)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"predictions": b"not json"}, "not a JSON file"),
        ({"predictions": []}, "expected a non-empty list of predictions"),
        ({"split": "test_task"}, "expected one of: train, valid"),  # a Mind2Web split for WebLINX
    ],
)
def test_bad_uploads_are_refused_on_the_form(researcher, fields, message):
    form = {"format": "weblinx", "split": "test_iid", "predictions": [{"demo_name": "x"}], **fields}
    form["predictions"] = predictions_file(form["predictions"])
    response = signed_in(researcher).post("/projects/alpha/evaluations/", form)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Evaluation.objects.exists()


def test_a_finished_evaluation_shows_its_scores_coverage_and_data_version(researcher, alpha):
    evaluation = Evaluation.objects.create(
        project=alpha,
        owner=researcher,
        format="weblinx",
        split="test_iid",
        predictions=[],
        status=JobStatus.DONE,
        progress=1.0,
        data_version="ab" * 32,
        results={"aggregate": {"overall": 0.5, "intent_match": 1.0}, "coverage": {"turns": 40, "predicted": 12}},
    )
    html = signed_in(researcher).get(f"/projects/alpha/evaluations/{evaluation.pk}/").content.decode()
    assert '<dd id="coverage">12 of 40</dd>' in html
    assert "ab" * 32 in html
    assert '<tr data-metric="overall"><td>overall</td><td class="num">0.5000</td></tr>' in html
    assert 'id="cancel-job"' in html
    assert 'data-status="done"' in html


def test_predictions_over_the_body_limit_are_refused_on_the_form(researcher, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    rows = [{"demo_name": "abcdefg", "turn_index": index, "output_predicted": 'click(uid="u")'} for index in range(9)]
    form = {"format": "weblinx", "split": "test_iid", "predictions": predictions_file(rows)}
    response = signed_in(researcher).post("/projects/alpha/evaluations/", form)
    assert response.status_code == 400
    assert "over the limit of 100 bytes" in response.text
    assert not Evaluation.objects.exists()


def test_an_evaluation_shows_counts_as_whole_numbers_and_its_per_turn_scores(researcher, alpha):
    rows = [
        {"demo_name": "demo-a", "turn_index": 1, "intent": "click", "intent_match": 1, "iou": 0.123456, "score": 0.5},
        {"demo_name": "demo-a", "turn_index": 3, "intent": "say", "intent_match": 0, "iou": None, "score": 0},
    ]
    evaluation = Evaluation.objects.create(
        project=alpha,
        owner=researcher,
        format="weblinx",
        split="test_iid",
        predictions=[],
        status=JobStatus.DONE,
        progress=1.0,
        results={
            "aggregate": {"overall": 0.25, "turns": 11},
            "per_turn": rows,
            "coverage": {"turns": 2, "predicted": 2},
        },
    )
    html = signed_in(researcher).get(f"/projects/alpha/evaluations/{evaluation.pk}/").content.decode()
    assert '<tr data-metric="turns"><td>turns</td><td class="num">11</td></tr>' in html
    assert "11.0000" not in html
    assert '<table class="list" id="per-turn-scores">' in html
    assert "<th>turn index</th>" in html
    # demo, turn, intent, then the scores by name: intent match, iou, score
    assert "<td>demo-a</td><td>3</td><td>say</td><td>0</td><td>–</td><td>0</td>" in html
    assert "<td>0.1235</td>" in html


def test_an_exports_counts_are_tables_not_a_dict(researcher, alpha):
    counts = {
        "demos": 3,
        "turns": 40,
        "files": 12,
        "per_split": {"train": {"demos": 2, "turns": 30}, "test_iid": {"demos": 1, "turns": 10}},
        "per_check": {"issues": 4, "share": 0.25},
        "quality": {"items": 3, "by_status": {"validated": 3}},
    }
    job = ExportJob.objects.create(
        project=alpha, owner=researcher, format="weblinx", status=JobStatus.DONE, file="exports/a.tar.gz", counts=counts
    )
    html = signed_in(researcher).get(f"/projects/alpha/exports/{job.pk}/").content.decode()
    assert "{&#x27;" not in html
    assert "{'" not in html  # no Python dict
    assert '<table class="list counts" data-counts="Totals">' in html
    assert '<tr><th>turns</th><td class="num">40</td></tr>' in html
    assert '<tr><th>train</th><td class="num">2</td><td class="num">30</td></tr>' in html
    assert '<tr><th>share</th><td class="num">0.2500</td></tr>' in html
    assert 'data-counts="quality"' not in html  # the quality report's totals have their own block
    assert 'id="quality-summary"' in html
