"""Prediction runs as a job, from the API and the web page: a researcher stores a model endpoint (the stand-in
model server on loopback), starts a Mind2Web and a WebLINX run on the project's demonstrations, the worker's job
exports the split, asks the model, keeps the predictions and the unreadable answers, and evaluates them; a second
researcher reads them and compares two runs side by side; other roles and projects are refused; the key is never
shown; an unreachable endpoint fails the run with its reason."""

import json

import pytest
from django.test import Client

from annotation.models import JobStatus, PredictionRun, Project, Role
from devtools.standin_model import standin_model
from tests.support.actors import make_user
from tests.support.corpus import ingest_corpus
from workers.agents.predict_runs import run_prediction
from workers.exports.dataset import export_demos, storage_blobs
from workers.exports.exporters import get_exporter
from workers.exports.metrics.weblinx_data import split_turns

pytestmark = pytest.mark.django_db

RUNS = "/api/prediction-runs/"
KEY = "sk-prediction-key-777"


@pytest.fixture(autouse=True)
def private_endpoints(settings):
    """The stand-in model is on loopback: allowed here (``MODEL_ENDPOINTS_ALLOW_PRIVATE``)."""
    settings.MODEL_ENDPOINTS_ALLOW_PRIVATE = True


@pytest.fixture
def world(tmp_path):
    """The corpus project with two researchers, an annotator, an outsider; the split with the most steps."""
    project = ingest_corpus(project="corpus", demos=3, turns=24, elements=20, seed=5)[0].project
    people = {
        "rex": make_user("rex", project, Role.RESEARCHER),
        "rita": make_user("rita", project, Role.RESEARCHER),
        "ann": make_user("ann", project, Role.ANNOTATOR),
        "olga": make_user("olga", Project.objects.create(name="other"), Role.RESEARCHER),
    }
    splits = {}
    for fmt in ("mind2web", "weblinx"):
        out = tmp_path / fmt
        get_exporter(fmt).export(export_demos(project, fmt), out, storage_blobs())
        if fmt == "mind2web":
            sizes = {p.stem: len(json.loads(p.read_text())) for p in out.glob("*.json") if p.stem != "quality"}
        else:
            sizes = {k: len(v) for k, v in json.loads((out / "splits.json").read_text()).items()}
        splits[fmt] = max(sizes, key=sizes.get)
    return project, people, splits


