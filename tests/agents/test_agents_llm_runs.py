"""The ``llm`` solver in agent runs through the REST API, on a real Celery worker with real headless Chromium
browsers, against the deterministic stand-in model server on loopback (never the Internet): answering gold it
scores like the oracle on real TurkingBench tasks; nonsense is no field's error, malformed calls are the errors of
the fields they name; 429 with Retry-After, a 500 and a hang are retried; an unusable endpoint fails the run with
the reason on its page; a budget stops the run cleanly; a resumed run (after its worker was killed) never asks the
model again; the key never appears in a page, the API or the worker's log."""

import io
import os
import signal
import tarfile
import time

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import (
    AgentFieldResult,
    AgentModelAnswer,
    AgentRun,
    AgentRunInstance,
    ModelEndpoint,
    ModelLimits,
    Project,
)
from devtools.processes import celery_worker
from devtools.standin_model import gold_book, standin_model
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text, real_data
from tests.support.forms_data import make_batch, task_dir, turkingbench_root
from tests.support.jobs import job_ended as ended
from tests.support.jobs import poll_job

pytestmark = [pytest.mark.browser, pytest.mark.processes, pytest.mark.django_db(transaction=True)]
RUNS = "/api/agent-runs/"
KEY = "sk-llm-run-TOP-SECRET-55aa77"
# test_easy tasks whose pages show their inputs (so the stand-in tells the instance from the prompt); the last one
# builds its fields by script.
REAL_TASKS = ("ANLI Generation", "Event effect", "Simplicity rating")


@pytest.fixture(autouse=True)
def private_endpoints(settings):
    """The stand-in model is on loopback, which endpoints may reach only with ``MODEL_ENDPOINTS_ALLOW_PRIVATE``: on
    here, for the API, in-process runs and (``worker_env``) the worker."""
    settings.MODEL_ENDPOINTS_ALLOW_PRIVATE = True


@pytest.fixture
def worker_env(worker_env):
    return {**worker_env, "MODEL_ENDPOINTS_ALLOW_PRIVATE": "1"}


@pytest.fixture
def client(researcher, api_for):
    return api_for(researcher)


@pytest.fixture
def real_tasks(alpha):
    root = turkingbench_root()
    dirs = [str(task_dir(name)) for name in REAL_TASKS]
    call_command("import_turkingbench", *dirs, project="alpha", splits=str(root / "splits"), stdout=None)
    dataset = real_data()
    tasks = [dataset.task(name) for name in REAL_TASKS]
    return tasks, {task.name: list(range(len(task))) for task in tasks}


@pytest.fixture
def model(real_tasks):
    tasks, everything = real_tasks
    with standin_model(default="gold", book=gold_book(tasks, everything), retry_after=1) as server:
        yield server


