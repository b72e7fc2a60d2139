"""Agent runs end to end through the REST API, on a real Celery worker with its own headless Chromium: the oracle
on real TurkingBench tasks, a solver that raises, and a cancel."""

import time

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import AgentFieldResult, AgentRun, AgentRunInstance, JobStatus
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text
from tests.support.forms_data import make_batch, task_dir, turkingbench_root
from tests.support.jobs import job_ended as ended
from tests.support.jobs import poll_job
from tests.support.loopback import loopback_server

pytestmark = [pytest.mark.browser, pytest.mark.processes, pytest.mark.django_db(transaction=True)]
RUNS = "/api/agent-runs/"
REAL_TASKS = ("Formalize sentence", "Event effect")  # both in test_easy


@pytest.fixture
def gate(tmp_path):
    folder = tmp_path / "gate"
    folder.mkdir()
    return folder


@pytest.fixture
def worker_env(worker_env, settings, gate):
    """The worker also loads the test's solvers, which wait on ``gate``."""
    settings.AGENT_SOLVER_MODULES = ["agents", "tests.support.agent_solvers"]
    return {**worker_env, "AGENT_SOLVER_MODULES": "agents,tests.support.agent_solvers", "AGENT_TEST_GATE": str(gate)}


@pytest.fixture
def client(researcher, api_for):
    return api_for(researcher)


@pytest.fixture
def form_batch(alpha):
    return make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")


def poll(client, run_id, until=ended, timeout=240):
    return poll_job(client, f"{RUNS}{run_id}/", until, timeout)


def start(client, **body):
    response = client.post(RUNS, {"project": "alpha", **body}, format="json")
    assert response.status_code == 202, response.json()
    return response.json()["id"]


def test_the_oracle_through_the_api_scores_every_real_instance_above_099_with_rising_progress(client, worker, alpha):
    root = turkingbench_root()
    dirs = [str(task_dir(name)) for name in REAL_TASKS]
    call_command("import_turkingbench", *dirs, project="alpha", splits=str(root / "splits"), stdout=None)

    run_id = start(client, split="test_easy", solver="oracle", instances=2, seed=3)
    seen = poll(client, run_id, ended)

    final = seen[-1]
    assert final["status"] == "done", final["error"]
    assert [body["progress"] for body in seen] == sorted(body["progress"] for body in seen)
    assert final["progress"] == 1.0
    assert sorted(final["sampled"]) == sorted(REAL_TASKS)
    assert all(len(indices) == 2 for indices in final["sampled"].values())
    results = final["results"]
    assert results["metric"] == "official"
    assert results["solver"] == "oracle"
    assert results["seed"] == 3
    assert len(results["instances"]) == 4
    assert all(instance["score"] > 0.99 for instance in results["instances"]), results["instances"]
    assert set(results["tasks"]) == set(REAL_TASKS)
    assert results["overall"] > 0.99
    rows = AgentRunInstance.objects.filter(run_id=run_id)
    assert rows.count() == 4
    for row in rows:
        assert row.task is not None
        assert row.task.index == row.instance
        assert row.task.batch.name == row.task_name
        assert row.screenshot.read()[:8] == b"\x89PNG\r\n\x1a\n"
    scored = AgentFieldResult.objects.filter(row__run_id=run_id, skipped="")
    assert scored.count() == len(results["fields"]) > 0
    assert all(field.gold and field.calls for field in scored)
    page = client.get(f"{RUNS}{run_id}/fields/", {"page_size": 3}).json()
    assert page["count"] == AgentFieldResult.objects.filter(row__run_id=run_id).count()
    assert len(page["results"]) == 3
    assert {"task", "instance", "name", "type", "value", "gold", "score", "calls"} <= set(page["results"][0])


def test_a_solver_that_raises_scores_its_field_untouched_and_the_run_goes_on(client, worker, form_batch):
    run_id = start(client, split="all", solver="python:tests.support.agent_solvers:RaisesOnRadio", seed=0)
    final = poll(client, run_id, ended)[-1]

    assert final["status"] == "done", final["error"]
    results = final["results"]
    assert [(i["task"], i["instance"]) for i in results["instances"]] == [("Form task", 0), ("Form task", 1)]
    assert {(e["instance"], e["field"], e["error"]) for e in results["errors"]} == {
        (instance, radio, "RuntimeError: model timed out") for instance in (0, 1) for radio in ("grade", "scripted")
    }
    grade = AgentFieldResult.objects.get(row__run_id=run_id, row__instance=0, name="grade")
    assert grade.value == ""
    assert grade.score == 0.0
    assert grade.error == "RuntimeError: model timed out"
    assert grade.gold == [-1, -1]
    colour = AgentFieldResult.objects.get(row__run_id=run_id, row__instance=0, name="colour")
    assert colour.value == "red"
    assert colour.score == 1.0
    assert colour.error == ""


