"""``manage.py run_agent`` interrupted while its llm solver waits on a model that never answers (a loopback server
holding every request, ``timeout`` 300 s): Ctrl-C or SIGTERM ends it within seconds, whatever the timeout, with the
run cancelled and the reason stored, its ChromeDriver and Chromium ended, no traceback and no other request; a run
that had already ended when the interrupt is handled (e.g. failed as stale) is said plainly."""

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from agents.browser import process_tree
from annotation.models import AgentRun, JobStatus, ModelEndpoint
from devtools.processes import ROOT, database_url
from tests.support.agents_data import FORM, FORM_HEADER, FORM_ROWS, csv_text
from tests.support.forms_data import make_batch
from tests.support.hanging import hanging_server
from tests.support.processes import default_signals
from tests.support.waits import wait_until
from workers.management.commands.run_agent import INTERRUPTED, TERMINATED, cancelled

pytestmark = [pytest.mark.browser, pytest.mark.processes, pytest.mark.django_db(transaction=True)]
QUICK = 30  # seconds from the signal to the exit: far below the request's timeout (300 s)


def browser_processes(pid: int) -> list[int]:
    """The ChromeDriver and Chromium processes under ``pid``."""
    found = []
    for child in process_tree(pid)[1:]:
        try:
            if "chrom" in Path(f"/proc/{child}/comm").read_text():
                found.append(child)
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.parametrize(("number", "why"), [(signal.SIGINT, INTERRUPTED), (signal.SIGTERM, TERMINATED)])
def test_an_interrupted_run_agent_stops_at_once_with_its_run_cancelled_and_its_browser_ended(
    alpha, researcher, api_for, tmp_path, number, why
):
    make_batch(alpha, template=FORM, csv_text=csv_text(FORM_HEADER, FORM_ROWS), name="Form task")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "VAR_DIR": str(tmp_path),
        "SECRET_KEY": secrets.token_urlsafe(48),
        "DATABASE_URL": database_url(connection.settings_dict),
        "MODEL_ENDPOINTS_ALLOW_PRIVATE": "1",
    }
    command = [sys.executable, "manage.py", "run_agent", "--project", "alpha", "--split", "all", "--instances", "1"]
    command += ["--solver", "llm", "--endpoint", "hangs", "--timeout", "300", "--browsers", "1"]
    command += ["--out", str(tmp_path / "out"), "--user", "researcher"]
    with hanging_server() as model:
        ModelEndpoint.objects.create(project=alpha, owner=researcher, name="hangs", url=model.url, model="m", key="k")
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=default_signals,
        )  # fmt: skip
        try:

            def asked():
                assert process.poll() is None, process.communicate()
                return model.counts()[0] >= 1 and browser_processes(process.pid)

            browsers = wait_until(asked, 120, 0.1, "run_agent waiting on the model")
            process.send_signal(number)
            sent = time.monotonic()
            _, err = process.communicate(timeout=QUICK * 2)
            took = time.monotonic() - sent
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        wait_until(lambda: model.counts()[1] == model.counts()[0], 10, 0.05, "the request's connection closed")
        assert model.counts() == (1, 1)  # no other request, no retry

    assert took < QUICK, err
    assert process.returncode != 0
    assert "Traceback" not in err, err
    run = AgentRun.objects.get()
    assert f"agent run {run.pk} cancelled: {why}" in err
    body = api_for(researcher).get(f"/api/agent-runs/{run.pk}/").json()
    assert (body["status"], body["error"]) == ("cancelled", why)
    wait_until(lambda: not [pid for pid in browsers if alive(pid)], 10, 0.05, "the browser processes ended")
    assert not (tmp_path / "out" / "scores.json").exists()


def test_an_interrupt_after_the_run_ended_is_said_plainly(alpha, researcher):
    run = AgentRun.objects.create(project=alpha, owner=researcher, split="all", solver="llm")
    stale = "the worker stopped responding (last heartbeat …); it was probably killed. Nothing was published"
    AgentRun.objects.filter(pk=run.pk).update(status=JobStatus.FAILED, error=stale)
    said = cancelled(run, INTERRUPTED)
    assert said == f"agent run {run.pk} interrupted (Ctrl-C), but it had already ended (failed: {stale})"
    run.refresh_from_db()
    assert (run.status, run.error) == (JobStatus.FAILED, stale)
    running = AgentRun.objects.create(project=alpha, owner=researcher, split="all", solver="llm", status="running")
    assert cancelled(running, TERMINATED) == f"agent run {running.pk} cancelled: terminated (SIGTERM)"
    running.refresh_from_db()
    assert (running.status, running.error) == (JobStatus.CANCELLED, TERMINATED)