@pytest.fixture
def endpoint(client, model):
    body = {"project": "alpha", "name": "stand-in", "url": model.url, "model": "stand-in", "key": KEY}
    response = client.post("/api/model-endpoints/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def start(client, **body):
    response = client.post(RUNS, {"project": "alpha", "split": "test_easy", **body}, format="json")
    assert response.status_code == 202, response.json()
    return response.json()["id"]


def finished(client, run_id, timeout=300):
    return poll_job(client, f"{RUNS}{run_id}/", ended, timeout)[-1]


def assert_key_nowhere(*texts):
    for text in texts:
        assert KEY not in text


def page(user, path) -> str:
    browser = Client()
    browser.force_login(user)
    response = browser.get(path)
    assert response.status_code == 200
    return response.content.decode()


def test_answering_gold_the_llm_solver_scores_like_the_oracle_with_its_cost_recorded(
    client, worker, endpoint, model, researcher, tmp_path
):
    llm_id = start(client, solver="llm", endpoint="stand-in", instances=2, seed=5, browsers=2, max_tokens=512)
    oracle_id = start(client, solver="oracle", instances=2, seed=5, browsers=2)
    llm, oracle = finished(client, llm_id), finished(client, oracle_id)

    assert llm["status"] == "done", llm["error"]
    assert oracle["status"] == "done", oracle["error"]
    assert llm["sampled"] == oracle["sampled"]
    instances = llm["results"]["instances"]
    assert len(instances) == 6
    assert all(instance["score"] > 0.99 for instance in instances), instances
    assert [i["score"] for i in instances] == pytest.approx([i["score"] for i in oracle["results"]["instances"]])
    assert llm["results"]["overall"] > 0.99
    assert llm["results"]["errors"] == []
    # One model call per page, each recorded on the field that asked it and summed on the run.
    assert model.counts["gold"] == 6
    assert llm["model_calls"] == 6
    assert llm["cached_calls"] == 0
    fields = AgentFieldResult.objects.filter(row__run_id=llm_id)
    assert llm["tokens_in"] == sum(f.tokens_in for f in fields) > 0
    assert llm["tokens_out"] == sum(f.tokens_out for f in fields) > 0
    assert sum(1 for f in fields if f.tokens_in) == 6
    assert llm["endpoint"] == "stand-in"
    assert llm["model"] == "stand-in"
    assert llm["browsers"] == 2
    for row in AgentRunInstance.objects.filter(run_id=llm_id):
        assert "modify_" in row.answer
    sent = model.requests[0]
    assert sent["authorization"] == f"Bearer {KEY}"
    assert sent["body"]["max_tokens"] == 512
    prompt = sent["body"]["messages"][1]["content"]
    assert "## The fields to fill" in prompt
    # The results as a user reads them: the API and the pages, with the cost; the key nowhere.
    api_fields = client.get(f"{RUNS}{llm_id}/fields/", {"page_size": 500}).json()["results"]
    assert sum(f["tokens_in"] for f in api_fields) == llm["tokens_in"]
    run_page = page(researcher, f"/agents/runs/{llm_id}/")
    assert f'<strong id="tokens-in">{llm["tokens_in"]}</strong>' in run_page
    assert '<strong id="model-calls">6</strong>' in run_page
    row = AgentRunInstance.objects.filter(run_id=llm_id).first()
    instance_page = page(researcher, f"/agents/runs/{llm_id}/instances/{row.pk}/")
    assert 'id="model-answer"' in instance_page
    assert_key_nowhere(
        run_page,
        instance_page,
        client.get(f"{RUNS}{llm_id}/").content.decode(),
        client.get(RUNS).content.decode(),
        client.get("/api/model-endpoints/").content.decode(),
        str(api_fields),
        (tmp_path / "worker.log").read_text(errors="replace"),
    )
    # Nor in the project's export (with the gold rows), made by the same worker.
    body = {"project": "alpha", "format": "turkingbench", "include_gold": True}
    export = client.post("/api/exports/", body, format="json")
    assert export.status_code == 202, export.json()
    exported = poll_job(client, f"/api/exports/{export.json()['id']}/", ended, 300)[-1]
    assert exported["status"] == "done", exported["error"]
    archive = b"".join(client.get(f"/api/exports/{exported['id']}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        contents = [tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()]
    assert len(contents) > 3
    assert not any(KEY.encode() in data for data in contents)


def test_nonsense_scores_no_better_than_doing_nothing_and_is_no_field_s_error(client, worker, endpoint, model):
    model.default = "nonsense"
    llm_id = start(client, solver="llm", endpoint="stand-in", instances=1, seed=2)
    nothing_id = start(client, solver="do-nothing", instances=1, seed=2)
    llm, nothing = finished(client, llm_id), finished(client, nothing_id)

    assert llm["status"] == "done", llm["error"]
    assert llm["results"]["overall"] <= nothing["results"]["overall"]
    solved = AgentFieldResult.objects.filter(row__run_id=llm_id, skipped="")
    assert solved.exists()
    assert [(f.error, f.calls) for f in solved] == [("", [])] * solved.count()
    assert llm["results"]["errors"] == []
    for row in client.get(f"{RUNS}{llm_id}/instances/").json()["results"]:
        assert row["unapplied"] == [
            {"line": "", "field": None, "reason": "the answer holds no call of the action library"}
        ]


def test_malformed_answers_are_the_errors_of_the_fields_they_name_and_the_run_goes_on(client, worker, alpha):
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")
    answer = "\n".join(
        [
            "```python",
            "self.actions.modify_text('name', 'Ann')",
            "modify_radio('grade', '7')",  # no such value: fails on the page
            "launch_rocket('story', 'x')",  # not in the vocabulary
            "modify_select('colour', __import__('os').system('true'))",  # not a plain value: never evaluated
            "modify_checkbox('tags', 'a'",  # does not parse
            "```",
        ]
    )
    with standin_model(default=f"text:{answer}") as server:
        body = {"project": "alpha", "name": "odd", "url": server.url, "model": "odd", "key": KEY}
        assert client.post("/api/model-endpoints/", body, format="json").status_code == 201
        run_id = start(client, split="all", solver="llm", endpoint="odd", instances=1, browsers=1)
        run = finished(client, run_id)

    assert run["status"] == "done", run["error"]
    errors = {f.name: f for f in AgentFieldResult.objects.filter(row__run_id=run_id)}
    assert errors["name"].error == ""
    assert errors["name"].calls == ["self.actions.modify_text('name', 'Ann')"]
    assert errors["name"].value == "Ann"
    assert "modify_radio('grade', '7') failed: ActionError: no radio button named 'grade'" in errors["grade"].error
    assert "launch_rocket() is not a call of the action library" in errors["story"].error
    assert "the arguments of modify_select() must be plain values" in errors["colour"].error
    assert "not a call (does not parse)" in errors["tags"].error
    assert errors["colour"].value == "NA"  # untouched


def test_429_with_retry_after_a_500_and_a_hang_are_retried_and_the_run_succeeds(client, worker, endpoint, model):
    model.script = ["429", "500", "hang"]
    run_id = start(client, solver="llm", endpoint="stand-in", instances=1, browsers=1, timeout=2, seed=1)
    run = finished(client, run_id)

    assert run["status"] == "done", run["error"]
    assert all(instance["score"] > 0.99 for instance in run["results"]["instances"])
    assert model.counts["429"] == 1
    assert model.counts["500"] == 1
    assert model.counts["hang"] == 1
    assert model.counts["gold"] == 3
    assert run["model_calls"] == 3


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("401", "refused the key (HTTP 401)"),
        ("non-json", "answered something that is not JSON (text/html, "),
        ("unreachable", "cannot reach the endpoint"),
    ],
)
def test_an_endpoint_that_cannot_be_used_fails_the_run_with_the_reason_on_its_page(
    client, worker, endpoint, model, researcher, tmp_path, behaviour, reason
):
    if behaviour == "unreachable":
        with standin_model() as gone:
            url = gone.url
        assert client.patch(f"/api/model-endpoints/{endpoint['id']}/", {"url": url}, format="json").status_code == 200
    else:
        model.default = behaviour
    run_id = start(client, solver="llm", endpoint="stand-in", instances=1, browsers=1)
    run = finished(client, run_id)

    assert run["status"] == "failed"
    assert reason in run["error"]
    run_page = page(researcher, f"/agents/runs/{run_id}/")
    assert reason in run_page.replace("&#x27;", "'")
    assert not AgentRunInstance.objects.filter(run_id=run_id).exists()
    assert_key_nowhere(run["error"], run_page, (tmp_path / "worker.log").read_text(errors="replace"))


def test_a_budget_stops_the_run_cleanly_and_resuming_with_more_never_asks_again(client, worker, endpoint, model):
    run_id = start(client, solver="llm", endpoint="stand-in", instances=2, browsers=1, budget_requests=2, seed=4)
    run = finished(client, run_id)

    assert run["status"] == "done", run["error"]
    assert run["results"]["stopped"].startswith("the budget of 2 model requests is spent: 2 of 6 instances scored")
    assert len(run["results"]["instances"]) == 2
    assert model.answered() == 2
    assert client.post(f"{RUNS}{run_id}/resume/", {"budget_requests": 0}, format="json").status_code == 400
    limits = ModelLimits.for_project(Project.objects.get(name="alpha"))
    limits.max_tokens, limits.max_in_flight = 64, 1  # an admin lowers the limits while the run stands stopped
    limits.save()
    refused = client.post(f"{RUNS}{run_id}/resume/", {"budget_requests": 10}, format="json")
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "max_tokens"
    limits.max_tokens = 4096
    limits.save()

    resumed = client.post(f"{RUNS}{run_id}/resume/", {"budget_requests": 10}, format="json")
    assert resumed.status_code == 202, resumed.json()
    run = finished(client, run_id)

    assert run["status"] == "done", run["error"]
    assert "stopped" not in run["results"]
    assert len(run["results"]["instances"]) == 6
    assert all(instance["score"] > 0.99 for instance in run["results"]["instances"])
    assert model.answered() == 6  # the two pages done before were never asked again
    assert run["model_calls"] == 6
    assert client.post(f"{RUNS}{run_id}/resume/", {}, format="json").status_code == 409


def test_a_run_resumed_after_its_worker_was_killed_answers_from_its_cache(
    client, worker_env, alpha, tmp_path, settings
):
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")
    # The first page's answer makes its browser type two texts key by key (seconds: each just under the length past
    # which text goes in by chunks); the second page's request hangs.
    words = " ".join(f"word{n}" for n in range(135))
    answer = f"text:modify_text('name', '{words}')\nmodify_text('story', '{words}')"
    with standin_model(default=answer) as model:
        model.script = [answer, "hang"]
        body = {"project": "alpha", "name": "slow", "url": model.url, "model": "slow", "key": KEY}
        assert client.post("/api/model-endpoints/", body, format="json").status_code == 201
        with celery_worker(worker_env, tmp_path / "first.log") as first:
            run_id = start(client, split="all", solver="llm", endpoint="slow", browsers=2)
            deadline = time.monotonic() + 120
            # one page answered and its answer cached (committed by the worker: the stand-in having sent it is not
            # enough, the worker may not have stored it yet), the other page's request hanging
            while model.answered() < 2 or not AgentModelAnswer.objects.filter(run_id=run_id).exists():
                assert time.monotonic() < deadline, "the run never asked twice, or never cached the first answer"
                time.sleep(0.02)
            os.killpg(first.pid, signal.SIGKILL)  # the worker dies as a lost machine does
        stored_before = AgentRunInstance.objects.filter(run_id=run_id).count()
        assert AgentModelAnswer.objects.filter(run_id=run_id).count() == 1  # the hanging request never answered
        settings.JOB_STALE_SECONDS = 1  # no heartbeat for a second: reaped as the API reads it
        failed = finished(client, run_id)
        settings.JOB_STALE_SECONDS = 120
        assert failed["status"] == "failed"
        assert "stopped responding" in failed["error"]

        with celery_worker(worker_env, tmp_path / "second.log"):
            assert client.post(f"{RUNS}{run_id}/resume/", {}, format="json").status_code == 202
            run = finished(client, run_id)

    assert run["status"] == "done", run["error"]
    assert [(i["task"], i["instance"]) for i in run["results"]["instances"]] == [("Form task", 0), ("Form task", 1)]
    answered = [r["body"]["messages"][1]["content"] for r in model.requests if r["behaviour"] != "hang"]
    assert len(answered) == len(set(answered)) == 2  # each page answered once: none asked again after the restart
    assert run["cached_calls"] == (1 if stored_before == 0 else 0)
    assert stored_before == 0, "the first page was stored before the worker was killed: typing was too quick"
    assert AgentRun.objects.get(pk=run_id).answers.count() == 2
    name = AgentFieldResult.objects.get(row__run_id=run_id, row__instance=0, name="name")
    assert name.value.startswith("word0 word1")


def test_bad_llm_settings_are_a_400_naming_the_field(client, endpoint, real_tasks):
    cases = [
        ({"solver": "llm"}, "endpoint", "needs a model endpoint"),
        ({"solver": "llm", "endpoint": "nope"}, "endpoint", "has no model endpoint 'nope'"),
        ({"solver": "llm", "endpoint": "stand-in", "temperature": 2.5}, "temperature", "less than or equal to 2"),
        ({"solver": "llm", "endpoint": "stand-in", "temperature": -1}, "temperature", "greater than or equal to 0"),
        ({"solver": "llm", "endpoint": "stand-in", "max_tokens": 0}, "max_tokens", "greater than or equal to 1"),
        ({"solver": "llm", "endpoint": "stand-in", "max_tokens": 10**7}, "max_tokens", "less than or equal to"),
        ({"solver": "llm", "endpoint": "stand-in", "in_flight": 0}, "in_flight", "greater than or equal to 1"),
        ({"solver": "llm", "endpoint": "stand-in", "timeout": 0}, "timeout", "greater than or equal to 0.1"),
        ({"solver": "llm", "endpoint": "stand-in", "prompt_template": "no fields"}, "prompt_template", "{fields}"),
        ({"solver": "llm", "endpoint": "stand-in", "budget_requests": 0}, "budget_requests", "greater than or equal"),
        ({"solver": "llm", "endpoint": "stand-in", "browsers": 0}, "browsers", "greater than or equal to 1"),
        ({"solver": "oracle", "endpoint": "stand-in"}, "endpoint", "only the llm solver takes model settings"),
    ]
    for body, field, message in cases:
        response = client.post(RUNS, {"project": "alpha", **body}, format="json")
        assert response.status_code == 400, (body, response.json())
        assert field in [error["field"] for error in response.json()["errors"]], (body, response.json())
        assert message in response.json()["detail"], (body, response.json())
    assert not AgentRun.objects.exists()


def test_run_agent_runs_the_llm_solver_in_process_on_two_browsers(alpha, researcher, tmp_path):
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")
    with standin_model(default="text:modify_text('name', 'Ann')\nmodify_select('colour', 'red')") as model:
        ModelEndpoint.objects.create(project=alpha, owner=researcher, name="local", url=model.url, model="m", key=KEY)
        call_command(
            "run_agent", project="alpha", split="all", solver="llm", endpoint="local", browsers=2, max_tokens=64,
            out=tmp_path, user="researcher", stdout=None,
        )  # fmt: skip
    run = AgentRun.objects.get()
    assert run.status == "done"
    assert (run.browsers, run.max_tokens, run.model_calls) == (2, 64, 2)
    assert model.answered() == 2
    assert {r["body"]["max_tokens"] for r in model.requests} == {64}
    fields = {(f.row.instance, f.name): f for f in AgentFieldResult.objects.filter(row__run=run)}
    assert fields[(0, "name")].value == "Ann"
    assert fields[(0, "name")].score == 1.0
    assert fields[(1, "colour")].value == "red"
    with pytest.raises(CommandError, match="endpoint: project 'alpha' has no model endpoint 'nope'"):
        call_command(
            "run_agent", project="alpha", split="all", solver="llm", endpoint="nope", out=tmp_path, user="researcher"
        )