def test_a_cancelled_run_stops_on_the_worker_and_stores_no_more_instances(client, worker, form_batch, gate):
    run_id = start(client, split="all", solver="python:tests.support.agent_solvers:Gate")
    deadline = time.monotonic() + 120
    while not (gate / "entered").exists():
        assert time.monotonic() < deadline, "the gate solver never ran"
        time.sleep(0.02)

    cancelled = client.post(f"{RUNS}{run_id}/cancel/")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    (gate / "release").write_text("1")
    # The solo worker runs one task at a time: once the next run is done, the cancelled one has stopped.
    after = start(client, split="all", solver="do-nothing", instances=1)
    assert poll(client, after, ended)[-1]["status"] == "done"

    run = AgentRun.objects.get(pk=run_id)
    assert run.status == JobStatus.CANCELLED
    assert run.results == {}
    assert run.progress < 1.0
    assert not AgentRunInstance.objects.filter(run_id=run_id).exists()
    again = client.post(f"{RUNS}{run_id}/cancel/")
    assert again.status_code == 409


def test_turkingbench_predictions_through_the_evaluations_api_are_scored_on_the_worker(client, worker, form_batch):
    predictions = [
        {"task": "Form task", "instance": 0, "fields": {"name": "Ann", "grade": "-1", "colour": "red"}},
        {"task": "Form task", "instance": 1, "fields": {"colour": "red"}},
    ]
    body = {"project": "alpha", "format": "turkingbench", "predictions": predictions}
    response = client.post("/api/evaluations/", body, format="json")
    assert response.status_code == 202, response.json()
    evaluation_id = response.json()["id"]

    final = poll_job(client, f"/api/evaluations/{evaluation_id}/", timeout=240)[-1]

    assert final["status"] == "done", final["error"]
    results = final["results"]
    assert results["metric"] == "official"
    scores = {(f["instance"], f["field"]): f["score"] for f in results["fields"]}
    assert scores[(0, "name")] == 1.0
    assert scores[(0, "grade")] == 1.0
    assert scores[(0, "colour")] == 1.0
    assert scores[(1, "colour")] == 0.0  # the gold is "2"
    assert [i["instance"] for i in results["instances"]] == [0, 1]


# A template whose scripts try every way a page reaches another service: a subresource, a synchronous XHR (the parser
# waits for it, so it is sent before the agent reads the page), fetch and a beacon. Its own script still runs: it
# sets the value of ``ran``, which the run then reads.
PROBING_TEMPLATE = """<p>${question}</p>
<input type="text" name="ran" value="">
<img src="SERVICE/image" alt="">
<script>
try { var xhr = new XMLHttpRequest(); xhr.open("GET", "SERVICE/xhr", false); xhr.send(); } catch (error) {}
try { fetch("SERVICE/fetch").catch(function () {}); } catch (error) {}
try { navigator.sendBeacon("SERVICE/beacon", "x"); } catch (error) {}
document.getElementsByName("ran")[0].setAttribute("value", "yes");
</script>
"""


def test_a_template_script_in_an_agent_run_cannot_reach_a_loopback_service(client, worker, alpha):
    with loopback_server() as service:
        template = PROBING_TEMPLATE.replace("SERVICE", service.url)
        make_batch(alpha, template=template, csv_text="question,Answer.ran\nDid it run?,yes\n", name="Probe")
        run_id = start(client, split="all", solver="do-nothing")
        final = poll(client, run_id, ended)[-1]

        assert final["status"] == "done", final["error"]
        assert service.requests == []
    fields = client.get(f"{RUNS}{run_id}/fields/").json()["results"]
    assert [(f["name"], f["value"], f["score"]) for f in fields] == [("ran", "yes", 1.0)]


LEAVING_TEMPLATE = """
<p>${question}</p>
<input type="text" name="ran" value="">
<script>location.href = "SERVICE/secret";</script>
"""


def test_a_template_that_navigates_to_a_loopback_service_ends_its_instances_and_the_service_hears_nothing(
    client, worker, alpha, form_batch, researcher
):
    def secret(request):
        return 200, {"Content-Type": "text/html"}, b"<body>the other service's secret</body>"

    with loopback_server(secret) as service:
        template = LEAVING_TEMPLATE.replace("SERVICE", service.url)
        make_batch(alpha, template=template, csv_text="question,Answer.ran\nfirst?,yes\nsecond?,yes\n", name="Leaves")
        run_id = start(client, split="all", solver="oracle")
        final = poll(client, run_id, ended)[-1]
        assert service.requests == []

    assert final["status"] == "done", final["error"]
    by_task = {}
    for instance in final["results"]["instances"]:
        by_task.setdefault(instance["task"], []).append(instance["score"])
    assert by_task["Leaves"] == [0.0, 0.0]
    assert all(score > 0.99 for score in by_task["Form task"])  # the run's other batch still scores
    fields = client.get(f"{RUNS}{run_id}/fields/", {"page_size": 100}).json()["results"]
    leaving = [(f["name"], f["value"], f["score"], f["skipped"]) for f in fields if f["task"] == "Leaves"]
    assert leaving == [("ran", None, None, "the page navigated away to another origin")] * 2
    assert "the page navigated away to another origin" in {s["reason"] for s in final["results"]["skipped"]}
    browser = Client()
    browser.force_login(researcher)
    for row in AgentRunInstance.objects.filter(run_id=run_id, task_name="Leaves"):
        page = browser.get(f"/agents/runs/{run_id}/instances/{row.pk}/")
        assert "not scored: the page navigated away to another origin" in page.content.decode()
        assert "No screenshot." in page.content.decode()  # nothing of the other page is kept
        assert browser.get(f"/agents/runs/{run_id}/instances/{row.pk}/screenshot.png").status_code == 404
