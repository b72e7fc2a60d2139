"""Agent runs always end, on a real Celery worker (or in-process) with real headless Chromium and the stand-in model
server: a model's 100 KB answer goes into its field, a 5 MB one is that field's error; an instance stuck in a browser
command is stopped at its time limit, said why, and the run goes on; a cancel while a command is stuck ends the
browsers and frees the worker; the heartbeat says where the run is."""

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from agents.browser import process_tree
from annotation.models import AgentFieldResult, AgentRun, AgentRunInstance, JobStatus, ModelLimits
from devtools.processes import ROOT, database_url
from devtools.standin_model import standin_model
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text
from tests.support.forms_data import make_batch
from tests.support.jobs import job_ended as ended
from tests.support.jobs import poll_job
from tests.support.processes import default_signals
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes, pytest.mark.django_db(transaction=True)]
RUNS = "/api/agent-runs/"
HANGS = "python:tests.support.agent_solvers:Hangs"


@pytest.fixture(autouse=True)
def private_endpoints(settings):
    settings.MODEL_ENDPOINTS_ALLOW_PRIVATE = True
    settings.AGENT_SOLVER_MODULES = ["agents", "tests.support.agent_solvers"]


@pytest.fixture
def worker_env(worker_env):
    return {
        **worker_env,
        "MODEL_ENDPOINTS_ALLOW_PRIVATE": "1",
        "AGENT_SOLVER_MODULES": "agents,tests.support.agent_solvers",
    }


@pytest.fixture
def client(researcher, api_for):
    return api_for(researcher)


@pytest.fixture
def form_batch(alpha):
    return make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")


def start(client, **body):
    response = client.post(RUNS, {"project": "alpha", "split": "all", **body}, format="json")
    assert response.status_code == 202, response.json()
    return response.json()["id"]


def finished(client, run_id, timeout=240):
    return poll_job(client, f"{RUNS}{run_id}/", ended, timeout)[-1]


def chromium_under(pid: int) -> list[str]:
    """The browser processes (ChromeDriver, Chromium) under ``pid``."""
    names = []
    for child in process_tree(pid)[1:]:
        try:
            names.append(Path(f"/proc/{child}/comm").read_text().strip())
        except OSError:
            continue
    return [name for name in names if "chrom" in name]


def test_a_100_kb_answer_goes_into_its_field_and_a_5_mb_one_is_that_field_s_error(client, worker, alpha, form_batch):
    limits = ModelLimits.for_project(alpha)
    limits.max_reply_bytes = 16 * 1024 * 1024  # the reply is read; the field refuses the text
    limits.save()
    long_text = ("A long answer, line after line.\n" * 4000)[:102_400]
    huge = "x" * (5 * 1024 * 1024)
    answers = [f"text:modify_text('story', {long_text!r})\nmodify_select('colour', 'red')"]
    answers.append(f"text:modify_select('colour', 'red')\nmodify_text('story', {huge!r})")
    with standin_model(default=answers[0]) as model:
        model.script = list(answers)
        body = {"project": "alpha", "name": "long", "url": model.url, "model": "long", "key": "k"}
        assert client.post("/api/model-endpoints/", body, format="json").status_code == 201
        run = finished(client, start(client, solver="llm", endpoint="long", browsers=1))

    assert run["status"] == "done", run["error"]
    fields = {(f.row.instance, f.name): f for f in AgentFieldResult.objects.filter(row__run_id=run["id"])}
    assert fields[(0, "story")].value == long_text
    assert fields[(0, "story")].error == ""
    # the client keeps MAX_ANSWER_CHARS of an answer: the 5 MB call is cut, and so the story's error (a value at
    # most AGENT_TEXT_MAX_CHARS long gets through whole, test_agents_bounded.py refuses a longer one)
    assert fields[(1, "story")].error
    assert len(fields[(1, "story")].error) < 1000  # the call is cut in the error, not stored whole
    assert fields[(1, "story")].value == ""
    assert fields[(0, "colour")].value == fields[(1, "colour")].value == "red"  # the instance went on
    assert {i["instance"] for i in run["results"]["instances"]} == {0, 1}


