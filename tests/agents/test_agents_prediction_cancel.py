"""Cancelling a prediction run stops its model calls: an admin starts a WebLINX run on an endpoint that never
answers (a loopback server that holds every request), cancels it while four requests hang; the job ends at once,
without waiting on them, no request starts after the cancel, and the ones in flight run out their timeout once and
are never tried again."""

import json
import threading
import time

import pytest
from django.db import connection

from annotation.actions import queue
from annotation.models import JobStatus, PredictionRun, Role
from tests.support.actors import make_user
from tests.support.corpus import ingest_corpus
from tests.support.hanging import hanging_server
from tests.support.waits import wait_until
from workers.agents.predict_runs import run_prediction
from workers.exports.dataset import export_demos, storage_blobs
from workers.exports.exporters import get_exporter

pytestmark = pytest.mark.django_db(transaction=True)  # the job runs in its own thread, on its own connection

RUNS = "/api/prediction-runs/"
TIMEOUT = 10  # seconds per request: the four are all sent (and the cancel made) long before the first runs out
IN_FLIGHT = 4


@pytest.fixture
def queued(monkeypatch):
    """The prediction runs the API enqueues, kept here (other work is dropped): the job is run by this test, in a
    thread, as the worker would."""
    sent = []
    monkeypatch.setattr(queue, "send", lambda task, *args: sent.append(args[0]) if task == queue.PREDICTION else None)
    return sent


def largest_weblinx_split(project, tmp_path) -> str:
    out = tmp_path / "weblinx"
    get_exporter("weblinx").export(export_demos(project, "weblinx"), out, storage_blobs())
    sizes = {name: len(turns) for name, turns in json.loads((out / "splits.json").read_text()).items()}
    return max(sizes, key=sizes.get)


def prediction_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("predict_")]


def job_thread(run_id: int) -> threading.Thread:
    def work():
        try:
            run_prediction(run_id)
        finally:
            connection.close()

    return threading.Thread(target=work, name=f"prediction-run-{run_id}", daemon=True)


def test_a_cancel_stops_the_requests_and_the_job_at_once(api_for, queued, settings, tmp_path):
    settings.MODEL_ENDPOINTS_ALLOW_PRIVATE = True
    project = ingest_corpus(project="corpus", demos=3, turns=24, elements=20, seed=5)[0].project
    admin = api_for(make_user("ada", project, Role.ADMIN))
    split = largest_weblinx_split(project, tmp_path)
    with hanging_server() as server:
        body = {"project": "corpus", "name": "hangs", "url": server.url, "model": "m", "key": "k-12345678"}
        assert admin.post("/api/model-endpoints/", body, format="json").status_code == 201
        body = {"project": "corpus", "format": "weblinx", "split": split, "endpoint": "hangs", "timeout": TIMEOUT}
        response = admin.post(RUNS, {**body, "in_flight": IN_FLIGHT}, format="json")
        assert response.status_code == 202, response.content
        run_id = response.json()["id"]
        assert queued == [run_id]
        job = job_thread(run_id)
        job.start()
        wait_until(lambda: server.counts()[0] >= IN_FLIGHT, 60, 0.05, "the requests in flight")
        assert admin.post(f"{RUNS}{run_id}/cancel/").json()["status"] == "cancelled"
        cancelled = time.monotonic()

        # The job ends within a heartbeat or so, not waiting on the requests that hang (they have TIMEOUT s each).
        job.join(TIMEOUT)
        assert not job.is_alive(), "the job waited on the hanging requests"
        assert time.monotonic() - cancelled < TIMEOUT
        assert server.counts()[0] == IN_FLIGHT  # nothing new was asked
        # Each request in flight runs out its timeout once; its thread then ends without another try (a retry would
        # hang another TIMEOUT s, past this wait).
        wait_until(lambda: not prediction_threads(), TIMEOUT * 1.5, 0.05, "the request threads ended")
        wait_until(lambda: server.counts()[1] == server.counts()[0], 10, 0.05, "every request's connection closed")
        assert server.counts() == (IN_FLIGHT, IN_FLIGHT)
    run = PredictionRun.objects.get(pk=run_id)
    assert run.status == JobStatus.CANCELLED
    assert run.predictions == []