def add_endpoint(api, url, name="stand-in"):
    response = api.post(
        "/api/model-endpoints/",
        {"project": "corpus", "name": name, "url": url, "model": "m1", "key": KEY},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def start(api, **body):
    return api.post(RUNS, {"project": "corpus", "endpoint": "stand-in", **body}, format="json")


def test_runs_from_the_api_are_made_evaluated_read_and_compared(
    world, api_for, django_capture_on_commit_callbacks, tmp_path
):
    project, people, splits = world
    rex, rita = api_for(people["rex"]), api_for(people["rita"])
    with standin_model(default="text:Answer: B.\nAction: CLICK\nValue:") as server:
        add_endpoint(rex, server.url)
        created = []
        runs = [("mind2web", {"candidates": 5}), ("mind2web", {"candidates": 1}), ("weblinx", {})]
        for fmt, body in [*runs, ("weblinx", {"turns": "all"})]:
            with django_capture_on_commit_callbacks(execute=False):  # the worker is this test: run it below
                response = start(rex, format=fmt, split=splits[fmt], in_flight=2, **body)
            assert response.status_code == 202, response.content
            assert response.json()["status"] == "queued"
            created.append(response.json()["id"])
            run_prediction(created[-1])
    assert all(request["authorization"] == f"Bearer {KEY}" for request in server.requests)

    for run_id in created:
        for reader in (rex, rita):  # the second researcher reads them too
            body = reader.get(f"{RUNS}{run_id}/").json()
            assert body["status"] == JobStatus.DONE, body["error"]
            assert KEY not in json.dumps(body)
            assert body["predicted"] == len(reader.get(f"{RUNS}{run_id}/predictions/").json())
    m2w = rex.get(f"{RUNS}{created[0]}/").json()
    assert m2w["predicted"] == m2w["usage"]["items"] > 10
    assert m2w["failures"] == []
    assert set(m2w["results"]["aggregate"]) >= {"element_accuracy", "operation_f1", "step_success_rate"}
    weblinx = rex.get(f"{RUNS}{created[2]}/").json()
    assert len(weblinx["failures"]) == weblinx["predicted"]  # "Answer: B" is no WebLINX action: recorded, scored 0
    assert weblinx["failures"][0]["answer"].startswith("Answer: B.")
    assert weblinx["results"]["aggregate"]["intent_match"] == 0
    # By default the turns the official code predicts, scored by the official protocol; "all" is an option.
    every = rex.get(f"{RUNS}{created[3]}/").json()
    assert (weblinx["turns"], every["turns"]) == ("official", "all")
    assert (weblinx["results"]["turns"], weblinx["results"]["rounding"]) == ("official", "official")
    assert every["results"]["turns"] == "all"
    assert weblinx["usage"]["items"] == len(split_turns(tmp_path / "weblinx", splits["weblinx"])) > 0
    assert every["usage"]["items"] > weblinx["usage"]["items"]

    # The pages: the list, a run with its scores and unreadable answers, its file, and two runs side by side.
    page = Client()
    page.force_login(people["rita"])
    listing = page.get("/agents/predictions/").content.decode()
    assert all(f'data-run="{run_id}"' in listing for run_id in created)
    detail = page.get(f"/agents/predictions/{created[2]}/").content.decode()
    assert 'id="failures"' in detail
    assert "no action the evaluator knows" in detail
    assert 'data-metric="intent_match"' in detail
    assert KEY not in detail
    download = page.get(f"/agents/predictions/{created[0]}/predictions.json")
    assert download["Content-Disposition"].startswith("attachment;")
    assert download["Cache-Control"] == "private, no-store"  # whole model answers: kept by no cache
    assert json.loads(download.content) == PredictionRun.objects.get(pk=created[0]).predictions
    failures = page.get(f"/agents/predictions/{created[2]}/failures.json")
    assert failures["Content-Disposition"].startswith("attachment;")
    assert failures["Cache-Control"] == "private, no-store"
    assert json.loads(failures.content) == PredictionRun.objects.get(pk=created[2]).failures
    compare = page.get("/agents/predictions/compare/", {"a": created[0], "b": created[1]}).content.decode()
    a, b = (PredictionRun.objects.get(pk=pk).results["aggregate"] for pk in created[:2])
    assert (
        f'<tr data-metric="element_accuracy"><th>element_accuracy</th><td>{a["element_accuracy"]:.4f}</td>' in compare
    )
    assert f"<td>{b['element_accuracy']:.4f}</td>" in compare
    assert 'id="split-warning"' not in compare
    assert (
        'id="split-warning"'
        in page.get("/agents/predictions/compare/", {"a": created[0], "b": created[2]}).content.decode()
    )
    assert page.get("/agents/predictions/compare/", {"a": created[0]}).status_code == 400
    other_turns = page.get("/agents/predictions/compare/", {"a": created[2], "b": created[3]}).content.decode()
    assert 'id="split-warning"' in other_turns
    assert "all turns" in page.get(f"/agents/predictions/{created[3]}/").content.decode()


def test_the_page_starts_a_run_and_bad_settings_are_named(world, api_for, django_capture_on_commit_callbacks):
    project, people, splits = world
    add_endpoint(api_for(people["rex"]), "http://127.0.0.1:9/v1")
    page = Client()
    page.force_login(people["rex"])
    form = {"project": "corpus", "endpoint": "stand-in", "format": "mind2web", "split": splits["mind2web"]}
    with django_capture_on_commit_callbacks(execute=False):
        response = page.post("/agents/predictions/", {**form, "in_flight": "3", "evaluate": "on"})
    run = PredictionRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/agents/predictions/{run.pk}/"
    assert (run.in_flight, run.evaluate, run.owner, run.endpoint_name) == (3, True, people["rex"], "stand-in")
    refused = page.post("/agents/predictions/", {**form, "in_flight": "0"}, follow=True).content.decode()
    assert "in_flight: expected a whole number from 1 to 64" in refused
    assert (
        "not a number"
        in page.post("/agents/predictions/", {**form, "temperature": "hot"}, follow=True).content.decode()
    )
    assert PredictionRun.objects.count() == 1
    refused = page.post("/agents/predictions/", {**form, "turns": "all"}, follow=True).content.decode()
    assert "turns: Mind2Web asks about every step" in refused
    weblinx = {**form, "format": "weblinx", "split": splits["weblinx"], "turns": "all"}
    with django_capture_on_commit_callbacks(execute=False):
        page.post("/agents/predictions/", weblinx)
    assert PredictionRun.objects.get(format="weblinx").turns == "all"

    # The endpoint cannot be reached: the run fails with the reason, on its page; the key is not in it.
    run_prediction(run.pk)
    run.refresh_from_db()
    assert run.status == JobStatus.FAILED
    assert "the model endpoint failed" in run.error
    assert KEY not in run.error
    assert run.error in page.get(f"/agents/predictions/{run.pk}/").content.decode()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"format": "turkingbench", "split": "test_easy"}, "format"),
        ({"format": "mind2web", "split": "valid"}, "split"),
        ({"format": "weblinx", "split": "valid", "endpoint": "nope"}, "endpoint"),
        ({"format": "weblinx", "split": "valid", "in_flight": 0}, "in_flight"),
        ({"format": "weblinx", "split": "valid", "temperature": 9}, "temperature"),
        ({"format": "mind2web", "split": "train", "candidates": 99}, "candidates"),
        ({"format": "weblinx", "split": "valid", "turns": "some"}, "turns"),
        ({"format": "mind2web", "split": "train", "turns": "all"}, "turns"),
        ({"format": "weblinx", "split": "valid", "max_token": 9}, "max_token"),
    ],
)
def test_a_bad_request_is_a_400_naming_the_field_and_stores_nothing(world, api_for, body, field):
    project, people, _ = world
    add_endpoint(api_for(people["rex"]), "http://127.0.0.1:9/v1")
    response = start(api_for(people["rex"]), **body)
    assert response.status_code == 400, response.content
    assert field in [error["field"] for error in response.json()["errors"]]
    assert not PredictionRun.objects.exists()