def test_an_instance_stuck_in_a_command_is_stopped_at_its_limit_and_run_agent_says_why(
    alpha, form_batch, researcher, settings, tmp_path, capsys
):
    # 20 s: a new browser's whole instance fits with room under two CPU hogs (5 s did not: instance 1 ran out too)
    settings.AGENT_INSTANCE_SECONDS = 20
    call_command("run_agent", project="alpha", split="all", solver=HANGS, browsers=1, out=tmp_path, user="researcher")

    run = AgentRun.objects.get()
    assert run.status == JobStatus.DONE
    stopped = AgentRunInstance.objects.get(run=run, instance=0)
    why = "the instance ran past its time limit of 20 s (in field 'story'); its browser was ended"
    assert stopped.ended == why
    assert stopped.score == 0.0
    assert set(stopped.fields.values_list("skipped", flat=True)) == {why}
    assert AgentRunInstance.objects.get(run=run, instance=1).score > 0.99  # on a new browser
    ended = {"task": "Form task", "instance": 0, "score": 0.0, "ceiling": None, "ended": why}  # no ceiling: not read
    assert ended in run.results["instances"]
    out = capsys.readouterr().out
    assert f"Form task #0 ended early: {why}" in out
    browser = Client()
    browser.force_login(researcher)
    assert why in browser.get(f"/agents/runs/{run.pk}/").content.decode().replace("&#x27;", "'")


def test_cancelling_a_run_stuck_in_a_browser_command_ends_its_browsers_and_frees_the_worker(
    client, worker, form_batch, researcher
):
    run_id = start(client, solver=HANGS, browsers=1)

    def stuck(body):
        browsers = (body.get("activity") or {}).get("browsers") or []
        return any(b["field"] == "story" and b["seconds"] >= 1 for b in browsers)

    seen = poll_job(client, f"{RUNS}{run_id}/", stuck, 120)[-1]
    assert seen["activity"]["done"] == 0
    assert seen["activity"]["total"] == 2
    assert seen["activity"]["browsers"][0]["task"] == "Form task"
    assert seen["activity"]["browsers"][0]["instance"] == 0
    browser = Client()
    browser.force_login(researcher)
    page = browser.get(f"/agents/runs/{run_id}/").content.decode()
    assert "0 of 2 instances done · now Form task #0, field <code>story</code>" in page
    assert chromium_under(worker.pid)

    assert client.post(f"{RUNS}{run_id}/cancel/").json()["status"] == "cancelled"
    # The solo worker runs one task at a time: the next run finishing means the stuck one let go of it.
    after = start(client, solver="do-nothing", instances=1)
    assert finished(client, after)["status"] == "done"

    run = AgentRun.objects.get(pk=run_id)
    assert run.status == JobStatus.CANCELLED
    assert not AgentRunInstance.objects.filter(run_id=run_id).exists()
    deadline = time.monotonic() + 30
    while chromium_under(worker.pid):  # the do-nothing run's browser quits as its run ends
        assert time.monotonic() < deadline, chromium_under(worker.pid)
        time.sleep(0.1)


def test_ctrl_c_cancels_a_run_agent_stuck_in_a_browser_command_and_says_so(alpha, form_batch, researcher, tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "VAR_DIR": str(tmp_path),
        "SECRET_KEY": secrets.token_urlsafe(48),
        "DATABASE_URL": database_url(connection.settings_dict),
    }
    command = [sys.executable, "manage.py", "run_agent", "--project", "alpha", "--split", "all", "--solver", HANGS]
    command += ["--browsers", "1", "--out", str(tmp_path / "out"), "--user", "researcher"]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_signals,
    )  # fmt: skip
    try:

        def stuck():
            assert process.poll() is None, process.communicate()
            run = AgentRun.objects.filter(status=JobStatus.RUNNING).first()
            browsers = run.activity.get("browsers") if run else None
            return bool(browsers) and browsers[0]["field"] == "story" and chromium_under(process.pid)

        wait_until(stuck, 120, message="run_agent stuck in its first field")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode != 0
    run = AgentRun.objects.get()
    assert f"agent run {run.pk} cancelled: interrupted (Ctrl-C)" in err
    assert run.status == JobStatus.CANCELLED
    assert not (tmp_path / "out" / "scores.json").exists()


def test_a_cancel_while_the_model_hangs_asks_it_no_more(client, worker, alpha, form_batch):
    with standin_model(default="hang") as model:
        body = {"project": "alpha", "name": "hangs", "url": model.url, "model": "m", "key": "k"}
        assert client.post("/api/model-endpoints/", body, format="json").status_code == 201
        run_id = start(client, solver="llm", endpoint="hangs", browsers=1, timeout=3)
        wait_until(lambda: model.answered() >= 1, 120, 0.05, "the model asked")
        assert client.post(f"{RUNS}{run_id}/cancel/").json()["status"] == "cancelled"
        # The solo worker runs one task at a time: the next run finishing means the cancelled one let go of it.
        assert finished(client, start(client, solver="do-nothing", instances=1))["status"] == "done"

        assert model.counts["hang"] == 1  # the request in flight ran out its timeout; no try after it
    assert AgentRun.objects.get(pk=run_id).status == JobStatus.CANCELLED