def test_only_researchers_and_admins_of_the_project_start_or_see_runs(world, api_for):
    project, people, splits = world
    add_endpoint(api_for(people["rex"]), "http://127.0.0.1:9/v1")
    body = {"format": "weblinx", "split": splits["weblinx"]}
    assert start(api_for(people["ann"]), **body).status_code == 403
    assert start(api_for(people["olga"]), **body).status_code == 404
    run = PredictionRun.objects.create(project=project, owner=people["rex"], format="weblinx", split="valid")
    assert api_for(people["olga"]).get(f"{RUNS}{run.pk}/").status_code == 404
    assert api_for(people["ann"]).get(f"{RUNS}{run.pk}/").status_code == 403  # another role of the project
    annotator_page = Client()
    annotator_page.force_login(people["ann"])
    assert annotator_page.get(f"/agents/predictions/{run.pk}/").status_code == 403
    assert api_for(people["rex"]).get(RUNS, {"split": "valid"}).status_code == 200
    refused = api_for(people["rex"]).get(RUNS, {"split": "zzz"})
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "split"
    page = Client()
    page.force_login(people["olga"])
    assert page.get(f"/agents/predictions/{run.pk}/").status_code == 404
    assert f'data-run="{run.pk}"' not in page.get("/agents/predictions/").content.decode()
    cancel = api_for(people["rita"]).post(f"{RUNS}{run.pk}/cancel/")
    assert cancel.status_code == 403  # a colleague's run
    assert api_for(people["rex"]).post(f"{RUNS}{run.pk}/cancel/").json()["status"] == "cancelled"
